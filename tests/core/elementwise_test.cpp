// Element-wise ops: reference numerics against hand-computed values for every dtype
// each op accepts, integer edge cases, weak-typed scalars, and dtype errors.
#include <cmath>
#include <limits>

#include "core/test_util.hpp"

namespace glia {
namespace {

using namespace glia::testing;

// fn applied to x, traced and run.
Tensor unary(Expr (*fn)(const Expr&), const Tensor& x) {
  return run_expr([&](const std::vector<Expr>& in) { return fn(in[0]); }, {x});
}
// fn applied to a and b, traced and run.
Tensor binary(Expr (*fn)(const Operand&, const Operand&), const Tensor& a, const Tensor& b) {
  return run_expr([&](const std::vector<Expr>& in) { return fn(in[0], in[1]); }, {a, b});
}

// Each element is within tol * max(1, |want|) of want; NaN and infinities must match.
void expect_near_all(const Tensor& t, const V& want, double tol) {
  V got = values(t);
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < want.size(); ++i) {
    if (std::isnan(want[i]))
      EXPECT_TRUE(std::isnan(got[i])) << i;
    else if (std::isinf(want[i]))
      EXPECT_EQ(got[i], want[i]) << i;
    else
      EXPECT_NEAR(got[i], want[i], tol * std::max(1.0, std::abs(want[i]))) << i;
  }
}

TEST(Unary, FloatMathF32AndF64) {
  Tensor x = Tensor::from<double>({-1.0, 0.0, 0.5, 2.0});
  for (DType t : {f32, f64}) {
    Tensor xt = x.cast(t);
    double tol = t == f32 ? 1e-6 : 1e-14;
    expect_near_all(unary(exp, xt), {0.36787944117144233, 1, 1.6487212707001282, 7.38905609893065},
                    tol);
    expect_near_all(unary(expm1, xt),
                    {-0.6321205588285577, 0, 0.6487212707001282, 6.38905609893065}, tol);
    expect_near_all(unary(tanh, xt),
                    {-0.7615941559557649, 0, 0.46211715726000974, 0.9640275800758169}, tol);
    expect_near_all(unary(logistic, xt),
                    {0.2689414213699951, 0.5, 0.6224593312018546, 0.8807970779778823}, tol);
    expect_near_all(unary(erf, xt),
                    {-0.8427007929497149, 0, 0.5204998778130465, 0.9953222650189527}, tol);
    expect_near_all(unary(sin, xt), {-0.8414709848078965, 0, 0.479425538604203, 0.9092974268256817},
                    tol);
    expect_near_all(unary(cos, xt),
                    {0.5403023058681398, 1, 0.8775825618903728, -0.4161468365471424}, tol);
    expect_near_all(unary(log, xt), {NAN, -kInf, -0.6931471805599453, 0.6931471805599453}, tol);
    expect_near_all(unary(log1p, xt), {-kInf, 0, 0.4054651081081644, 1.0986122886681098}, tol);
    expect_near_all(unary(sqrt, xt), {NAN, 0, 0.7071067811865476, 1.4142135623730951}, tol);
    expect_near_all(unary(rsqrt, xt), {NAN, kInf, 1.4142135623730951, 0.7071067811865476}, tol);
    EXPECT_EQ(unary(exp, xt).dtype(), t);
  }
}

TEST(Unary, LogisticIsStableAtExtremes) {
  Tensor x = Tensor::from<float>({-1e4f, 1e4f, -100.0f});
  expect_near_all(unary(logistic, x), {0, 1, 3.720075976020836e-44}, 1e-6);
}

TEST(Unary, SignedAndRounding) {
  Tensor x = Tensor::from<double>({-2.5, -0.5, 0.0, 0.5, 1.5, 2.5});
  EXPECT_EQ(values(unary(floor, x)), (std::vector<double>{-3, -1, 0, 0, 1, 2}));
  EXPECT_EQ(values(unary(ceil, x)), (std::vector<double>{-2, -0.0, 0, 1, 2, 3}));
  EXPECT_EQ(values(unary(round, x)), (std::vector<double>{-3, -1, 0, 1, 2, 3}));  // away from zero
  EXPECT_EQ(values(unary(abs, x)), (std::vector<double>{2.5, 0.5, 0, 0.5, 1.5, 2.5}));
  EXPECT_EQ(values(unary(sign, x)), (std::vector<double>{-1, -1, 0, 1, 1, 1}));
  EXPECT_EQ(values(unary(neg, x)), (std::vector<double>{2.5, 0.5, 0, -0.5, -1.5, -2.5}));
  Tensor i = Tensor::from<std::int32_t>({-7, 0, 3});
  EXPECT_EQ(unary(abs, i).to_vector<int>(), (std::vector<int>{7, 0, 3}));
  EXPECT_EQ(unary(sign, i).to_vector<int>(), (std::vector<int>{-1, 0, 1}));
  EXPECT_EQ(unary(neg, i).to_vector<int>(), (std::vector<int>{7, 0, -3}));
  EXPECT_EQ(unary(floor, i).to_vector<int>(), (std::vector<int>{-7, 0, 3}));
  Tensor u = Tensor::from<std::uint8_t>({0, 5});
  EXPECT_EQ(unary(abs, u).to_vector<int>(), (std::vector<int>{0, 5}));
  EXPECT_EQ(unary(sign, u).to_vector<int>(), (std::vector<int>{0, 1}));
  EXPECT_TRUE(std::isnan(unary(sign, Tensor::from<float>({NAN})).item<float>()));
}

TEST(Unary, SixteenBitFloatsComputeInFloat) {
  Tensor h = Tensor::from<double>({0.5, 2.0}).cast(f16);
  Tensor y = unary(exp, h);
  EXPECT_EQ(y.dtype(), f16);
  expect_near_all(y, {1.6487212707001282, 7.38905609893065}, 1e-3);
  Tensor b = Tensor::from<double>({0.5, 2.0}).cast(bf16);
  expect_near_all(unary(sqrt, b), {0.7071067811865476, 1.4142135623730951}, 8e-3);
}

TEST(Unary, IntegersGoToF32ForFloatMath) {
  Tensor y = unary(exp, Tensor::from<std::int32_t>({0, 1}));
  EXPECT_EQ(y.dtype(), f32);
  expect_near_all(y, {1, 2.718281828459045}, 1e-6);
}

TEST(Unary, NotIsLogicalOnBoolAndBitwiseOnIntegers) {
  EXPECT_EQ(unary(logical_not, Tensor::from<bool>({true, false})).to_vector<int>(),
            (std::vector<int>{0, 1}));
  EXPECT_EQ(unary(logical_not, Tensor::from<std::int32_t>({0, 5})).to_vector<int>(),
            (std::vector<int>{-1, -6}));
  EXPECT_EQ(unary(logical_not, Tensor::from<std::uint8_t>({0, 255})).to_vector<int>(),
            (std::vector<int>{255, 0}));
  EXPECT_GLIA_ERROR(unary(logical_not, Tensor::from<float>({1})),
                    "not: expected bool or an integer dtype");
}

TEST(Binary, ArithmeticF32) {
  Tensor a = Tensor::from<float>({1, -2, 3, 4});
  Tensor b = Tensor::from<float>({2, 4, -1, 0.5});
  EXPECT_EQ(values(binary(add, a, b)), (std::vector<double>{3, 2, 2, 4.5}));
  EXPECT_EQ(values(binary(subtract, a, b)), (std::vector<double>{-1, -6, 4, 3.5}));
  EXPECT_EQ(values(binary(multiply, a, b)), (std::vector<double>{2, -8, -3, 2}));
  EXPECT_EQ(values(binary(divide, a, b)), (std::vector<double>{0.5, -0.5, -3, 8}));
  EXPECT_EQ(values(binary(pow, a, b)),
            (std::vector<double>{1, 16, static_cast<double>(1.0f / 3.0f), 2}));
  EXPECT_EQ(values(binary(max, a, b)), (std::vector<double>{2, 4, 3, 4}));
  EXPECT_EQ(values(binary(min, a, b)), (std::vector<double>{1, -2, -1, 0.5}));
  expect_near_all(binary(atan2, a, b),
                  {0.4636476090008061, -0.4636476090008061, 1.892546881191539, 1.4464413322481353},
                  1e-6);
}

TEST(Binary, RemainderTakesTheDividendsSign) {
  Tensor a = Tensor::from<double>({7, -7, 7, -7, 5.5});
  Tensor b = Tensor::from<double>({3, 3, -3, -3, 2});
  EXPECT_EQ(values(binary(remainder, a, b)), (std::vector<double>{1, -1, 1, -1, 1.5}));
  EXPECT_EQ(binary(remainder, a.cast(i64), b.cast(i64)).to_vector<int>(),
            (std::vector<int>{1, -1, 1, -1, 1}));
}

TEST(Binary, IntegerEdgeCasesAreDefined) {
  constexpr std::int32_t kMin = std::numeric_limits<std::int32_t>::min();
  Tensor a = Tensor::from<std::int32_t>({7, -7, 5, kMin, 3});
  Tensor b = Tensor::from<std::int32_t>({2, 2, 0, -1, 0});
  EXPECT_EQ(binary(divide, a, b).to_vector<std::int32_t>(),
            (std::vector<std::int32_t>{3, -3, 0, kMin, 0}));
  EXPECT_EQ(binary(remainder, a, b).to_vector<std::int32_t>(),
            (std::vector<std::int32_t>{1, -1, 5, 0, 3}));
  Tensor p = binary(pow, Tensor::from<std::int64_t>({2, 3, -1, 2, 1, 0}),
                    Tensor::from<std::int64_t>({10, 0, 3, -1, -5, 0}));
  EXPECT_EQ(p.to_vector<std::int64_t>(), (std::vector<std::int64_t>{1024, 1, -1, 0, 1, 1}));
  Tensor u = binary(subtract, Tensor::from<std::uint8_t>({1}), Tensor::from<std::uint8_t>({2}));
  EXPECT_EQ(u.to_vector<int>(), (std::vector<int>{255}));  // unsigned wraps
}

TEST(Binary, MaxMinPropagateNaN) {
  Tensor a = Tensor::from<float>({NAN, 1});
  Tensor b = Tensor::from<float>({1, NAN});
  for (auto fn : {max, min}) {
    Tensor y = binary(fn, a, b);
    EXPECT_TRUE(std::isnan(y.to_vector<float>()[0]));
    EXPECT_TRUE(std::isnan(y.to_vector<float>()[1]));
  }
}

TEST(Binary, LogicalAndBitwise) {
  Tensor p = Tensor::from<bool>({true, true, false, false});
  Tensor q = Tensor::from<bool>({true, false, true, false});
  EXPECT_EQ(binary(logical_and, p, q).to_vector<int>(), (std::vector<int>{1, 0, 0, 0}));
  EXPECT_EQ(binary(logical_or, p, q).to_vector<int>(), (std::vector<int>{1, 1, 1, 0}));
  Tensor a = Tensor::from<std::int32_t>({12, 5});
  Tensor b = Tensor::from<std::int32_t>({10, 3});
  EXPECT_EQ(binary(logical_and, a, b).to_vector<int>(), (std::vector<int>{8, 1}));
  EXPECT_EQ(binary(logical_or, a, b).to_vector<int>(), (std::vector<int>{14, 7}));
  EXPECT_GLIA_ERROR(binary(logical_and, Tensor::from<float>({1}), Tensor::from<float>({1})),
                    "and: expected bool or an integer dtype, got f32[1]");
}

TEST(Compare, AllDTypesGiveBool) {
  Tensor a = Tensor::from<double>({1, 2, 3});
  Tensor b = Tensor::from<double>({2, 2, 2});
  for (DType t : {f32, f64, f16, bf16, i32, i64, u8, u32}) {
    Tensor x = a.cast(t), y = b.cast(t);
    SCOPED_TRACE(std::string(dtype_name(t)));
    EXPECT_EQ(binary(equal, x, y).dtype(), boolean);
    EXPECT_EQ(binary(equal, x, y).to_vector<int>(), (std::vector<int>{0, 1, 0}));
    EXPECT_EQ(binary(not_equal, x, y).to_vector<int>(), (std::vector<int>{1, 0, 1}));
    EXPECT_EQ(binary(less, x, y).to_vector<int>(), (std::vector<int>{1, 0, 0}));
    EXPECT_EQ(binary(less_equal, x, y).to_vector<int>(), (std::vector<int>{1, 1, 0}));
    EXPECT_EQ(binary(greater, x, y).to_vector<int>(), (std::vector<int>{0, 0, 1}));
    EXPECT_EQ(binary(greater_equal, x, y).to_vector<int>(), (std::vector<int>{0, 1, 1}));
  }
  Tensor n = Tensor::from<float>({NAN});
  EXPECT_EQ(binary(equal, n, n).to_vector<int>(), (std::vector<int>{0}));
  EXPECT_EQ(binary(not_equal, n, n).to_vector<int>(), (std::vector<int>{1}));
}

TEST(Binary, PromotionAndBroadcastingThroughExpr) {
  Tensor a = Tensor::from<std::int32_t>({1, 2, 3, 4, 5, 6}, Shape{2, 3});
  Tensor b = Tensor::from<float>({0.5f, 1.0f, 1.5f});
  Tensor y = binary(add, a, b);
  EXPECT_EQ(y.dtype(), f32);
  EXPECT_EQ(y.shape(), (Shape{2, 3}));
  EXPECT_EQ(values(y), (std::vector<double>{1.5, 3, 4.5, 4.5, 6, 7.5}));
  Tensor c = Tensor::from<std::int64_t>({10, 20}, Shape{2, 1});
  EXPECT_EQ(binary(multiply, a, c).to_vector<int>(), (std::vector<int>{10, 20, 30, 80, 100, 120}));
  EXPECT_EQ(binary(multiply, a, c).dtype(), i64);
  EXPECT_GLIA_ERROR(binary(add, a, Tensor::from<float>({1, 2})),
                    "add: shapes [2][3] and [2] cannot be broadcast together");
}

TEST(Binary, WeakScalarsTakeTheTensorsDType) {
  Tensor h = Tensor::from<double>({1, 2}).cast(f16);
  Tensor y = run_expr([](const std::vector<Expr>& in) { return in[0] * 2.0 + 1.0; }, {h});
  EXPECT_EQ(y.dtype(), f16);
  EXPECT_EQ(values(y), (std::vector<double>{3, 5}));
  Tensor i = Tensor::from<std::int32_t>({1, 2});
  EXPECT_EQ(run_expr([](const std::vector<Expr>& in) { return add(in[0], 3); }, {i}).dtype(), i32);
  Tensor f = run_expr([](const std::vector<Expr>& in) { return in[0] / 2.0; }, {i});
  EXPECT_EQ(f.dtype(), f32);
  EXPECT_EQ(values(f), (std::vector<double>{0.5, 1}));
  Tensor r = run_expr([](const std::vector<Expr>& in) { return 1.0 - in[0]; },
                      {Tensor::from<float>({0.25f})});
  EXPECT_EQ(values(r), (std::vector<double>{0.75}));
}

TEST(Select, PicksAndBroadcasts) {
  Tensor p = Tensor::from<bool>({true, false, true});
  Tensor a = Tensor::from<float>({1, 2, 3});
  Tensor y =
      run_expr([](const std::vector<Expr>& in) { return select(in[0], in[1], 0.0); }, {p, a});
  EXPECT_EQ(values(y), (std::vector<double>{1, 0, 3}));
  Tensor i = Tensor::from<std::int32_t>({7, 8, 9});
  Tensor z =
      run_expr([](const std::vector<Expr>& in) { return select(in[0], in[1], in[2]); }, {p, i, a});
  EXPECT_EQ(z.dtype(), f32);
  EXPECT_EQ(values(z), (std::vector<double>{7, 2, 9}));
  EXPECT_GLIA_ERROR(
      run_expr([](const std::vector<Expr>& in) { return select(in[1], in[1], in[1]); }, {p, a}),
      "select: the predicate must be bool, got f32[3]");
}

TEST(Cast, ConvertsAndRejectsNothing) {
  Tensor x = Tensor::from<float>({-1.7f, 0.0f, 2.9f});
  EXPECT_EQ(
      run_expr([](const std::vector<Expr>& in) { return cast(in[0], i32); }, {x}).to_vector<int>(),
      (std::vector<int>{-1, 0, 2}));
  EXPECT_EQ(run_expr([](const std::vector<Expr>& in) { return cast(in[0], boolean); }, {x})
                .to_vector<int>(),
            (std::vector<int>{1, 0, 1}));
  EXPECT_EQ(values(run_expr([](const std::vector<Expr>& in) { return cast(in[0], bf16); }, {x})),
            (std::vector<double>{-1.703125, 0, 2.90625}));
}

TEST(Elementwise, ZeroSizeAndDTypeErrors) {
  Tensor e = Tensor::zeros({0, 3});
  EXPECT_EQ(unary(exp, e).shape(), (Shape{0, 3}));
  EXPECT_EQ(binary(add, e, e).numel(), 0);
  Tensor b = Tensor::from<bool>({true});
  EXPECT_GLIA_ERROR(unary(neg, b), "neg: expected a numeric dtype (not bool), got bool[1]");
  EXPECT_GLIA_ERROR(binary(add, b, b), "add: expected a numeric dtype (not bool), got bool[1]");
}

}  // namespace
}  // namespace glia
