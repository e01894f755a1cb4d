// Gradient rules of the reductions: the cotangent is broadcast back over the reduced
// axes, weighted by each element's share of the result.
#include "glia/core/attrs.hpp"
#include "vjp_rules.hpp"

namespace glia::detail {

namespace {

using Cts = std::vector<Expr>;

// A reduction result (or its cotangent) broadcast back to the operand's shape.
Expr spread(const Expr& v, const VjpArgs& a) {
  const auto& r = std::get<ReduceAttrs>(a.node.attrs);
  const Shape& x = a.inputs[0].shape();
  return broadcast_to(reshape(v, kept_dims(x, r.axes)), x);
}

Cts sum_vjp(const VjpArgs& a) { return {spread(a.cotangent, a)}; }

// Ties share the gradient evenly, as in JAX.
Cts extremum_vjp(const VjpArgs& a) {
  const Expr& x = a.inputs[0];
  const auto& r = std::get<ReduceAttrs>(a.node.attrs);
  Expr mask = cast(equal(x, spread(a.output, a)), x.dtype());
  Expr count = sum(mask, r.axes, true);
  return {spread(a.cotangent, a) * mask / broadcast_to(count, x.shape())};
}

// d(prod)/dx_i is the product of the other elements: y / x_i where x_i != 0; with
// exactly one zero in the group, the product of the rest at that zero; else 0.
Cts prod_vjp(const VjpArgs& a) {
  const Expr& x = a.inputs[0];
  const auto& r = std::get<ReduceAttrs>(a.node.attrs);
  Expr is_zero = equal(x, 0.0);
  Expr zeros_in_group = broadcast_to(sum(cast(is_zero, x.dtype()), r.axes, true), x.shape());
  Expr others_nonzero = broadcast_to(product(select(is_zero, 1.0, x), r.axes, true), x.shape());
  Expr safe_x = select(is_zero, 1.0, x);
  Expr others = select(is_zero, select(equal(zeros_in_group, 1.0), others_nonzero, 0.0),
                       select(greater(zeros_in_group, 0.0), 0.0, spread(a.output, a) / safe_x));
  return {spread(a.cotangent, a) * others};
}

}  // namespace

void add_reduction_vjps(VjpTable& t) {
  set_vjp(t, Op::reduce_sum, &sum_vjp);
  set_vjp(t, Op::reduce_max, &extremum_vjp);
  set_vjp(t, Op::reduce_min, &extremum_vjp);
  set_vjp(t, Op::reduce_prod, &prod_vjp);
}

}  // namespace glia::detail
