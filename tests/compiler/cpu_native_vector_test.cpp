// The cpu backend's compiled sweeps whose loops the system's compiler must vectorise to
// be worth running compiled: a dropout's bool mask read and written as bytes, selects on
// comparisons with bool registers as ints (GCC 12 leaves loops with a _Bool beside floats
// scalar, and the cpu backend then runs them on the tile executor), and exp in glia's own
// vector variants, within its ulps and keeping its special values.
#include <algorithm>
#include <cmath>
#include <limits>

#include "compiler/cpu_native_util.hpp"
#include "compiler/cpu_test_util.hpp"
#include "glia/compiler/aot.hpp"
#include "scoped_env.hpp"

namespace glia::testing {
namespace {

// A dropout's bool mask, read and written as bytes, so that both loops vectorise and run
// compiled: the select on the mask (a loop loading a _Bool beside floats stayed scalar, on
// the tile executor) and the mask from a clamped uniform compared with the rate (a loop
// storing a _Bool computed from floats did too: the MLP step's dropout group took 55 us
// at batch 128, 28 us compiled).
TEST(CpuNative, BoolMasksReadAndWrittenRunCompiled) {
  GLIA_REQUIRE_CPU_BACKEND();
  GLIA_REQUIRE_C_COMPILER();
  ScopedCache cache("mask");
  constexpr std::int64_t kN = 40000;
  Graph apply = trace(
      [](const std::vector<Expr>& in) {
        return std::vector<Expr>{select(in[0], in[1] * 2.0, 0.0)};
      },
      {{DType::boolean, {kN}}, {f32, {kN}}}, "mask");
  Graph make = trace(
      [](const std::vector<Expr>& in) {
        return std::vector<Expr>{less(min(max(in[0] * 0.5 + 0.25, 0.0), 1.0), 0.5)};
      },
      {{f32, {kN}}}, "mask_store");
  std::vector<std::uint8_t> mask(static_cast<std::size_t>(kN), 0);
  std::vector<float> x(static_cast<std::size_t>(kN));
  for (std::int64_t i = 0; i < kN; ++i) {
    mask[std::size_t(i)] = std::uint8_t(i % 3 == 0);
    x[std::size_t(i)] = float(i % 13) / 6.0f - 1.0f;
  }
  x[5] = std::nanf("");  // NaN compares false: not below the rate
  for (const Graph* g : {&apply, &make}) {
    auto exe = on_cpu(*g, 2);
    EXPECT_EQ(count_text(exe->describe(), "compiled C ("), 1) << exe->describe();
    EXPECT_EQ(count_text(exe->describe(), "tile executor"), 0) << exe->describe();
  }
  Tensor got = on_cpu(apply, 2)->run(std::vector{
      Tensor::from<std::uint8_t>(mask).cast(DType::boolean), Tensor::from<float>(x)})[0];
  for (std::int64_t i = 0; i < kN; i += 7)
    if (i != 5) {
      EXPECT_EQ(got.data<float>()[i], i % 3 == 0 ? 2.0f * x[std::size_t(i)] : 0.0f) << i;
    }
  Tensor made = on_cpu(make, 2)->run(std::vector{Tensor::from<float>(x)})[0].cast(DType::u8);
  for (std::int64_t i = 0; i < kN; ++i) {
    const float u = std::min(std::max(x[std::size_t(i)] * 0.5f + 0.25f, 0.0f), 1.0f);
    ASSERT_EQ(made.data<std::uint8_t>()[i], i != 5 && u < 0.5f ? 1 : 0) << i;
  }
}

// Comparisons feeding selects and a cast beside floats, over rows of 10, stored and summed
// into the columns' totals (the cross-entropy gradient's last sweep): bool registers are
// ints, so the loop vectorises and runs compiled (with _Bool registers GCC 12 left it
// scalar, on the tile executor).
TEST(CpuNative, SelectsOnComparisonsRunCompiled) {
  GLIA_REQUIRE_CPU_BACKEND();
  GLIA_REQUIRE_C_COMPILER();
  ScopedCache cache("compare_select");
  constexpr std::int64_t kRows = 4096, kCols = 10;
  Graph g = trace(
      [](const std::vector<Expr>& in) {
        Expr scale = broadcast_to(reduce_max(in[1], {1}, true), {kRows, kCols});  // a row's
        Expr p = max(in[0] * scale, 1e-7);
        Expr slope = select(greater(p, 1e-7), 1.0, select(equal(p, 1e-7), 0.5, 0.0));
        Expr v = in[1] / p * slope * scale + cast(equal(in[1], scale), f32) * 0.25;
        return std::vector<Expr>{v, sum(v, {0})};
      },
      {{f32, {kRows, kCols}}, {f32, {kRows, kCols}}}, "compare_select");
  std::vector<float> x(std::size_t(kRows * kCols)), y(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    x[i] = i % 7 == 0 ? 1e-7f : float(i % 11) / 10.0f;  // 0, the clamp itself, above it
    y[i] = float(i % 5) - 2.0f;
  }
  std::vector<Tensor> in{Tensor::from<float>(x, Shape{kRows, kCols}),
                         Tensor::from<float>(y, Shape{kRows, kCols})};
  auto exe = on_cpu(g, 2);
  EXPECT_EQ(count_text(exe->describe(), "compiled C ("), 1) << exe->describe();  // every sweep
  EXPECT_EQ(count_text(exe->describe(), "tile executor"), 0) << exe->describe();
  expect_close(exe->run(in), interpret(g, in), 1e-5, 1e-6);
}

// exp in a compiled sweep: with AVX2 and FMA, glia's own vector variants (a polynomial,
// then vscalefps or two exact powers of two), elsewhere libmvec's (within 4 ulp); once as
// the compiler vectorises it here, once with 256-bit vectors preferred (the AVX2 variant:
// what GCC calls on Intel's AVX-512 parts). Against exp in double over [-87, 88.7], and
// its special values: NaN, +-inf, overflow to inf, underflow to 0 (subnormal results may
// flush to 0: the run sets FTZ), exp(+-0) = 1, and huge finite arguments.
TEST(CpuNative, ExpIsWithinItsUlpsAndKeepsItsSpecialValues) {
  GLIA_REQUIRE_CPU_BACKEND();
  GLIA_REQUIRE_C_COMPILER();
  constexpr std::int64_t kN = 1 << 17, kAt = 4096;  // the specials: inside the vector loop
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> special{std::nanf(""), inf,    -inf,   88.72f,  88.73f,  89.0f,
                                   0.0f,          -0.0f,  -87.5f, -100.0f, -104.0f, -105.0f,
                                   1e10f,         -1e10f, 3e38f,  -3e38f};
  std::vector<float> x(static_cast<std::size_t>(kN));
  for (std::int64_t i = 0; i < kN; ++i) x[std::size_t(i)] = -87.0f + 175.7f * float(i) / float(kN);
  std::copy(special.begin(), special.end(), x.begin() + kAt);
  Graph g = trace([](const std::vector<Expr>& in) { return std::vector<Expr>{exp(in[0])}; },
                  {{f32, {kN}}}, "exp");
  const double limit = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") ? 1.5 : 4.0;
  for (const std::string& cc :
       {aot::find_c_compiler(), aot::find_c_compiler() + " -mprefer-vector-width=256"}) {
    SCOPED_TRACE(cc);
    ScopedCache cache("exp");  // a library of its own for each compiler command
    ScopedEnv compiler("CC", cc);
    auto exe = on_cpu(g, 1, CompileOptions::Cpu::Fused::compiled);
    EXPECT_EQ(count_text(exe->describe(), "compiled C"), 1) << exe->describe();
    const Tensor out = exe->run(std::vector{Tensor::from<float>(x)})[0];
    const float* y = out.data<float>() + kAt;
    EXPECT_TRUE(std::isnan(y[0]));
    EXPECT_EQ(y[1], inf);
    EXPECT_EQ(y[2], 0.0f);
    EXPECT_EQ(y[4], inf);
    EXPECT_EQ(y[5], inf);
    EXPECT_EQ(y[6], 1.0f);
    EXPECT_EQ(y[7], 1.0f);
    for (int i : {8, 9}) EXPECT_TRUE(y[i] >= 0.0f && y[i] < 1.2e-38f) << special[std::size_t(i)];
    for (int i : {10, 11, 13, 15}) EXPECT_EQ(y[i], 0.0f) << special[std::size_t(i)];
    for (int i : {12, 14}) EXPECT_EQ(y[i], inf) << special[std::size_t(i)];
    double worst = 0;
    for (std::int64_t i = 0; i < kN; ++i) {
      const std::int64_t s = i - kAt;  // the specials checked above
      if (s >= 0 && s < 16 && s != 3) continue;
      const double want = std::exp(double(x[std::size_t(i)]));
      const float w = float(want);
      const double ulp = double(std::nextafter(w, inf)) - double(w);
      worst = std::max(worst, std::abs(double(out.data<float>()[i]) - want) / ulp);
    }
    EXPECT_LE(worst, limit);
  }
}

}  // namespace
}  // namespace glia::testing
