// scaled_dot_product_attention: a composite of dot_general, select and a softmax guarded
// for rows with nothing to attend to. The multi_head_attention layer builds on it
// (multi_head_attention.cpp).
#include "glia/layers/attention.hpp"

#include <cmath>
#include <limits>

#include "glia/autograd/grad.hpp"

namespace glia {

namespace {

constexpr const char* kSdpa = "scaled_dot_product_attention";
constexpr double kInf = std::numeric_limits<double>::infinity();

Shape leading_axes(const Expr& x) {
  return Shape(Ints(x.shape().dims().begin(), x.shape().dims().end() - 2));
}

// x [..., L, E] with its leading axes broadcast to `batch`.
Expr with_batch(const Expr& x, const Shape& batch) {
  Ints dims = batch.dims();
  dims.push_back(x.dim(-2));
  dims.push_back(x.dim(-1));
  return broadcast_to(x, Shape(dims));
}

Ints first_axes(int n) {
  Ints axes;
  for (int i = 0; i < n; ++i) axes.push_back(i);
  return axes;
}

// A mask or bias must broadcast to the scores without widening them.
void check_fits(const Expr& x, const Shape& scores, const char* what, const std::string& operands) {
  bool fits = x.rank() <= scores.rank();
  for (int i = 1; fits && i <= x.rank(); ++i) fits = x.dim(-i) == 1 || x.dim(-i) == scores.dim(-i);
  check(fits, kSdpa, ": the ", what, " ", x.type(),
        " does not broadcast to the scores [..., Lq, Lk] ", scores.to_string(), " (", operands,
        ")");
}

// softmax over the last axis, except that a row whose scores are all -inf (nothing to
// attend to) gives weights 0 instead of 0 / 0. The shift by the row's maximum is a
// constant to autograd (softmax does not depend on it).
Expr guarded_softmax(const Expr& s) {
  Expr m = stop_grad(reduce_max(s, {-1}, true));
  Expr e = exp(s - select(equal(m, -kInf), 0.0, m));
  Expr total = sum(e, {-1}, true);
  return e / select(equal(total, 0.0), 1.0, total);
}

}  // namespace

Expr scaled_dot_product_attention(const Expr& q, const Expr& k, const Expr& v,
                                  const AttentionOptions& o) {
  check(q.defined() && k.defined() && v.defined(), kSdpa,
        ": query, key and value must be defined Exprs");
  const std::string operands = cat("query ", q.type().to_string(), ", key ", k.type().to_string(),
                                   ", value ", v.type().to_string());
  check(q.rank() >= 2 && k.rank() >= 2 && v.rank() >= 2, kSdpa,
        ": expected query [..., Lq, E], key [..., Lk, E] and value [..., Lk, Ev] (rank >= 2), got ",
        operands);
  check(is_float(q.dtype()) && k.dtype() == q.dtype() && v.dtype() == q.dtype(), kSdpa,
        ": expected query, key and value of one floating-point dtype, got ", operands);
  check(q.dim(-1) == k.dim(-1), kSdpa, ": query and key must have the same last axis (E), got ",
        operands);
  check(k.dim(-2) == v.dim(-2), kSdpa,
        ": key and value must have the same length (axis -2, Lk), got ", operands);
  check(o.dropout_rate >= 0 && o.dropout_rate < 1, kSdpa, ": dropout_rate must be in [0, 1), got ",
        o.dropout_rate);
  Shape batch;
  try {
    batch = broadcast_shapes(broadcast_shapes(leading_axes(q), leading_axes(k), kSdpa),
                             leading_axes(v), kSdpa);
  } catch (const Error& e) {
    throw Error(cat(e.what(), " (the leading axes of ", operands, ")"));
  }
  const int nb = batch.rank();
  const Ints batch_axes = first_axes(nb);
  const double scale = o.scale.value_or(1.0 / std::sqrt(static_cast<double>(q.dim(-1))));
  // [..., Lq, E] . [..., Lk, E] over E -> [..., Lq, Lk]
  Expr s = dot_general(with_batch(q, batch), with_batch(k, batch), {nb + 1}, {nb + 1}, batch_axes,
                       batch_axes) *
           scale;
  const Shape scores = s.shape();
  bool guarded = false;
  if (o.bias.defined()) {
    check(is_float(o.bias.dtype()), kSdpa, ": the bias must be floating-point, got ", o.bias.type(),
          " (a bool mask goes in `mask`)");
    check_fits(o.bias, scores, "bias", operands);
    s = s + cast(o.bias, s.dtype());
    guarded = true;  // it may hold -inf
  }
  Expr mask;
  if (o.mask.defined()) {
    check(o.mask.dtype() == DType::boolean, kSdpa, ": the mask must be bool (true = attend), got ",
          o.mask.type(), " (an additive float mask goes in `bias`)");
    check_fits(o.mask, scores, "mask", operands);
    mask = o.mask;
  }
  if (o.causal) {
    Shape square{scores.dim(-2), scores.dim(-1)};
    Expr causal = less_equal(iota(square, 1), iota(square, 0));  // key j <= query i
    mask = mask.defined() ? logical_and(mask, causal) : causal;
  }
  if (mask.defined()) {
    s = select(mask, s, -kInf);
    guarded = true;
  }
  Expr w = guarded ? guarded_softmax(s) : softmax(s, -1);
  if (o.dropout_rate > 0) {
    check(o.key.defined() && o.key.dtype() == DType::u32 && o.key.shape() == Shape{2}, kSdpa,
          ": dropout needs a u32[2] random key, got ",
          o.key.defined() ? o.key.type().to_string() : "none");
    Expr keep = random::bernoulli(o.key, 1.0 - o.dropout_rate, w.shape());
    w = select(keep, w * (1.0 / (1.0 - o.dropout_rate)), 0.0);
  }
  // [..., Lq, Lk] . [..., Lk, Ev] over Lk -> [..., Lq, Ev]
  return dot_general(w, with_batch(v, batch), {nb + 1}, {nb}, batch_axes, batch_axes);
}

}  // namespace glia
