// The ew:: functors and reduction monoids called directly, on the edge cases every backend
// must agree on: integer division and remainder by 0 and -1, wrap-around, pow by
// squaring, rounding, NaN handling, and logistic bit for bit against its two-branch form.
#include <cmath>
#include <cstring>
#include <limits>

#include "core/test_util.hpp"
#include "glia/core/monoid.hpp"

namespace glia {
namespace {

template <class T>
using lim = std::numeric_limits<T>;
constexpr float kNaNf = lim<float>::quiet_NaN();

TEST(EwFunctors, IntegerDivisionAndRemainderNeverTrap) {
  using I32 = std::int32_t;
  using I64 = std::int64_t;
  EXPECT_EQ(ew::Divide{}(I32{7}, I32{0}), 0);
  EXPECT_EQ(ew::Divide{}(I32{-7}, I32{2}), -3);  // toward zero
  EXPECT_EQ(ew::Divide{}(lim<I32>::min(), I32{-1}), lim<I32>::min());
  EXPECT_EQ(ew::Divide{}(lim<I64>::min(), I64{-1}), lim<I64>::min());
  EXPECT_EQ(ew::Divide{}(std::uint32_t{4000000000u}, std::uint32_t{0}), 0u);
  EXPECT_EQ(ew::Divide{}(std::uint8_t{255}, std::uint8_t{255}), 1);  // 255 is not -1
  EXPECT_EQ(ew::Remainder{}(I32{-7}, I32{3}), -1);                   // the dividend's sign
  EXPECT_EQ(ew::Remainder{}(I32{7}, I32{-3}), 1);
  EXPECT_EQ(ew::Remainder{}(I32{7}, I32{0}), 7);
  EXPECT_EQ(ew::Remainder{}(lim<I64>::min(), I64{-1}), 0);
  EXPECT_EQ(ew::Remainder{}(-5.5, 2.0), -1.5);
  EXPECT_EQ(ew::Remainder{}(std::uint8_t{200}, std::uint8_t{7}), 4);
}

TEST(EwFunctors, IntegerArithmeticWraps) {
  using I32 = std::int32_t;
  EXPECT_EQ(ew::Add{}(lim<I32>::max(), I32{1}), lim<I32>::min());
  EXPECT_EQ(ew::Multiply{}(I32{65536}, I32{65536}), 0);
  EXPECT_EQ(ew::Subtract{}(std::uint8_t{1}, std::uint8_t{2}), 255);
  EXPECT_EQ(ew::Neg{}(lim<I32>::min()), lim<I32>::min());
  EXPECT_EQ(ew::Neg{}(std::uint8_t{1}), 255);
  EXPECT_EQ(ew::Abs{}(lim<std::int64_t>::min()), lim<std::int64_t>::min());
  EXPECT_EQ(ew::Abs{}(I32{-7}), 7);
  EXPECT_EQ(ew::Abs{}(std::uint32_t{7}), 7u);
}

TEST(EwFunctors, IntegerPowBySquaring) {
  using I64 = std::int64_t;
  EXPECT_EQ(ew::Pow{}(I64{3}, I64{5}), 243);
  EXPECT_EQ(ew::Pow{}(I64{0}, I64{0}), 1);
  EXPECT_EQ(ew::Pow{}(std::int32_t{2}, std::int32_t{31}), lim<std::int32_t>::min());  // wraps
  EXPECT_EQ(ew::Pow{}(std::uint8_t{2}, std::uint8_t{8}), 0);
  EXPECT_EQ(ew::Pow{}(std::uint8_t{3}, std::uint8_t{5}), 243);
  // A negative exponent truncates like 1 / a^|b|.
  EXPECT_EQ(ew::Pow{}(I64{1}, I64{-7}), 1);
  EXPECT_EQ(ew::Pow{}(I64{-1}, I64{-3}), -1);
  EXPECT_EQ(ew::Pow{}(I64{-1}, I64{-4}), 1);
  EXPECT_EQ(ew::Pow{}(I64{2}, I64{-1}), 0);
  EXPECT_EQ(ew::Pow{}(I64{0}, I64{-1}), 0);
  EXPECT_EQ(ew::Pow{}(2.0f, 0.5f), std::sqrt(2.0f));
}

TEST(EwFunctors, RoundingSignAndNot) {
  EXPECT_EQ(ew::Round{}(0.5), 1.0);  // half away from zero
  EXPECT_EQ(ew::Round{}(-0.5f), -1.0f);
  EXPECT_EQ(ew::Round{}(2.5), 3.0);
  EXPECT_EQ(ew::Floor{}(-0.5f), -1.0f);
  EXPECT_EQ(ew::Ceil{}(-0.5), 0.0);
  EXPECT_EQ(ew::Round{}(std::int32_t{-3}), -3);
  EXPECT_TRUE(std::isnan(ew::Sign{}(kNaNf)));
  EXPECT_EQ(ew::Sign{}(-0.0f), 0.0f);
  EXPECT_FALSE(std::signbit(ew::Sign{}(-0.0f)));
  EXPECT_EQ(ew::Sign{}(-3.5), -1.0);
  EXPECT_EQ(ew::Sign{}(std::int64_t{-9}), -1);
  EXPECT_EQ(ew::Sign{}(std::uint8_t{9}), 1);
  EXPECT_EQ(ew::Not{}(true), false);
  EXPECT_EQ(ew::Not{}(std::int32_t{5}), -6);
  EXPECT_EQ(ew::Not{}(std::uint8_t{0}), 255);
  EXPECT_EQ(ew::And{}(true, false), false);
  EXPECT_EQ(ew::Or{}(std::uint32_t{12}, std::uint32_t{3}), 15u);
  EXPECT_EQ(ew::Rsqrt{}(4.0), 0.5);
  EXPECT_TRUE(std::isinf(ew::Rsqrt{}(0.0f)));
}

TEST(EwFunctors, MaxMinPropagateNaNAndCompareAsIEEE) {
  for (auto [a, b] : {std::pair{kNaNf, 1.0f}, {1.0f, kNaNf}, {kNaNf, kNaNf}}) {
    EXPECT_TRUE(std::isnan(ew::Max{}(a, b)));
    EXPECT_TRUE(std::isnan(ew::Min{}(a, b)));
  }
  EXPECT_EQ(ew::Max{}(-2.0, 3.0), 3.0);
  EXPECT_EQ(ew::Min{}(std::uint8_t{200}, std::uint8_t{7}), 7);
  EXPECT_FALSE(ew::Eq{}(kNaNf, kNaNf));
  EXPECT_TRUE(ew::Ne{}(kNaNf, kNaNf));
  EXPECT_FALSE(ew::Lt{}(kNaNf, 1.0f));
  EXPECT_TRUE(ew::Le{}(std::uint32_t{1}, std::uint32_t{4000000000u}));
  EXPECT_TRUE(ew::Gt{}(true, false));
  EXPECT_TRUE(ew::Ge{}(std::int64_t{-1}, std::int64_t{-1}));
}

// The two-branch logistic the reference kernel had, written out here as the spec.
template <class T>
T two_branch_logistic(T x) {
  if (x >= T(0)) return T(1) / (T(1) + std::exp(-x));
  T e = std::exp(x);
  return e / (T(1) + e);
}

template <class T, class Bits>
void expect_logistic_bitwise(T x) {
  T got = ew::Logistic{}(x), want = two_branch_logistic(x);
  Bits g, w;
  std::memcpy(&g, &got, sizeof g);
  std::memcpy(&w, &want, sizeof w);
  EXPECT_EQ(g, w) << "x = " << x;
}

// Every 74565th float bit pattern (NaNs of both signs and payloads, infinities,
// subnormals); all 2^32 were compared once outside the suite.
TEST(EwFunctors, LogisticIsBitwiseTheTwoBranchForm) {
  for (std::uint64_t u = 0; u <= 0xffffffffu; u += 0x00012345u) {
    auto bits = static_cast<std::uint32_t>(u);
    float x;
    std::memcpy(&x, &bits, sizeof x);
    expect_logistic_bitwise<float, std::uint32_t>(x);
  }
  for (double x : {0.0, -0.0, 1e-300, -1e-300, 0.5, -0.5, 20.0, -20.0, 700.0, -745.0, -800.0,
                   lim<double>::infinity(), -lim<double>::infinity(), lim<double>::quiet_NaN(),
                   -lim<double>::quiet_NaN(), lim<double>::denorm_min()})
    expect_logistic_bitwise<double, std::uint64_t>(x);
  for (float x : {kNaNf, -kNaNf, lim<float>::infinity(), -lim<float>::infinity()})
    expect_logistic_bitwise<float, std::uint32_t>(x);
  EXPECT_EQ(ew::Logistic{}(0.0f), 0.5f);
  EXPECT_EQ(ew::Logistic{}(-1000.0f), 0.0f);
  EXPECT_EQ(ew::Logistic{}(1000.0), 1.0);
}

TEST(Monoids, AccumulatorTypes) {
  using Sum = monoid<Op::reduce_sum>;
  using Prod = monoid<Op::reduce_prod>;
  using Max = monoid<Op::reduce_max>;
  static_assert(std::is_same_v<Sum::acc_t<float>, double>);
  static_assert(std::is_same_v<Sum::acc_t<Half>, double>);
  static_assert(std::is_same_v<Prod::acc_t<BFloat16>, double>);
  static_assert(std::is_same_v<Sum::acc_t<std::int32_t>, std::uint64_t>);
  static_assert(std::is_same_v<Prod::acc_t<std::uint8_t>, std::uint64_t>);
  static_assert(std::is_same_v<Max::acc_t<Half>, float>);
  static_assert(std::is_same_v<Max::acc_t<std::uint32_t>, std::uint32_t>);
  EXPECT_EQ(Sum::c_stem, "sum");
  EXPECT_EQ(monoid<Op::reduce_min>::c_stem, "min");
}

TEST(Monoids, IdentitiesAndCombines) {
  using Sum = monoid<Op::reduce_sum>;
  using Prod = monoid<Op::reduce_prod>;
  using Max = monoid<Op::reduce_max>;
  using Min = monoid<Op::reduce_min>;
  EXPECT_EQ(Sum::identity<float>(), 0.0);
  EXPECT_EQ(Prod::identity<std::int64_t>(), 1u);
  EXPECT_EQ(Max::identity<double>(), -lim<double>::infinity());
  EXPECT_EQ(Min::identity<Half>(), lim<float>::infinity());
  EXPECT_EQ(Max::identity<std::int32_t>(), lim<std::int32_t>::min());
  EXPECT_EQ(Min::identity<std::uint8_t>(), 255);
  // Float sums accumulate in double: 1e8f + 1 - 1e8f loses the 1 in float.
  auto s = Sum::identity<float>();
  for (float v : {1e8f, 1.0f, -1e8f}) s = Sum::combine<float>(s, Sum::widen<float>(v));
  EXPECT_EQ(Sum::narrow<float>(s), 1.0f);
  // Integer sums wrap modulo 2^bits of the input type.
  auto w = Sum::combine<std::int32_t>(Sum::widen<std::int32_t>(lim<std::int32_t>::max()),
                                      Sum::widen<std::int32_t>(1));
  EXPECT_EQ(Sum::narrow<std::int32_t>(w), lim<std::int32_t>::min());
  auto u = Sum::combine<std::uint8_t>(Sum::widen<std::uint8_t>(200), Sum::widen<std::uint8_t>(100));
  EXPECT_EQ(Sum::narrow<std::uint8_t>(u), 44);
  auto n = Sum::combine<std::int64_t>(Sum::widen<std::int64_t>(-5), Sum::widen<std::int64_t>(3));
  EXPECT_EQ(Sum::narrow<std::int64_t>(n), -2);
  EXPECT_EQ(Prod::narrow<std::int32_t>(Prod::combine<std::int32_t>(Prod::widen<std::int32_t>(-3),
                                                                   Prod::widen<std::int32_t>(7))),
            -21);
  // Float max and min: a NaN, once seen, stays.
  float m = Max::identity<float>();
  for (float v : {1.0f, kNaNf, 5.0f}) m = Max::combine<float>(m, Max::widen<float>(v));
  EXPECT_TRUE(std::isnan(m));
  float lo = Min::identity<float>();
  for (float v : {3.0f, -2.0f, 4.0f}) lo = Min::combine<float>(lo, v);
  EXPECT_EQ(lo, -2.0f);
  EXPECT_EQ(Max::combine<std::uint32_t>(7u, 4000000000u), 4000000000u);
}

}  // namespace
}  // namespace glia
