// The margin losses: hinge, categorical hinge, margin ranking and soft margin. Labels
// are +-1 (hinge, margin ranking, soft margin) or one-hot rows (categorical hinge).
#include "losses_util.hpp"

namespace glia::losses {

namespace {

using detail::as;

}  // namespace

// max(0, 1 + max_{c != true} p_c - p_true) per row (Axon: the "negative" term is the
// largest of (1 - y) * p, which treats every non-true class's score as at least 0).
Expr impl::categorical_hinge(const Expr& y_true, const Expr& y_pred, const LossOptions& o) {
  auto [y, p] = detail::float_operands("categorical_hinge", y_true, y_pred, 2);
  Expr positive = sum(y * p, {-1});
  Expr negative = reduce_max((1.0 - y) * p, {-1});
  return detail::reduce(detail::per_example(max(negative - positive + 1.0, 0.0)), o.reduction);
}

Expr impl::hinge(const Expr& y_true, const Expr& y_pred, const LossOptions& o) {
  auto [y, p] = detail::float_operands("hinge", y_true, y_pred);
  return detail::reduce(detail::per_example(max(1.0 - y * p, 0.0)), o.reduction);
}

Expr impl::margin_ranking(const Expr& y_true, const Expr& y_pred, const MarginOptions& o) {
  constexpr std::string_view kName = "margin_ranking";
  detail::check_operands(kName, y_true, y_pred, 1);
  const Shape& s = y_pred.shape();
  Shape pair_shape(Ints(s.dims().begin() + 1, s.dims().end()));
  check(y_pred.dim(0) == 2 && y_true.shape() == pair_shape, kName, ": y_pred ", y_pred.type(),
        " must stack the two inputs x1, x2 on a leading axis of 2,", " each shaped like y_true ",
        y_true.type());
  check(y_true.rank() >= 1, kName, ": y_true ", y_true.type(), " needs a batch axis (rank >= 1)");
  const DType ft = detail::float_dtype(y_pred);
  Expr y = as(y_true, ft), p = as(y_pred, ft);
  Expr x1 = squeeze(slice_axis(p, 0, 1, 0), {0}), x2 = squeeze(slice_axis(p, 1, 1, 0), {0});
  Expr values = max(neg(y) * (x1 - x2) + o.margin, 0.0);
  return detail::reduce(detail::per_example(values), o.reduction);
}

// log(1 + exp(-y x)) as softplus(-y x): finite for any x.
Expr impl::soft_margin(const Expr& y_true, const Expr& y_pred, const LossOptions& o) {
  auto [y, p] = detail::float_operands("soft_margin", y_true, y_pred);
  return detail::reduce(detail::per_example(detail::softplus(neg(y * p))), o.reduction);
}

}  // namespace glia::losses
