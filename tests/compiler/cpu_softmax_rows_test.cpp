// The cpu backend's softmax over short rows (backends/cpu/softmax_rows.cpp): a fused group
// that is exactly softmax over the last axis runs as one kernel, row by row in vector
// registers, with AVX-512 and with AVX2 (GLIA_CPU_ISA=avx2), against the interpreter:
// rows of every tail length, a chunk boundary, rows split between threads, and NaN,
// infinities and huge values where they fall. Rows longer than 16,384 run in two passes
// (backends/cpu/softmax_long.cpp), on both ISAs, checked the same ways; softmax over
// other axes, and long rows whose exponentials another kernel reads, keep the sweeps.
#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <utility>

#include "compiler/cpu_test_util.hpp"
#include "scoped_env.hpp"

namespace glia::testing {
namespace {

constexpr const char* kKernel = "-> glia softmax rows";

// The kernel's loops need AVX2 and FMA at least (else the sweeps run).
#define GLIA_REQUIRE_AVX2()                                              \
  GLIA_REQUIRE_CPU_BACKEND();                                            \
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) \
  GTEST_SKIP() << "no AVX2 and FMA: softmax runs on the sweeps"

Graph softmax_graph(const Shape& shape, int axis = -1) {
  return trace(
      [axis](const std::vector<Expr>& in) { return std::vector<Expr>{softmax(in[0], axis)}; },
      {{f32, shape}}, "softmax");
}

std::unique_ptr<Executable> on_cpu(const Graph& g, int threads = 0) {
  CompileOptions options;
  options.cpu.threads = threads;
  return compile_graph(g, "cpu", options);
}

// The softmax on the cpu backend, which must run it on `kernel`, and on the interpreter;
// nullopt (a failure recorded) where another kernel runs it.
std::optional<std::pair<Tensor, Tensor>> on_kernel_and_interp(const Graph& g, const Tensor& x,
                                                              int threads, const char* kernel) {
  auto exe = on_cpu(g, threads);
  if (exe->describe().find(kernel) == std::string::npos) {
    ADD_FAILURE() << "not on '" << kernel << "': " << exe->describe();
    return std::nullopt;
  }
  return std::pair{exe->run(std::vector<Tensor>{x})[0],
                   compile_graph(g, "interp")->run(std::vector<Tensor>{x})[0]};
}

// Each element as the interpreter gives it: NaN where it has NaN, else within rounding.
void expect_matches_interp(const Graph& g, const Tensor& x, int threads = 0,
                           const char* kernel = kKernel) {
  auto both = on_kernel_and_interp(g, x, threads, kernel);
  if (!both) return;
  const auto& [got, want] = *both;
  ASSERT_EQ(got.type(), want.type());
  const float* p = got.data<float>();
  const float* q = want.data<float>();
  for (std::int64_t i = 0; i < got.numel(); ++i) {
    if (std::isnan(q[i])) {
      EXPECT_TRUE(std::isnan(p[i])) << "element " << i << " of " << got.type().to_string();
      continue;
    }
    EXPECT_NEAR(p[i], q[i], 2e-6 * std::abs(q[i]) + 1e-7)
        << "element " << i << " of " << got.type().to_string();
  }
}

// Long rows, element by element against the interpreter, relative error only (results
// over a million columns are ~1e-6): each within the rounding of its argument x - max,
// which the kernel takes from its block's max and the interpreter from the row's
// (|x - max| 2^-24 each), and a few ulps more.
void expect_long_rows_match_interp(const Graph& g, const Tensor& x, int threads) {
  auto both = on_kernel_and_interp(g, x, threads, "-> glia softmax long rows");
  if (!both) return;
  const auto& [got, want] = *both;
  const std::int64_t cols = x.shape().dims().back(), rows = x.numel() / cols;
  const float *in = x.data<float>(), *p = got.data<float>(), *q = want.data<float>();
  for (std::int64_t r = 0; r < rows; ++r) {
    const float max = *std::max_element(in + r * cols, in + (r + 1) * cols);
    for (std::int64_t i = r * cols; i < (r + 1) * cols; ++i) {
      const double tolerance = (std::abs(double(in[i]) - max) * 1.2e-7 + 1e-6) * std::abs(q[i]);
      EXPECT_NEAR(p[i], q[i], tolerance + 1e-37) << "element " << i;
    }
  }
}

void expect_every_shape_matches() {
  // Every tail either side of a vector (over one column, simplify leaves no reductions).
  for (std::int64_t cols = 2; cols <= 19; ++cols) {
    SCOPED_TRACE(cat(cols, " columns"));
    expect_matches_interp(softmax_graph({2, cols}), seeded({2, cols}, f32, -8, 8, 3));
  }
  for (Shape shape :
       {Shape{1000}, Shape{1, 10}, Shape{7, 37}, Shape{2, 1041}, Shape{3, 2048}, Shape{4, 16384}}) {
    SCOPED_TRACE(shape.to_string());
    expect_matches_interp(softmax_graph(shape), seeded(shape, f32, -30, 30, 5));
  }
}

TEST(CpuSoftmaxRows, RowsOfEveryLengthMatchTheInterpreter) {
  GLIA_REQUIRE_AVX2();
  expect_every_shape_matches();
}

TEST(CpuSoftmaxRows, TheAvx2RowsMatchTheInterpreter) {
  GLIA_REQUIRE_AVX2();
  ScopedEnv isa("GLIA_CPU_ISA", "avx2");
  expect_every_shape_matches();
}

// Rows enough to split between threads (on glia's team): each part a range of rows.
TEST(CpuSoftmaxRows, ManyRowsSplitBetweenThreads) {
  GLIA_REQUIRE_AVX2();
  Graph g = softmax_graph({64, 200});
  expect_matches_interp(g, seeded({64, 200}, f32, -10, 10, 9), 4);
  EXPECT_NE(on_cpu(g, 4)->describe().find("spinning team"), std::string::npos);
}

// NaN anywhere makes its row NaN; +inf makes its row NaN (inf - inf); a row of -inf is
// NaN; huge values of either sign, and one row of all-equal values, are finite.
TEST(CpuSoftmaxRows, SpecialValuesReachTheirRowsAsInTheInterpreter) {
  GLIA_REQUIRE_AVX2();
  const float inf = std::numeric_limits<float>::infinity();
  constexpr std::int64_t kCols = 83;  // five vectors of 16 and a tail of 3
  for (const char* isa : {"avx512", "avx2"}) {
    ScopedEnv cap("GLIA_CPU_ISA", isa);
    Tensor x = seeded({7, kCols}, f32, -5, 5, 11);
    float* p = x.data<float>();
    p[0 * kCols + 2] = std::nanf("");   // in the first vector
    p[1 * kCols + 81] = std::nanf("");  // in the tail
    p[2 * kCols + 40] = inf;            // +inf
    for (std::int64_t c = 0; c < kCols; ++c) p[3 * kCols + c] = -inf;
    p[4 * kCols + 5] = 1e30f, p[4 * kCols + 6] = -1e30f;
    for (std::int64_t c = 0; c < kCols; ++c) p[5 * kCols + c] = 2.5f;
    p[6 * kCols + 82] = 60.f;  // the largest in the tail
    SCOPED_TRACE(isa);
    expect_matches_interp(softmax_graph({7, kCols}), x);
  }
}

constexpr const char* kLongKernel = "-> glia softmax long rows";

// Long rows: one row over threads; rows ending in a partial block and a partial vector;
// rows whose values span far more than exp's range, so that blocks' maxima differ by more
// than exp can scale (their factors underflow to 0, as the interpreter's exp(x - M) does).
void expect_long_rows_match() {
  expect_long_rows_match_interp(softmax_graph({16385}), seeded({16385}, f32, -30, 30, 21), 0);
  expect_long_rows_match_interp(softmax_graph({3, 20003}), seeded({3, 20003}, f32, -8, 8, 22), 2);
  Tensor wide = seeded({2, 40000}, f32, -1, 1, 23);
  float* p = wide.data<float>();
  for (std::int64_t i = 0; i < wide.numel(); ++i) p[i] += float(i % 40000) * 0.01f;  // 0..400
  expect_long_rows_match_interp(softmax_graph({2, 40000}), wide, 4);
  Tensor big = seeded({1000003}, f32, -5, 5, 24);
  expect_long_rows_match_interp(softmax_graph({1000003}), big, 2);
}

TEST(CpuSoftmaxLong, LongRowsMatchTheInterpreter) {
  GLIA_REQUIRE_AVX2();
  expect_long_rows_match();
}

TEST(CpuSoftmaxLong, TheAvx2LongRowsMatchTheInterpreter) {
  GLIA_REQUIRE_AVX2();
  ScopedEnv isa("GLIA_CPU_ISA", "avx2");
  expect_long_rows_match();
}

// Rows of 3 blocks and a tail: NaN in one block makes its row NaN; +inf makes its row NaN;
// a row of -inf is NaN; a block of -inf in a finite row is 0; the max in the tail; a block
// whose last vector is partial (5 and 15 columns of 16) holds NaN or the row's max there.
TEST(CpuSoftmaxLong, SpecialValuesReachTheirRowsAsInTheInterpreter) {
  GLIA_REQUIRE_AVX2();
  const float inf = std::numeric_limits<float>::infinity();
  for (std::int64_t tail : {5, 15}) {
    const std::int64_t cols = 3 * 4096 + 4096 + tail;  // 4 blocks and a partial fifth
    Tensor x = seeded({7, cols}, f32, -5, 5, 25);
    float* p = x.data<float>();
    p[0 * cols + 5000] = std::nanf("");
    p[1 * cols + 9000] = inf;
    for (std::int64_t c = 0; c < cols; ++c) p[2 * cols + c] = -inf;
    for (std::int64_t c = 4096; c < 8192; ++c) p[3 * cols + c] = -inf;
    p[4 * cols + cols - 1] = 70.f;
    p[5 * cols + cols - 2] = std::nanf("");
    for (std::int64_t c = 0; c < cols - tail; ++c) p[6 * cols + c] = -inf;  // only the tail
    for (const char* isa : {"avx512", "avx2"}) {
      ScopedEnv cap("GLIA_CPU_ISA", isa);
      SCOPED_TRACE(cat(isa, ", a tail of ", tail));
      expect_matches_interp(softmax_graph({7, cols}), x, 2, kLongKernel);
    }
  }
}

// Softmax's exponentials read by another kernel too: here also returned. Long rows keep
// the sweeps then, which write them; short rows' kernel writes them anyway.
Graph softmax_and_exp_graph(const Shape& shape) {
  return trace(
      [](const std::vector<Expr>& in) {
        Expr e = exp(in[0] - reduce_max(in[0], {-1}, true));
        return std::vector<Expr>{e * reciprocal(sum(e, {-1}, true)), e};
      },
      {{f32, shape}}, "softmax_and_exp");
}

// The rows kernel's exp for arguments <= 0, read where it writes the exponentials (here
// also returned): rows of 0 (each row's max) and then 16,383 values spread over [-88, 0],
// so that each exponential is exp(x) as the kernel computes it. Against exp in double, in
// ulps: within 0.70 with AVX-512, 0.89 with AVX2 (each checked over every float of
// [-88, 0] when written); 0 where exp is below 2^-126 (the runs flush to zero).
TEST(CpuSoftmaxRows, ExponentialsAreWithinTheirUlps) {
  GLIA_REQUIRE_AVX2();
  constexpr std::int64_t kRows = 64, kCols = 16384;
  Tensor x = seeded({kRows, kCols}, f32, 0, 1, 31);
  float* p = x.data<float>();
  for (std::int64_t r = 0; r < kRows; ++r) {
    p[r * kCols] = 0;
    for (std::int64_t c = 1; c < kCols; ++c)  // the rows interleaved over the range
      p[r * kCols + c] =
          float(-88.0 * double((c - 1) * kRows + r) / double((kCols - 1) * kRows - 1));
  }
  const double smallest = std::numeric_limits<float>::min();
  const bool has_avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
                          __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl");
  for (const char* isa : {"avx512", "avx2"}) {
    ScopedEnv cap("GLIA_CPU_ISA", isa);
    const bool wide = std::string(isa) == "avx512" && has_avx512;
    auto exe = on_cpu(softmax_and_exp_graph({kRows, kCols}));
    ASSERT_NE(exe->describe().find(kKernel), std::string::npos) << exe->describe();
    Tensor e = exe->run(std::vector<Tensor>{x})[1];
    const float* q = e.data<float>();
    double worst = 0;
    for (std::int64_t i = 0; i < x.numel(); ++i) {
      const double want = std::exp(double(p[i]));
      if (want < smallest) {
        EXPECT_EQ(q[i], 0.f) << "exp(" << p[i] << ") on " << isa;
        continue;
      }
      const float w = static_cast<float>(want);
      const double ulp = double(std::nextafter(w, 2 * w)) - double(w);
      worst = std::max(worst, std::abs(double(q[i]) - want) / ulp);
    }
    EXPECT_LE(worst, wide ? 0.70 : 0.89) << isa;
    EXPECT_GT(worst, 0.3) << isa;  // the check sees the rounding at all
  }
}

TEST(CpuSoftmaxRows, OtherAxesAndReadExponentialsKeepTheSweeps) {
  GLIA_REQUIRE_CPU_BACKEND();
  for (const Graph& g : {softmax_graph({6, 40}, 0), softmax_and_exp_graph({2, 16385})}) {
    auto exe = on_cpu(g);
    EXPECT_EQ(exe->describe().find("-> glia softmax"), std::string::npos) << exe->describe();
    EXPECT_EQ(count_kernels(*exe, "fused"), 1) << exe->describe();
  }
  expect_cpu_matches_interp(softmax_graph({6, 40}, 0), {seeded({6, 40}, f32, -3, 3, 2)});
  expect_cpu_matches_interp(softmax_and_exp_graph({2, 16385}), {seeded({2, 16385}, f32, -3, 3, 4)});
}

}  // namespace
}  // namespace glia::testing
