// The regression losses: mean absolute and squared error, log-cosh, Huber, Poisson and
// the cosine similarity. Each is an element-wise (or, for the cosine, per-row) value
// averaged over the non-batch axes, then reduced over the batch.
#include <cmath>
#include <numbers>

#include "losses_util.hpp"

namespace glia::losses {

namespace {

constexpr double kPoissonEpsilon = 1e-7;

}  // namespace

Expr impl::mean_absolute_error(const Expr& y_true, const Expr& y_pred, const LossOptions& o) {
  auto [y, p] = detail::float_operands("mean_absolute_error", y_true, y_pred);
  return detail::reduce(detail::per_example(abs(y - p)), o.reduction);
}

Expr impl::mean_squared_error(const Expr& y_true, const Expr& y_pred, const LossOptions& o) {
  auto [y, p] = detail::float_operands("mean_squared_error", y_true, y_pred);
  return detail::reduce(detail::per_example(square(y - p)), o.reduction);
}

// log(cosh(d)) = d + softplus(-2d) - log 2: cosh(d) itself overflows from |d| ~ 89 in f32.
Expr impl::log_cosh(const Expr& y_true, const Expr& y_pred, const LossOptions& o) {
  auto [y, p] = detail::float_operands("log_cosh", y_true, y_pred);
  Expr d = p - y;
  Expr values = d + detail::softplus(d * -2.0) - std::numbers::ln2;
  return detail::reduce(detail::per_example(values), o.reduction);
}

// With q = min(|d|, delta): 0.5 q^2 + delta (|d| - q), which is 0.5 d^2 inside the delta
// band and delta (|d| - delta / 2) outside, without a branch.
Expr impl::huber(const Expr& y_true, const Expr& y_pred, const HuberOptions& o) {
  constexpr std::string_view kName = "huber";
  check(o.delta > 0 && std::isfinite(o.delta), kName, ": delta must be finite and > 0, got ",
        o.delta);
  auto [y, p] = detail::float_operands(kName, y_true, y_pred);
  Expr a = abs(y - p);
  Expr q = min(a, o.delta);
  Expr values = square(q) * 0.5 + (a - q) * o.delta;
  return detail::reduce(detail::per_example(values), o.reduction);
}

// The Poisson negative log-likelihood without its log(y!) term: rate - y log(rate + eps)
// (Axon's eps = 1e-7), or from log-rates x: exp(x) - y x.
Expr impl::poisson(const Expr& y_true, const Expr& y_pred, const PoissonOptions& o) {
  auto [y, p] = detail::float_operands("poisson", y_true, y_pred);
  Expr values = o.from_logits ? exp(p) - y * p : p - y * log(p + kPoissonEpsilon);
  return detail::reduce(detail::per_example(values), o.reduction);
}

// Axon's sign: the similarity itself, sum(y p) / max(|y| |p|, eps) along the last axis (a
// value to maximise; Keras' loss is its negative). The product of the norms is taken as
// sqrt(max(|y|^2 |p|^2, eps^2)), so a zero row gives 0 and a finite gradient.
Expr impl::cosine_similarity(const Expr& y_true, const Expr& y_pred, const CosineOptions& o) {
  constexpr std::string_view kName = "cosine_similarity";
  check(o.epsilon > 0 && std::isfinite(o.epsilon), kName, ": epsilon must be finite and > 0, got ",
        o.epsilon);
  auto [y, p] = detail::float_operands(kName, y_true, y_pred, 2);
  Expr dot = sum(y * p, {-1});
  Expr norms = sqrt(max(sum(square(y), {-1}) * sum(square(p), {-1}), o.epsilon * o.epsilon));
  return detail::reduce(detail::per_example(dot / norms), o.reduction);
}

}  // namespace glia::losses
