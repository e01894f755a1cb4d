// Gradient-check cases of the element-wise ops, select and cast: every unary op on a
// matrix, a scalar, size-1 axes and a broadcast operand; every binary op on equal
// shapes, broadcast shapes, scalars and a C++ number, with respect to both inputs.
#include <array>
#include <cmath>

#include "autograd/op_cases.hpp"

namespace glia::testing {

namespace {

using Unary = Expr (*)(const Expr&);
using Binary = Expr (*)(const Operand&, const Operand&);

// Where the op is smooth (and, for abs, away from its kink).
enum class Domain { any, positive, above_minus_one, nonzero };

Tensor draw(Domain d, const Shape& shape, unsigned seed) {
  switch (d) {
    case Domain::any:
      return random_tensor(shape, -2, 2, seed);
    case Domain::positive:
      return random_tensor(shape, 0.3, 2, seed);
    case Domain::above_minus_one:
      return random_tensor(shape, -0.6, 2, seed);
    case Domain::nonzero:
      return away_from_zero(shape, 0.2, 1.5, seed);
  }
  return {};
}

void add_unary(OpCases& cases, Op op, Unary fn, Domain d) {
  auto& list = cases[op];
  auto direct = [fn](const std::vector<Expr>& in) { return fn(in[0]); };
  list.push_back({"matrix_2x3", {draw(d, {2, 3}, 11)}, direct});
  list.push_back({"scalar", {draw(d, {}, 12)}, direct});
  list.push_back({"size1_1x3x1", {draw(d, {1, 3, 1}, 13)}, direct});
  list.push_back(
      {"broadcast_operand_3x1_to_3x4", {draw(d, {3, 1}, 14)}, [fn](const std::vector<Expr>& in) {
         return fn(broadcast_to(in[0], {3, 4}));
       }});
}

// The operand shapes each binary op is checked on (numpy broadcasting between them).
const std::array<std::pair<Shape, Shape>, 5> kBinaryShapes = {{
    {{2, 3}, {2, 3}},
    {{2, 1, 3}, {4, 1}},
    {{}, {2, 3}},
    {{2, 3}, {}},
    {{1, 3}, {2, 1}},
}};

std::string shapes_name(const Shape& a, const Shape& b) {
  auto text = [](const Shape& s) {
    if (s.rank() == 0) return std::string("scalar");
    std::string t;
    for (int i = 0; i < s.rank(); ++i) t += (i ? "x" : "") + std::to_string(s[i]);
    return t;
  };
  return text(a) + "_with_" + text(b);
}

auto binary_fn(Binary fn) {
  return [fn](const std::vector<Expr>& in) { return fn(in[0], in[1]); };
}

void add_binary(OpCases& cases, Op op, Binary fn, Domain da, Domain db, double number) {
  auto& list = cases[op];
  unsigned seed = 21;
  for (const auto& [a, b] : kBinaryShapes) {
    list.push_back({shapes_name(a, b), {draw(da, a, seed), draw(db, b, seed + 1)}, binary_fn(fn)});
    seed += 2;
  }
  list.push_back({"with_number", {draw(da, {2, 3}, seed)}, [fn, number](const auto& in) {
                    return fn(in[0], number);
                  }});
  list.push_back({"number_with", {draw(db, {3}, seed + 1)}, [fn, number](const auto& in) {
                    return fn(number, in[0]);
                  }});
}

// max and min: all values of both operands distinct, so no ties (but for one case).
void add_extremum(OpCases& cases, Op op, Binary fn) {
  auto& list = cases[op];
  unsigned seed = 35;
  for (const auto& [a, b] : kBinaryShapes)
    list.push_back({shapes_name(a, b), distinct_values({a, b}, seed++), binary_fn(fn)});
  list.push_back({"with_number", distinct_values({{2, 3}}, seed),
                  [fn](const auto& in) { return fn(in[0], 0.123); }});
  // Exact ties split the gradient evenly, which is what central differences see too.
  list.push_back({"ties_split_evenly",
                  {f64({0.5, -0.3, 1.0, 0.2}, {4}), f64({0.5, 0.1, 1.0, -0.4}, {4})},
                  binary_fn(fn)});
}

// remainder: divisors of magnitude in [1, 1.1] and dividends in bands whose quotients
// stay at least 0.18 from every integer, for every pairing that broadcasting makes.
Tensor divisor(const Shape& shape, unsigned seed) { return away_from_zero(shape, 1.0, 1.1, seed); }
Tensor dividend(const Shape& shape, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> band(0, 2), sign(0, 1);
  std::uniform_real_distribution<double> u(0, 1);
  const double lo[] = {0.2, 1.35, 2.4}, hi[] = {0.8, 1.6, 2.7};
  std::vector<double> v(static_cast<std::size_t>(shape.numel()));
  for (double& x : v) {
    int b = band(rng);
    x = (lo[b] + (hi[b] - lo[b]) * u(rng)) * (sign(rng) ? -1 : 1);
  }
  return f64(v, shape);
}

void add_remainder(OpCases& cases) {
  auto& list = cases[Op::remainder];
  Binary fn = &remainder;
  unsigned seed = 41;
  for (const auto& [a, b] : kBinaryShapes) {
    list.push_back({shapes_name(a, b), {dividend(a, seed), divisor(b, seed + 1)}, binary_fn(fn)});
    seed += 2;
  }
  list.push_back({"with_number", {dividend({2, 3}, seed)}, [](const auto& in) {
                    return remainder(in[0], 1.05);
                  }});
}

void add_select(OpCases& cases) {
  auto& list = cases[Op::select];
  // The predicate's input (first) is not checked: comparisons are flat, its gradient zero.
  GradCheckOptions branches;
  branches.check = {false, true, true};
  list.push_back({"same_shape_2x3",
                  {away_from_zero({2, 3}, 0.2, 1, 51), random_tensor({2, 3}, -1, 1, 52),
                   random_tensor({2, 3}, -1, 1, 53)},
                  [](const auto& in) { return select(greater(in[0], 0.0), in[1], in[2]); },
                  branches});
  list.push_back(
      {"broadcast_pred_2x1_branches_2x3_and_scalar",
       {f64({0.5, -0.4}, {2, 1}), random_tensor({2, 3}, -1, 1, 55), random_tensor({}, -1, 1, 56)},
       [](const auto& in) { return select(less(in[0], 0.0), in[1], in[2]); },
       branches});
  // The predicate compares p with the true branch itself: a piecewise function of both.
  list.push_back(
      {"pred_uses_branch_1x3_2x1_2x3",
       {f64({-0.5, 0.1, 0.7}, {1, 3}), f64({0.3, -0.2}, {2, 1}), random_tensor({2, 3}, -1, 1, 57)},
       [](const auto& in) { return select(less_equal(in[0], in[1]), in[1], in[2]); },
       branches});
  list.push_back({"number_branch",
                  {away_from_zero({3, 2}, 0.2, 1, 58), random_tensor({3, 2}, -1, 1, 59)},
                  [](const auto& in) { return select(greater_equal(in[0], 0.0), 0.5, in[1]); },
                  {.check = {false, true}}});
}

void add_cast(OpCases& cases) {
  // f32 rounds: a larger step, and a tolerance above f32's resolution.
  GradCheckOptions rounded;
  rounded.eps = 1e-2;
  rounded.tolerance = 1e-4;
  auto& list = cases[Op::cast];
  list.push_back({"f64_f32_f64_round_trip",
                  {random_tensor({2, 3}, -2, 2, 61)},
                  [](const auto& in) { return cast(cast(in[0], DType::f32), DType::f64); },
                  rounded});
  list.push_back({"square_in_f32_scalar",
                  {random_tensor({}, -2, 2, 62)},
                  [](const auto& in) {
                    Expr x = cast(in[0], DType::f32);
                    return cast(x * x, DType::f64);
                  },
                  rounded});
  list.push_back({"f32_broadcast_1x3_to_2x3",
                  {random_tensor({1, 3}, -2, 2, 63)},
                  [](const auto& in) {
                    return cast(broadcast_to(cast(in[0], DType::f32), {2, 3}), DType::f64);
                  },
                  rounded});
}

}  // namespace

void add_elementwise_cases(OpCases& cases) {
  const Domain any = Domain::any, pos = Domain::positive;
  add_unary(
      cases, Op::neg, [](const Expr& x) { return neg(x); }, any);
  add_unary(
      cases, Op::abs, [](const Expr& x) { return abs(x); }, Domain::nonzero);
  add_unary(
      cases, Op::exp, [](const Expr& x) { return exp(x); }, any);
  add_unary(
      cases, Op::expm1, [](const Expr& x) { return expm1(x); }, any);
  add_unary(
      cases, Op::log, [](const Expr& x) { return log(x); }, pos);
  add_unary(
      cases, Op::log1p, [](const Expr& x) { return log1p(x); }, Domain::above_minus_one);
  add_unary(
      cases, Op::sqrt, [](const Expr& x) { return sqrt(x); }, pos);
  add_unary(
      cases, Op::rsqrt, [](const Expr& x) { return rsqrt(x); }, pos);
  add_unary(
      cases, Op::tanh, [](const Expr& x) { return tanh(x); }, any);
  add_unary(
      cases, Op::logistic, [](const Expr& x) { return logistic(x); }, any);
  add_unary(
      cases, Op::erf, [](const Expr& x) { return erf(x); }, any);
  add_unary(
      cases, Op::sin, [](const Expr& x) { return sin(x); }, any);
  add_unary(
      cases, Op::cos, [](const Expr& x) { return cos(x); }, any);

  add_binary(cases, Op::add, &add, any, any, 1.5);
  add_binary(cases, Op::subtract, &subtract, any, any, 1.5);
  add_binary(cases, Op::multiply, &multiply, any, any, 1.5);
  add_binary(cases, Op::divide, &divide, any, Domain::nonzero, 1.5);
  // Base positive, exponent of either sign: both gradients are checked.
  add_binary(cases, Op::pow, &pow, pos, any, 1.5);
  // Zero bases (where d/dp is taken as 0) and integer exponents, 0 included.
  cases[Op::pow].push_back(
      {"zero_base_and_integer_exponents",
       {f64({0, 0, 0.5, 1.5, 2, 0.7}, {2, 3}), f64({2, 1, 0, 1, -1, 3}, {2, 3})},
       binary_fn(&pow)});
  // 0^0: x^0 is constant in x, so d/dx is 0 there (not 0 * inf); d/dp is infinite there.
  cases[Op::pow].push_back({"zero_to_the_zero_wrt_base",
                            {f64({0, 0.5, 0}, {3}), f64({0, 2, 1}, {3})},
                            binary_fn(&pow),
                            {.check = {true, false}}});
  add_binary(cases, Op::atan2, &atan2, Domain::nonzero, Domain::nonzero, 0.7);
  add_extremum(cases, Op::max, &max);
  add_extremum(cases, Op::min, &min);
  add_remainder(cases);
  add_select(cases);
  add_cast(cases);
}

}  // namespace glia::testing
