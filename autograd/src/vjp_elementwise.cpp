// Gradient rules of the element-wise ops, select and cast. `ct` is the cotangent of
// the node's output `y`; each rule returns one cotangent per input.
#include <cmath>
#include <numbers>

#include "vjp_rules.hpp"

namespace glia::detail {

namespace {

using Cts = std::vector<Expr>;

Cts neg_vjp(const VjpArgs& a) { return {neg(a.cotangent)}; }
Cts abs_vjp(const VjpArgs& a) { return {a.cotangent * sign(a.inputs[0])}; }
Cts exp_vjp(const VjpArgs& a) { return {a.cotangent * a.output}; }
Cts expm1_vjp(const VjpArgs& a) { return {a.cotangent * (a.output + 1.0)}; }
Cts log_vjp(const VjpArgs& a) { return {a.cotangent / a.inputs[0]}; }
Cts log1p_vjp(const VjpArgs& a) { return {a.cotangent / (a.inputs[0] + 1.0)}; }
Cts sqrt_vjp(const VjpArgs& a) { return {a.cotangent / (a.output * 2.0)}; }
// d/dx x^(-1/2) = -1/2 x^(-3/2) = -1/2 * y / x
Cts rsqrt_vjp(const VjpArgs& a) { return {a.cotangent * a.output / a.inputs[0] * -0.5}; }
Cts tanh_vjp(const VjpArgs& a) { return {a.cotangent * (1.0 - a.output * a.output)}; }
Cts logistic_vjp(const VjpArgs& a) { return {a.cotangent * a.output * (1.0 - a.output)}; }
Cts erf_vjp(const VjpArgs& a) {
  const Expr& x = a.inputs[0];
  return {a.cotangent * exp(neg(x * x)) * (2.0 / std::sqrt(std::numbers::pi))};
}
Cts sin_vjp(const VjpArgs& a) { return {a.cotangent * cos(a.inputs[0])}; }
Cts cos_vjp(const VjpArgs& a) { return {neg(a.cotangent * sin(a.inputs[0]))}; }

Cts add_vjp(const VjpArgs& a) { return {a.cotangent, a.cotangent}; }
Cts subtract_vjp(const VjpArgs& a) { return {a.cotangent, neg(a.cotangent)}; }
Cts multiply_vjp(const VjpArgs& a) {
  return {a.cotangent * a.inputs[1], a.cotangent * a.inputs[0]};
}
Cts divide_vjp(const VjpArgs& a) {
  const Expr& b = a.inputs[1];
  return {a.cotangent / b, neg(a.cotangent * a.output / b)};
}
Cts pow_vjp(const VjpArgs& a) {
  const Expr &x = a.inputs[0], &p = a.inputs[1];
  // d/dx x^p = p x^(p-1), taken as 0 where p == 0 (x^0 is constant, even at x == 0);
  // d/dp x^p = x^p log x, taken as 0 where x == 0.
  Expr dx = select(equal(p, 0.0), 0.0, p * pow(x, p - 1.0));
  Expr dp = a.output * log(select(equal(x, 0.0), 1.0, x));
  return {a.cotangent * dx, a.cotangent * dp};
}
// Ties split the gradient evenly, so max(x, x) has derivative 1 in x.
Cts extremum_vjp(const VjpArgs& a, bool is_max) {
  const Expr &x = a.inputs[0], &y = a.inputs[1];
  Expr x_wins = is_max ? greater(x, y) : less(x, y);
  Expr share = select(x_wins, 1.0, select(equal(x, y), 0.5, 0.0));
  return {a.cotangent * share, a.cotangent * (1.0 - share)};
}
Cts max_vjp(const VjpArgs& a) { return extremum_vjp(a, true); }
Cts min_vjp(const VjpArgs& a) { return extremum_vjp(a, false); }
// remainder(x, y) = x - y * trunc(x / y).
Cts remainder_vjp(const VjpArgs& a) {
  const Expr &x = a.inputs[0], &y = a.inputs[1];
  Expr quotient = round((x - a.output) / y);
  return {a.cotangent, neg(a.cotangent * quotient)};
}
Cts atan2_vjp(const VjpArgs& a) {
  const Expr &x = a.inputs[0], &y = a.inputs[1];
  Expr denom = x * x + y * y;
  return {a.cotangent * y / denom, neg(a.cotangent * x / denom)};
}
Cts select_vjp(const VjpArgs& a) {
  const Expr& p = a.inputs[0];
  return {Expr(), select(p, a.cotangent, 0.0), select(p, 0.0, a.cotangent)};
}
Cts cast_vjp(const VjpArgs& a) {
  const Expr& x = a.inputs[0];
  if (!is_float(x.dtype())) return {Expr()};
  return {cast(a.cotangent, x.dtype())};
}

}  // namespace

void add_elementwise_vjps(VjpTable& t) {
  set_vjp(t, Op::neg, &neg_vjp);
  set_vjp(t, Op::abs, &abs_vjp);
  set_vjp(t, Op::exp, &exp_vjp);
  set_vjp(t, Op::expm1, &expm1_vjp);
  set_vjp(t, Op::log, &log_vjp);
  set_vjp(t, Op::log1p, &log1p_vjp);
  set_vjp(t, Op::sqrt, &sqrt_vjp);
  set_vjp(t, Op::rsqrt, &rsqrt_vjp);
  set_vjp(t, Op::tanh, &tanh_vjp);
  set_vjp(t, Op::logistic, &logistic_vjp);
  set_vjp(t, Op::erf, &erf_vjp);
  set_vjp(t, Op::sin, &sin_vjp);
  set_vjp(t, Op::cos, &cos_vjp);
  set_vjp(t, Op::add, &add_vjp);
  set_vjp(t, Op::subtract, &subtract_vjp);
  set_vjp(t, Op::multiply, &multiply_vjp);
  set_vjp(t, Op::divide, &divide_vjp);
  set_vjp(t, Op::pow, &pow_vjp);
  set_vjp(t, Op::max, &max_vjp);
  set_vjp(t, Op::min, &min_vjp);
  set_vjp(t, Op::remainder, &remainder_vjp);
  set_vjp(t, Op::atan2, &atan2_vjp);
  set_vjp(t, Op::select, &select_vjp);
  set_vjp(t, Op::cast, &cast_vjp);
}

}  // namespace glia::detail
