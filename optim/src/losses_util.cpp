// Argument checks, per-example means and reductions shared by the loss functions.
#include "losses_util.hpp"

namespace glia::losses::detail {

DType float_dtype(const Expr& y_pred) {
  return is_float(y_pred.dtype()) ? y_pred.dtype() : DType::f32;
}

void check_operands(std::string_view loss, const Expr& y_true, const Expr& y_pred, int min_rank) {
  check(y_true.defined() && y_pred.defined(), loss, ": y_true and y_pred must be defined Exprs");
  check(y_true.graph() == y_pred.graph(), loss, ": y_true and y_pred belong to different traces");
  check(y_pred.rank() >= min_rank, loss, ": y_pred ", y_pred.type(), " needs ",
        min_rank == 1 ? "a batch axis (rank >= 1)" : "a batch and a class axis (rank >= 2)");
}

void check_same_shape(std::string_view loss, const Expr& y_true, const Expr& y_pred, int min_rank) {
  check_operands(loss, y_true, y_pred, min_rank);
  check(y_true.shape() == y_pred.shape(), loss, ": y_true ", y_true.type(), " and y_pred ",
        y_pred.type(), " must have the same shape");
}

Expr as(const Expr& x, DType dtype) { return x.dtype() == dtype ? x : cast(x, dtype); }

Expr per_example(const Expr& values) {
  if (values.rank() <= 1) return values;
  Ints axes;
  for (int a = 1; a < values.rank(); ++a) axes.push_back(a);
  return mean(values, axes);
}

Expr reduce(const Expr& per_example, Reduction reduction) {
  switch (reduction) {
    case Reduction::none:
      return per_example;
    case Reduction::sum:
      return sum(per_example);
    case Reduction::mean:
      break;
  }
  return mean(per_example);
}

Expr softplus(const Expr& x) { return max(x, 0.0) + log1p(exp(neg(abs(x)))); }

std::pair<Expr, Expr> float_operands(std::string_view loss, const Expr& y_true, const Expr& y_pred,
                                     int min_rank) {
  check_same_shape(loss, y_true, y_pred, min_rank);
  const DType ft = float_dtype(y_pred);
  return {as(y_true, ft), as(y_pred, ft)};
}

}  // namespace glia::losses::detail
