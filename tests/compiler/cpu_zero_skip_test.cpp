// The `cpu` backend's zero-skipping matmul: products whose left operand is mostly zeros
// (x·W forward, xᵀ·dz for W's gradient) summed over the nonzeros alone, against sums
// computed here in double; odd row counts, column blocks of every width and a tail, both
// layouts of the left operand, each ISA's loops, and within one any thread count giving
// the same bits;
// a dense operand, an infinity in the weights and the environment switch sending the
// product to oneDNN, and NaN in the left operand kept.
#include <cmath>
#include <cstdint>
#include <limits>

#include "compiler/cpu_test_util.hpp"
#include "scoped_env.hpp"

namespace glia::testing {
namespace {

// rows x cols floats, about `percent` of them nonzero, in a fixed pseudo-random pattern
// (values in [-1, 1), none zero).
std::vector<float> sparse_values(std::int64_t rows, std::int64_t cols, int percent,
                                 std::uint32_t seed) {
  std::vector<float> v(std::size_t(rows * cols));
  std::uint32_t s = seed;
  auto next = [&] {
    s = s * 1664525u + 1013904223u;
    return s >> 8;
  };
  for (float& x : v) {
    const bool nonzero = int(next() % 100) < percent;
    const float value = float(next() % 2000 + 1) / 1000.0f - 1.0005f;
    x = nonzero ? value : 0.0f;
  }
  return v;
}

// relu(x·w + bias) with x [m, k] row-major, in double.
std::vector<double> dense_relu_by_hand(const std::vector<float>& x, const std::vector<float>& w,
                                       const std::vector<float>& bias, std::int64_t m,
                                       std::int64_t k, std::int64_t n) {
  std::vector<double> y(std::size_t(m * n));
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < n; ++j) {
      double acc = bias[std::size_t(j)];
      for (std::int64_t q = 0; q < k; ++q)
        acc += double(x[std::size_t(i * k + q)]) * w[std::size_t(q * n + j)];
      y[std::size_t(i * n + j)] = acc < 0 ? 0 : acc;
    }
  return y;
}

Graph forward_graph(std::int64_t m, std::int64_t k, std::int64_t n) {
  return trace(
      [&](const std::vector<Expr>& in) {
        return std::vector<Expr>{relu(dot(in[0], in[1]) + broadcast(in[2], {m, n}, {1}))};
      },
      {{f32, {m, k}}, {f32, {k, n}}, {f32, {n}}}, "forward");
}

// xᵀ·dz with x [k, m]: the left operand read through strides, its columns contiguous.
Graph gradient_graph(std::int64_t m, std::int64_t k, std::int64_t n) {
  return trace(
      [](const std::vector<Expr>& in) {
        return std::vector<Expr>{dot_general(in[0], in[1], {0}, {0})};
      },
      {{f32, {k, m}}, {f32, {k, n}}}, "gradient");
}

// xᵀ·dz with x [k, m] and dz [k, n] row-major, in double.
std::vector<double> gradient_by_hand(const std::vector<float>& x, const std::vector<float>& dz,
                                     std::int64_t m, std::int64_t k, std::int64_t n) {
  std::vector<double> y(std::size_t(m * n));
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < n; ++j)
      for (std::int64_t q = 0; q < k; ++q)
        y[std::size_t(i * n + j)] += double(x[std::size_t(q * m + i)]) * dz[std::size_t(q * n + j)];
  return y;
}

std::string matmul_line(const Executable& exe) { return kernel_line(exe, "= matmul"); }

void expect_near(const Tensor& got, const std::vector<double>& want, double tol) {
  ASSERT_EQ(std::size_t(got.numel()), want.size());
  const float* g = got.data<float>();
  for (std::size_t i = 0; i < want.size(); ++i)
    ASSERT_NEAR(g[i], want[i], tol * (1 + std::abs(want[i]))) << "at " << i;
}

// m odd (a lone last row); n = 91: blocks of 48, 32 and 8 columns and a tail of 3 on
// AVX2, 64 and 16 and a tail of 11 on AVX-512, 3 x 24 and 16 and a tail of 3 on baseline
// SSE (the gradient's n = 77: 48, 16, 8 and 5 on AVX2).
constexpr std::int64_t kM = 81, kK = 300, kN = 91;

TEST(CpuZeroSkip, SparseRowsSkipTheirZeros) {
  GLIA_REQUIRE_CPU_BACKEND();
  auto x = sparse_values(kM, kK, 15, 1), w = sparse_values(kK, kN, 100, 2),
       b = sparse_values(1, kN, 100, 3);
  auto exe = compile_graph(forward_graph(kM, kK, kN), "cpu");
  auto out = exe->run(std::vector<Tensor>{
      Tensor::from(x, Shape{kM, kK}), Tensor::from(w, Shape{kK, kN}), Tensor::from(b, Shape{kN})});
  expect_near(out[0], dense_relu_by_hand(x, w, b, kM, kK, kN), 1e-5);
  EXPECT_THAT(matmul_line(*exe), ::testing::HasSubstr("glia zero-skipping matmul"));
  EXPECT_THAT(matmul_line(*exe), ::testing::HasSubstr("(1 of 1 runs)"));
}

TEST(CpuZeroSkip, ContiguousColumnsOfTheLeftOperand) {
  GLIA_REQUIRE_CPU_BACKEND();
  constexpr std::int64_t m = 301, k = 96, n = 77;
  auto x = sparse_values(k, m, 20, 4), dz = sparse_values(k, n, 100, 5);
  auto exe = compile_graph(gradient_graph(m, k, n), "cpu");
  const MatmulSpec& spec = *exe->program().specs<MatmulSpec>().at(0);
  ASSERT_EQ(spec.lhs_strides, (std::vector<std::int64_t>{1, m}));  // no transpose kernel
  auto out =
      exe->run(std::vector<Tensor>{Tensor::from(x, Shape{k, m}), Tensor::from(dz, Shape{k, n})});
  expect_near(out[0], gradient_by_hand(x, dz, m, k, n), 1e-5);
  EXPECT_THAT(matmul_line(*exe), ::testing::HasSubstr("(1 of 1 runs)"));
}

TEST(CpuZeroSkip, EveryIsaAndThreadCount) {
  GLIA_REQUIRE_CPU_BACKEND();
  auto x = sparse_values(kM, kK, 25, 6), w = sparse_values(kK, kN, 100, 7),
       b = sparse_values(1, kN, 100, 8);
  std::vector<Tensor> in{Tensor::from(x, Shape{kM, kK}), Tensor::from(w, Shape{kK, kN}),
                         Tensor::from(b, Shape{kN})};
  const auto want = dense_relu_by_hand(x, w, b, kM, kK, kN);
  for (const char* isa : {"", "avx2", "baseline"}) {
    std::vector<Tensor> first;
    for (int threads : {1, 2, 3}) {
      SCOPED_TRACE(cat("GLIA_CPU_ISA=", isa, ", ", threads, " threads"));
      ScopedEnv cap("GLIA_CPU_ISA", isa);
      CompileOptions o;
      o.cpu.threads = threads;
      auto exe = compile_graph(forward_graph(kM, kK, kN), "cpu", o);
      auto out = exe->run(in);
      expect_near(out[0], want, 1e-5);
      EXPECT_THAT(matmul_line(*exe), ::testing::HasSubstr("(1 of 1 runs)"));
      // Each element is summed by one thread, k ascending: the same bits on any number.
      if (first.empty())
        first = out;
      else
        EXPECT_TRUE(allclose(out[0], first[0], 0, 0));
    }
  }
}

// n of one block of columns (16 on every ISA, 48 on AVX2, 64 and 128 on AVX-512), weights
// of at most 128 KB: read where they lie, not packed, and checked for infinities as they
// are summed from; one infinity sends the run to the dense kernel, which writes the
// output again.
TEST(CpuZeroSkip, WeightsOfOneBlockAreReadInPlace) {
  GLIA_REQUIRE_CPU_BACKEND();
  constexpr std::int64_t m = 525,
                         k = 250;  // 2^21 multiply-adds at n = 16; 125 KB of weights at 128
  auto x = sparse_values(m, k, 15, 30);
  for (const char* isa : {"", "avx2", "baseline"})
    for (std::int64_t n : {16, 48, 64, 128}) {
      SCOPED_TRACE(cat("GLIA_CPU_ISA=", isa, ", n = ", n));
      ScopedEnv cap("GLIA_CPU_ISA", isa);
      auto w = sparse_values(k, n, 100, 31), b = sparse_values(1, n, 100, 32);
      std::vector<Tensor> first;
      for (int threads : {1, 2}) {
        CompileOptions o;
        o.cpu.threads = threads;
        auto exe = compile_graph(forward_graph(m, k, n), "cpu", o);
        auto out = exe->run(std::vector<Tensor>{
            Tensor::from(x, Shape{m, k}), Tensor::from(w, Shape{k, n}), Tensor::from(b, Shape{n})});
        expect_near(out[0], dense_relu_by_hand(x, w, b, m, k, n), 1e-5);
        EXPECT_THAT(matmul_line(*exe), ::testing::HasSubstr("(1 of 1 runs)"));
        if (first.empty())
          first = out;
        else
          EXPECT_TRUE(allclose(out[0], first[0], 0, 0));
      }
      // An infinity at k = 5, where row 0 is zero and row 1 is not.
      std::vector<float> xi = x, wi = w;
      xi[0 * k + 5] = 0.0f;
      xi[1 * k + 5] = 1.0f;
      wi[5 * n + 2] = std::numeric_limits<float>::infinity();
      Graph g =
          trace([](const std::vector<Expr>& in) { return std::vector<Expr>{dot(in[0], in[1])}; },
                {{f32, {m, k}}, {f32, {k, n}}}, "product");
      auto exe = compile_graph(g, "cpu");
      auto out = exe->run(
          std::vector<Tensor>{Tensor::from(xi, Shape{m, k}), Tensor::from(wi, Shape{k, n})});
      const float* y = out[0].data<float>();
      EXPECT_TRUE(std::isnan(y[0 * n + 2]));  // 0 x inf
      EXPECT_TRUE(std::isinf(y[1 * n + 2]));  // 1 x inf
      EXPECT_FALSE(std::isnan(y[0 * n + 3]));
      EXPECT_THAT(matmul_line(*exe), ::testing::HasSubstr("(0 of 1 runs)"));
    }
  ScopedEnv cap("GLIA_CPU_ISA", "baseline");
  EXPECT_THAT(matmul_line(*compile_graph(forward_graph(m, k, 16), "cpu")),
              ::testing::HasSubstr("rhs read in place"));
  EXPECT_THAT(matmul_line(*compile_graph(forward_graph(m, k, 64), "cpu")),
              ::testing::HasSubstr("rhs packed"));
  // Larger weights are summed in two halves of k (each thread reading one half) where
  // the output is small, else packed (each thread's share kept in its own core's cache).
  EXPECT_THAT(matmul_line(*compile_graph(forward_graph(m, 2 * k, 16), "cpu")),
              ::testing::HasSubstr("nonzero, rhs read in place"));
  EXPECT_THAT(matmul_line(*compile_graph(forward_graph(m, 2100, 16), "cpu")),
              ::testing::HasSubstr("k in halves, rhs read in place"));
  EXPECT_THAT(matmul_line(*compile_graph(forward_graph(9000, 2100, 16), "cpu")),
              ::testing::HasSubstr("rhs packed"));
}

// Weights of one block of columns over 128 KB, the output small: k in two halves, each
// thread summing one half's rows of the weights in place for its share of the pairs, then
// the halves added and the epilogue applied; the same bits on any thread count (one
// thread sums both halves apart too); an infinity in either half is found.
TEST(CpuZeroSkip, LargeWeightsOfOneBlockSumTwoHalvesOfK) {
  GLIA_REQUIRE_CPU_BACKEND();
  constexpr std::int64_t m = 129, k = 2101;  // a lone last row; the halves 1050 and 1051
  auto x = sparse_values(m, k, 15, 40);
  for (const char* isa : {"", "avx2", "baseline"})
    for (std::int64_t n : {16, 128}) {
      SCOPED_TRACE(cat("GLIA_CPU_ISA=", isa, ", n = ", n));
      ScopedEnv cap("GLIA_CPU_ISA", isa);
      auto w = sparse_values(k, n, 100, 41), b = sparse_values(1, n, 100, 42);
      const auto want = dense_relu_by_hand(x, w, b, m, k, n);
      std::vector<Tensor> first;
      for (int threads : {1, 2, 3, 4}) {
        SCOPED_TRACE(cat(threads, " threads"));
        CompileOptions o;
        o.cpu.threads = threads;
        auto exe = compile_graph(forward_graph(m, k, n), "cpu", o);
        auto out = exe->run(std::vector<Tensor>{
            Tensor::from(x, Shape{m, k}), Tensor::from(w, Shape{k, n}), Tensor::from(b, Shape{n})});
        expect_near(out[0], want, 1e-5);
        EXPECT_THAT(matmul_line(*exe), ::testing::HasSubstr("(1 of 1 runs)"));
        if (n == 16) {  // one block on every ISA
          EXPECT_THAT(matmul_line(*exe), ::testing::HasSubstr("k in halves"));
        }
        if (first.empty())
          first = out;
        else
          EXPECT_TRUE(allclose(out[0], first[0], 0, 0));
      }
      Graph g =
          trace([](const std::vector<Expr>& in) { return std::vector<Expr>{dot(in[0], in[1])}; },
                {{f32, {m, k}}, {f32, {k, n}}}, "product");
      for (std::int64_t at : {std::int64_t{5}, k - 3}) {  // in the first half, the second
        std::vector<float> xi = x, wi = w;
        xi[std::size_t(0 * k + at)] = 0.0f;
        xi[std::size_t(1 * k + at)] = 1.0f;
        wi[std::size_t(at * n + 2)] = std::numeric_limits<float>::infinity();
        auto exe = compile_graph(g, "cpu");
        auto out = exe->run(
            std::vector<Tensor>{Tensor::from(xi, Shape{m, k}), Tensor::from(wi, Shape{k, n})});
        const float* y = out[0].data<float>();
        EXPECT_TRUE(std::isnan(y[0 * n + 2])) << at;  // 0 x inf
        EXPECT_TRUE(std::isinf(y[1 * n + 2])) << at;  // 1 x inf
        EXPECT_FALSE(std::isnan(y[0 * n + 3])) << at;
        EXPECT_THAT(matmul_line(*exe), ::testing::HasSubstr("(0 of 1 runs)"));
      }
    }
}

// The gradient's layout (the left operand's columns contiguous) on each ISA and thread
// count: blocks of memory rows and elements transposed, with rows (k = 101) and elements
// (a chunk's, and m odd) left over; a NaN of the left operand is not zero there either.
TEST(CpuZeroSkip, ColumnsOnEveryIsaAndThreadCount) {
  GLIA_REQUIRE_CPU_BACKEND();
  constexpr std::int64_t m = 301, k = 101;
  auto x = sparse_values(k, m, 20, 33);
  for (std::int64_t n : {77, 128}) {
    auto dz = sparse_values(k, n, 100, 34);
    const auto want = gradient_by_hand(x, dz, m, k, n);
    std::vector<float> xn = x;
    xn[std::size_t(97 * m + 200)] = std::numeric_limits<float>::quiet_NaN();  // row 200
    for (const char* isa : {"", "avx2", "baseline"}) {
      std::vector<Tensor> first;
      for (int threads : {1, 2, 3}) {
        SCOPED_TRACE(cat("GLIA_CPU_ISA=", isa, ", ", threads, " threads, n = ", n));
        ScopedEnv cap("GLIA_CPU_ISA", isa);
        CompileOptions o;
        o.cpu.threads = threads;
        auto exe = compile_graph(gradient_graph(m, k, n), "cpu", o);
        auto out = exe->run(
            std::vector<Tensor>{Tensor::from(x, Shape{k, m}), Tensor::from(dz, Shape{k, n})});
        expect_near(out[0], want, 1e-5);
        if (first.empty())
          first = out;
        else
          EXPECT_TRUE(allclose(out[0], first[0], 0, 0));
        auto nan = exe->run(
            std::vector<Tensor>{Tensor::from(xn, Shape{k, m}), Tensor::from(dz, Shape{k, n})});
        const float* y = nan[0].data<float>();
        for (std::int64_t j = 0; j < n; ++j) ASSERT_TRUE(std::isnan(y[200 * n + j])) << j;
        EXPECT_FALSE(std::isnan(y[199 * n]));
        EXPECT_FALSE(std::isnan(y[201 * n]));
        EXPECT_THAT(matmul_line(*exe), ::testing::HasSubstr("(2 of 2 runs)"));
      }
    }
  }
}

TEST(CpuZeroSkip, DenseOperandsRunTheDenseKernel) {
  GLIA_REQUIRE_CPU_BACKEND();
  auto w = sparse_values(kK, kN, 100, 10), b = sparse_values(1, kN, 100, 11);
  auto exe = compile_graph(forward_graph(kM, kK, kN), "cpu");
  // 60% nonzero, and 35%: pairs of rows are then ~58% nonzero, as the sample of pairs
  // finds.
  for (int percent : {60, 35}) {
    auto x = sparse_values(kM, kK, percent, 9);
    auto out =
        exe->run(std::vector<Tensor>{Tensor::from(x, Shape{kM, kK}), Tensor::from(w, Shape{kK, kN}),
                                     Tensor::from(b, Shape{kN})});
    expect_near(out[0], dense_relu_by_hand(x, w, b, kM, kK, kN), 1e-5);
  }
  EXPECT_THAT(matmul_line(*exe), ::testing::HasSubstr("(0 of 2 runs), else onednn"));
}

TEST(CpuZeroSkip, AnInfinityInTheWeightsKeepsZeroTimesInfinityNaN) {
  GLIA_REQUIRE_CPU_BACKEND();
  auto x = sparse_values(kM, kK, 15, 12), w = sparse_values(kK, kN, 100, 13);
  x[0 * kK + 5] = 0.0f;  // row 0 has a zero at k = 5, row 1 a 1
  x[1 * kK + 5] = 1.0f;
  w[5 * kN + 2] = std::numeric_limits<float>::infinity();
  // No relu: oneDNN's maps NaN to 0.
  Graph g = trace([](const std::vector<Expr>& in) { return std::vector<Expr>{dot(in[0], in[1])}; },
                  {{f32, {kM, kK}}, {f32, {kK, kN}}}, "product");
  auto exe = compile_graph(g, "cpu");
  auto out =
      exe->run(std::vector<Tensor>{Tensor::from(x, Shape{kM, kK}), Tensor::from(w, Shape{kK, kN})});
  const float* y = out[0].data<float>();
  EXPECT_TRUE(std::isnan(y[0 * kN + 2]));  // 0 x inf
  EXPECT_TRUE(std::isinf(y[1 * kN + 2]));  // 1 x inf
  EXPECT_FALSE(std::isnan(y[0 * kN + 3]));
  EXPECT_THAT(matmul_line(*exe), ::testing::HasSubstr("(0 of 1 runs)"));
}

TEST(CpuZeroSkip, NaNInTheLeftOperandIsNotZero) {
  GLIA_REQUIRE_CPU_BACKEND();
  auto x = sparse_values(kM, kK, 15, 15), w = sparse_values(kK, kN, 100, 16),
       b = sparse_values(1, kN, 100, 17);
  x[4 * kK + 17] = std::numeric_limits<float>::quiet_NaN();
  auto exe = compile_graph(forward_graph(kM, kK, kN), "cpu");
  auto out = exe->run(std::vector<Tensor>{
      Tensor::from(x, Shape{kM, kK}), Tensor::from(w, Shape{kK, kN}), Tensor::from(b, Shape{kN})});
  const float* y = out[0].data<float>();
  for (std::int64_t j = 0; j < kN; ++j) EXPECT_TRUE(std::isnan(y[4 * kN + j])) << j;
  EXPECT_FALSE(std::isnan(y[3 * kN]));
  EXPECT_FALSE(std::isnan(y[5 * kN]));
  EXPECT_THAT(matmul_line(*exe), ::testing::HasSubstr("(1 of 1 runs)"));
}

TEST(CpuZeroSkip, TheEnvironmentSwitchAndSmallProductsStayDense) {
  GLIA_REQUIRE_CPU_BACKEND();
  {
    ScopedEnv off("GLIA_CPU_ZERO_SKIP", "0");
    auto exe = compile_graph(forward_graph(kM, kK, kN), "cpu");
    EXPECT_THAT(matmul_line(*exe), ::testing::Not(::testing::HasSubstr("zero-skipping")));
  }
  // Below 2^21 multiply-adds, or with n below 16, the check would cost too much.
  auto small = compile_graph(forward_graph(kM, kK, 80), "cpu");  // 1,944,000
  EXPECT_THAT(matmul_line(*small), ::testing::Not(::testing::HasSubstr("zero-skipping")));
  auto narrow = compile_graph(forward_graph(2000, kK, 10), "cpu");
  EXPECT_THAT(matmul_line(*narrow), ::testing::Not(::testing::HasSubstr("zero-skipping")));
}

}  // namespace
}  // namespace glia::testing
