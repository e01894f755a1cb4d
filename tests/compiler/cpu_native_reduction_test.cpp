// Compiled reductions split between threads: over the whole array (each thread's partial
// accumulators merged in thread order) and over outer or middle axes (stack arrays), against
// sums by hand.
#include <cmath>

#include "compiler/cpu_native_util.hpp"
#include "glia/autograd/grad.hpp"

namespace glia::testing {
namespace {

// Whole-array reductions: each thread accumulates its part of the outer loop in blocks of
// lanes (and a remainder), writes its partials, and the merge combines them in thread
// order. Several accumulators of different types in one sweep; a NaN in a lane block, in
// a remainder and in the merge all reach the max.
TEST(CpuNative, WholeArrayReductionsSplitBetweenThreadsMergeTheirPartials) {
  GLIA_REQUIRE_CPU_BACKEND();
  GLIA_REQUIRE_C_COMPILER();
  ScopedCache cache("partials");
  constexpr std::int64_t kN = 200003;  // halves and thirds of unequal length, not of 16
  Graph g = trace(
      [](const std::vector<Expr>& in) {
        Expr e = exp(in[0]);
        return std::vector<Expr>{sum(in[0]), reduce_max(in[0]), reduce_min(in[0]),
                                 sum(e),     sum(in[1]),        e * 2.0};
      },
      {{f32, {kN}}, {i32, {kN}}}, "whole_array");
  std::vector<float> x(static_cast<std::size_t>(kN));
  std::vector<std::int32_t> k(static_cast<std::size_t>(kN));
  double want_sum = 0, want_exp = 0;
  std::int64_t want_k = 0;
  float want_max = -1e30f, want_min = 1e30f;
  for (std::int64_t i = 0; i < kN; ++i) {
    x[std::size_t(i)] = float((i * 37) % 1009) / 1009.f - 0.5f;
    k[std::size_t(i)] = std::int32_t(i % 97) - 40;
  }
  x[123456] = 0.75f;  // the max in the second thread's half
  x[17] = -0.875f;    // the min in the first lane block
  for (std::int64_t i = 0; i < kN; ++i) {
    want_sum += x[std::size_t(i)];
    want_exp += std::exp(double(x[std::size_t(i)]));
    want_k += k[std::size_t(i)];
    want_max = std::max(want_max, x[std::size_t(i)]);
    want_min = std::min(want_min, x[std::size_t(i)]);
  }
  for (int threads : {1, 2, 3}) {
    auto exe = on_cpu(g, threads);
    EXPECT_EQ(count_text(exe->describe(), "glia tile executor"), 0) << exe->describe();
    std::vector<Tensor> got =
        exe->run(std::vector<Tensor>{Tensor::from<float>(x), Tensor::from<std::int32_t>(k)});
    ASSERT_EQ(got.size(), 6u);
    EXPECT_NEAR(got[0].item<float>(), want_sum, 1e-3) << threads << " threads";
    EXPECT_EQ(got[1].item<float>(), want_max) << threads << " threads";
    EXPECT_EQ(got[2].item<float>(), want_min) << threads << " threads";
    EXPECT_NEAR(got[3].item<float>(), want_exp, 1e-5 * want_exp) << threads << " threads";
    EXPECT_EQ(got[4].item<std::int32_t>(), want_k) << threads << " threads";
    EXPECT_FLOAT_EQ(got[5].data<float>()[kN - 1], 2.f * std::exp(x[std::size_t(kN - 1)]));
  }
  // NaN wherever it falls: a lane block of the first part, the last part's remainder.
  for (std::int64_t at : {std::int64_t(5), kN - 2}) {
    std::vector<float> y = x;
    y[std::size_t(at)] = std::nanf("");
    for (int threads : {1, 2, 3}) {
      auto exe = on_cpu(g, threads);
      std::vector<Tensor> got =
          exe->run(std::vector<Tensor>{Tensor::from<float>(y), Tensor::from<std::int32_t>(k)});
      EXPECT_TRUE(std::isnan(got[1].item<float>())) << "NaN at " << at << ", " << threads;
      EXPECT_TRUE(std::isnan(got[2].item<float>())) << "NaN at " << at << ", " << threads;
      EXPECT_TRUE(std::isnan(got[0].item<float>())) << "NaN at " << at << ", " << threads;
    }
  }
}

// Reductions over outer axes (a bias's gradient: the sum over every axis but channels)
// and over a middle axis: each thread accumulates its part of the outer loop in an array on
// the stack, the merge adds the threads' arrays in thread order. A relu's adjoint (a
// select widened into f64 sums) in the same sweep still vectorises.
TEST(CpuNative, ReductionsOverOuterAxesRunCompiledAndSplitBetweenThreads) {
  GLIA_REQUIRE_CPU_BACKEND();
  GLIA_REQUIRE_C_COMPILER();
  ScopedCache cache("columns");
  constexpr std::int64_t kN = 1001, kH = 7, kC = 37;  // rows split unevenly; odd channels
  Graph g = trace(
      [](const std::vector<Expr>& in) {
        Expr d = select(greater(in[1], 0.0), in[0], 0.0);
        return std::vector<Expr>{d, sum(d, {0, 1}), reduce_max(in[0], {0, 1}), sum(in[0], {1})};
      },
      {{f32, {kN, kH, kC}}, {f32, {kN, kH, kC}}}, "columns");
  std::vector<float> g0(std::size_t(kN * kH * kC)), y(g0.size());
  for (std::size_t i = 0; i < g0.size(); ++i) {
    g0[i] = float((i * 29) % 1013) / 1013.f - 0.5f;
    y[i] = float((i * 17) % 89) / 89.f - 0.3f;
  }
  // By hand: the sums in f64, the maxima, and the middle-axis sums.
  std::vector<double> col(kC, 0.0), mid(std::size_t(kN * kC), 0.0);
  std::vector<float> top(kC, -1e30f);
  for (std::int64_t n = 0; n < kN; ++n)
    for (std::int64_t h = 0; h < kH; ++h)
      for (std::int64_t c = 0; c < kC; ++c) {
        const std::size_t i = std::size_t((n * kH + h) * kC + c);
        col[std::size_t(c)] += y[i] > 0 ? g0[i] : 0.0f;
        top[std::size_t(c)] = std::max(top[std::size_t(c)], g0[i]);
        mid[std::size_t(n * kC + c)] += g0[i];
      }
  std::vector<Tensor> in{Tensor::from<float>(g0, Shape{kN, kH, kC}),
                         Tensor::from<float>(y, Shape{kN, kH, kC})};
  for (int threads : {1, 2, 3}) {
    SCOPED_TRACE(cat(threads, " threads"));
    auto exe = on_cpu(g, threads);
    EXPECT_EQ(count_text(exe->describe(), "glia tile executor"), 0) << exe->describe();
    std::vector<Tensor> got = exe->run(in);
    ASSERT_EQ(got.size(), 4u);
    for (std::int64_t c = 0; c < kC; ++c) {
      EXPECT_NEAR(got[1].data<float>()[c], col[std::size_t(c)], 1e-4) << "channel " << c;
      EXPECT_EQ(got[2].data<float>()[c], top[std::size_t(c)]) << "channel " << c;
    }
    for (std::int64_t i = 0; i < kN * kC; i += 97)
      EXPECT_NEAR(got[3].data<float>()[i], mid[std::size_t(i)], 1e-5) << "element " << i;
    expect_close({got[0]}, {interpret(g, in)[0]}, 0, 0);
  }
}

// Row reductions whose rows are long enough for lanes: blocks of four sets of 16 lanes,
// then blocks of 16, then a remainder. Each row's largest element (or a NaN) sits in
// another of those parts, so every part must reach the result.
TEST(CpuNative, RowReductionsReachEveryLaneSetBlockAndRemainder) {
  GLIA_REQUIRE_CPU_BACKEND();
  GLIA_REQUIRE_C_COMPILER();
  ScopedCache cache("lane_sets");
  constexpr std::int64_t kRows = 40;
  for (std::int64_t cols : {32, 47, 64, 79, 80, 95, 143}) {
    SCOPED_TRACE(cat(cols, " columns"));
    Graph g = trace(
        [](const std::vector<Expr>& in) {
          return std::vector<Expr>{reduce_max(in[0], {1}), sum(in[0], {1})};
        },
        {{f32, {kRows, cols}}}, "rows");
    std::vector<float> x(std::size_t(kRows * cols));
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = float((i * 13) % 31) / 31.f - 0.5f;
    for (std::int64_t r = 0; r < kRows; ++r) {
      const std::int64_t at = (r * 7) % cols;  // lane sets 0-3, the 16-block, the remainder
      x[std::size_t(r * cols + at)] = r % 5 == 4 ? std::nanf("") : 1.f + float(r);
    }
    std::vector<Tensor> got =
        on_cpu(g, 1, CompileOptions::Cpu::Fused::compiled)
            ->run(std::vector<Tensor>{Tensor::from<float>(x, Shape{kRows, cols})});
    for (std::int64_t r = 0; r < kRows; ++r) {
      const float* row = x.data() + r * cols;
      double total = 0;
      for (std::int64_t c = 0; c < cols; ++c) total += row[c];
      if (r % 5 == 4) {
        EXPECT_TRUE(std::isnan(got[0].data<float>()[r])) << "row " << r;
        EXPECT_TRUE(std::isnan(got[1].data<float>()[r])) << "row " << r;
      } else {
        EXPECT_EQ(got[0].data<float>()[r], 1.f + float(r)) << "row " << r;
        EXPECT_NEAR(got[1].data<float>()[r], total, 1e-4) << "row " << r;
      }
    }
  }
}

// Row reductions whose rows are too short for lanes (a classifier's 10 classes): each
// row's operands are staged in an array and combined in order after the row, so the loop
// vectorises, exp and log included. The cross-entropy's gradient (a clamp feeding a
// select) left its loop scalar, and the tile executor ran that sweep. Checked against sums
// by hand: each row's max exactly, a NaN in a row in every result of that row only.
TEST(CpuNative, ShortRowReductionsVectoriseTheirRows) {
  GLIA_REQUIRE_CPU_BACKEND();
  GLIA_REQUIRE_C_COMPILER();
  ScopedCache cache("short_rows");
  constexpr std::int64_t kRows = 37;
  for (std::int64_t cols : {8, 10, 13, 31}) {
    SCOPED_TRACE(cat(cols, " columns"));
    Graph g = trace(
        [](const std::vector<Expr>& in) {
          Expr p = softmax(in[0]);
          Expr loss = -sum(in[1] * log(max(p, 1e-7)));
          std::vector<Expr> out = gradients(loss, {in[0]});
          out.push_back(loss);
          out.push_back(reduce_max(in[0], {1}));
          out.push_back(sum(exp(in[0]), {1}));
          return out;
        },
        {{f32, {kRows, cols}}, {f32, {kRows, cols}}}, "short_rows");
    std::vector<float> x(std::size_t(kRows * cols)), y(x.size(), 0.f);
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = float((i * 13) % 29) / 7.f - 2.f;
    for (std::int64_t r = 0; r < kRows; ++r) {
      x[std::size_t(r * cols + (r * 5) % cols)] = 3.f + float(r % 3);  // the row's max
      y[std::size_t(r * cols + (r * 3) % cols)] = 1.f;
    }
    x[std::size_t(11 * cols + cols - 1)] = std::nanf("");  // row 11's last column
    std::vector<Tensor> in{Tensor::from<float>(x, Shape{kRows, cols}),
                           Tensor::from<float>(y, Shape{kRows, cols})};
    auto exe = on_cpu(g, 1);
    EXPECT_EQ(count_text(exe->describe(), "glia tile executor"), 0) << exe->describe();
    std::vector<Tensor> got = exe->run(in);
    ASSERT_EQ(got.size(), 4u);
    for (std::int64_t r = 0; r < kRows; ++r) {
      const float* row = x.data() + r * cols;
      const float* grad = got[0].data<float>() + r * cols;
      if (r == 11) {
        EXPECT_TRUE(std::isnan(got[2].data<float>()[r]));
        EXPECT_TRUE(std::isnan(got[3].data<float>()[r]));
        EXPECT_TRUE(std::isnan(grad[0]));
        continue;
      }
      double top = row[0], total = 0, shifted = 0;
      for (std::int64_t c = 0; c < cols; ++c) top = std::max(top, double(row[c]));
      for (std::int64_t c = 0; c < cols; ++c) {
        total += std::exp(double(row[c]));
        shifted += std::exp(double(row[c]) - top);
      }
      EXPECT_EQ(got[2].data<float>()[r], float(top)) << "row " << r;
      EXPECT_NEAR(got[3].data<float>()[r], total, 1e-5 * total) << "row " << r;
      // d/dx of -log(softmax(x)[t]) is softmax(x) - onehot(t) where no p is clamped.
      for (std::int64_t c = 0; c < cols; ++c) {
        const double p = std::exp(double(row[c]) - top) / shifted;
        EXPECT_NEAR(grad[c], p - y[std::size_t(r * cols + c)], 1e-5) << "row " << r << ", " << c;
      }
      if (r == 12) {
        EXPECT_FALSE(std::isnan(grad[0]));  // the NaN stays in its row
      }
    }
    EXPECT_TRUE(std::isnan(got[1].item<float>()));  // the loss sums row 11 too
  }
}

// An f32 sum's lanes add chunks of 16 values in f32 and widen them into f64 lanes: the sum
// of 2^20 values 1 + 2^-20 is exactly 2^20 + 1 (each lane's f32 chunk sums are exact),
// where f32 lanes across the whole array would round each 2^-20 away once a lane passed
// 8 (2^20 in all: 2^20 exactly).
TEST(CpuNative, F32SumsWidenTheirLanesEveryChunk) {
  GLIA_REQUIRE_CPU_BACKEND();
  GLIA_REQUIRE_C_COMPILER();
  ScopedCache cache("f32_chunks");
  constexpr std::int64_t kN = std::int64_t(1) << 20;
  Graph g = trace([](const std::vector<Expr>& in) { return std::vector<Expr>{sum(in[0])}; },
                  {{f32, {kN}}}, "chunks");
  const std::vector<float> x(std::size_t(kN), 1.f + std::ldexp(1.f, -20));
  for (int threads : {1, 2}) {
    auto exe = on_cpu(g, threads, CompileOptions::Cpu::Fused::compiled);
    EXPECT_EQ(exe->run(std::vector<Tensor>{Tensor::from<float>(x)})[0].item<float>(), float(kN + 1))
        << threads << " threads";
  }
}

}  // namespace
}  // namespace glia::testing
