// The gradient rule table: assembles the rules of each group, and states why the
// ops without a rule have none.
#include "vjp_rules.hpp"

namespace glia {

namespace detail {

Expr zeros_like(const Expr& x) {
  TraceScope scope(*x.graph());
  return zeros(x.shape(), x.dtype());
}

Ints kept_dims(const Shape& x, const Ints& axes) {
  Ints dims = x.dims();
  for (std::int64_t a : axes) dims[static_cast<std::size_t>(a)] = 1;
  return dims;
}

}  // namespace detail

namespace {

detail::VjpTable make_table() {
  using detail::set_no_vjp;
  detail::VjpTable t{};
  detail::add_elementwise_vjps(t);
  detail::add_structure_vjps(t);
  detail::add_reduction_vjps(t);
  detail::add_contraction_vjps(t);
  detail::add_window_vjps(t);
  detail::add_control_vjps(t);
  constexpr auto leaf = GradKind::leaf, zero = GradKind::zero, none = GradKind::non_differentiable;
  set_no_vjp(t, Op::parameter, leaf, "a graph input: gradients end here");
  set_no_vjp(t, Op::constant, leaf, "a constant: gradients end here");
  set_no_vjp(t, Op::iota, none, "integer counting: no inputs to differentiate");
  set_no_vjp(t, Op::random_bits, none, "integer random bits of a key");
  set_no_vjp(t, Op::all_reduce, none,
             "a collective across processes: a training step adds it after autograd");
  const char* piecewise = "piecewise constant: its derivative is zero almost everywhere";
  for (Op op : {Op::sign, Op::floor, Op::ceil, Op::round}) set_no_vjp(t, op, zero, piecewise);
  set_no_vjp(t, Op::stop_gradient, zero, "the identity whose gradient is zero by definition");
  const char* logical = "a boolean or integer (bitwise) result";
  for (Op op : {Op::not_, Op::and_, Op::or_, Op::eq, Op::ne, Op::lt, Op::le, Op::gt, Op::ge})
    set_no_vjp(t, op, none, logical);
  for (Op op : {Op::argmax, Op::argmin}) set_no_vjp(t, op, none, "an integer index result");
  return t;
}

}  // namespace

const VjpRule& vjp_rule(Op op) {
  static const detail::VjpTable table = make_table();
  auto i = static_cast<std::size_t>(op);
  check(i < table.size(), "vjp_rule: invalid op ", i);
  return table[i];
}

std::string_view grad_kind_name(GradKind kind) {
  switch (kind) {
    case GradKind::differentiable:
      return "differentiable";
    case GradKind::zero:
      return "zero gradient";
    case GradKind::non_differentiable:
      return "non-differentiable";
    case GradKind::leaf:
      return "leaf";
  }
  return "?";
}

}  // namespace glia
