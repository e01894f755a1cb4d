// The `cpu` backend's zero-skipping data gradient of a convolution: the input gradient of
// sum(conv(x, w) * dy) where dy is mostly zeros (max pooling's adjoint's pattern, or
// scattered), against sums computed here in double: kernels of 1x1 to 5x5 and uneven
// ones, paddings up to the kernel's reach and unlike along the two axes, input channels in one to
// four vectors, each ISA's loops, and within one any thread count giving the same bits; a dense dy,
// an infinity in the weights and the environment switch sending the pass to the dense kernel, and
// NaN in dy kept.
#include <cmath>
#include <cstdint>
#include <limits>

#include "compiler/cpu_test_util.hpp"
#include "glia/autograd/grad.hpp"
#include "scoped_env.hpp"

namespace glia::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// x [n, h, w, c], weights [kh, kw, c, k], padding pad_h above and below, pad_w left and
// right, unit strides.
struct Case {
  std::int64_t n, h, w, c, k, kh, kw, pad_h, pad_w;
  std::int64_t oh() const { return h + 2 * pad_h - kh + 1; }
  std::int64_t ow() const { return w + 2 * pad_w - kw + 1; }
  Shape x() const { return {n, h, w, c}; }
  Shape weights() const { return {kh, kw, c, k}; }
  Shape dy() const { return {n, oh(), ow(), k}; }
};

// The gradient of sum(conv(x, weights) * dy) with respect to x: the convolution's data
// gradient with dy as its output gradient (channels-last in the graph's layout).
Graph data_gradient_graph(const Case& c) {
  return trace(
      [&](const std::vector<Expr>& in) {
        ConvOptions o;
        o.padding_low = o.padding_high = {c.pad_h, c.pad_w};
        Expr y = transpose(conv(transpose(in[0], {0, 3, 1, 2}), transpose(in[1], {3, 2, 0, 1}), o),
                           {0, 2, 3, 1});
        return gradients(sum(y * in[2]), {in[0]});
      },
      {{f32, c.x()}, {f32, c.weights()}, {f32, c.dy()}}, "data_gradient");
}

// The same in double: dx[n, y, x, c] = sum over taps (i, j) and k of
// dy[n, y + pad_h - i, x + pad_w - j, k] * weights[i, j, c, k].
std::vector<double> by_hand(const Case& c, const std::vector<float>& w,
                            const std::vector<float>& dy) {
  std::vector<double> dx(std::size_t(c.n * c.h * c.w * c.c));
  for (std::int64_t n = 0; n < c.n; ++n)
    for (std::int64_t y = 0; y < c.h; ++y)
      for (std::int64_t x = 0; x < c.w; ++x)
        for (std::int64_t ch = 0; ch < c.c; ++ch) {
          double acc = 0;
          for (std::int64_t i = 0; i < c.kh; ++i)
            for (std::int64_t j = 0; j < c.kw; ++j) {
              const std::int64_t oy = y + c.pad_h - i, ox = x + c.pad_w - j;
              if (oy < 0 || oy >= c.oh() || ox < 0 || ox >= c.ow()) continue;
              for (std::int64_t k = 0; k < c.k; ++k)
                acc += double(dy[std::size_t(((n * c.oh() + oy) * c.ow() + ox) * c.k + k)]) *
                       w[std::size_t(((i * c.kw + j) * c.c + ch) * c.k + k)];
            }
          dx[std::size_t(((n * c.h + y) * c.w + x) * c.c + ch)] = acc;
        }
  return dx;
}

// A fixed pseudo-random stream of values in [-1, 1), none zero.
struct Values {
  std::uint32_t s;
  std::uint32_t next() {
    s = s * 1664525u + 1013904223u;
    return s >> 8;
  }
  float value() { return float(next() % 2000 + 1) / 1000.0f - 1.0005f; }
};

std::vector<float> dense_values(const Shape& s, std::uint32_t seed) {
  Values v{seed};
  std::vector<float> out(std::size_t(s.numel()));
  for (float& x : out) x = v.value();
  return out;
}

// dy as max pooling's adjoint leaves it: in each 2x2 window of each channel one position
// nonzero, the rest (and a last odd row and column) zero: at most 25%.
std::vector<float> pooled_pattern(const Case& c, std::uint32_t seed) {
  Values v{seed};
  std::vector<float> dy(std::size_t(c.dy().numel()));
  for (std::int64_t n = 0; n < c.n; ++n)
    for (std::int64_t py = 0; py + 1 < c.oh(); py += 2)
      for (std::int64_t px = 0; px + 1 < c.ow(); px += 2)
        for (std::int64_t k = 0; k < c.k; ++k) {
          const std::uint32_t p = v.next() % 4;
          const std::int64_t oy = py + p / 2, ox = px + p % 2;
          dy[std::size_t(((n * c.oh() + oy) * c.ow() + ox) * c.k + k)] = v.value();
        }
  return dy;
}

// About `percent`% of dy nonzero, scattered.
std::vector<float> scattered(const Case& c, int percent, std::uint32_t seed) {
  Values v{seed};
  std::vector<float> dy(std::size_t(c.dy().numel()));
  for (float& x : dy) x = int(v.next() % 100) < percent ? v.value() : 0.0f;
  return dy;
}

// NaN and infinities where `want` has them, else within rounding of sums of up to 9 x 64 products.
void expect_near(const Tensor& got, const std::vector<double>& want) {
  ASSERT_EQ(std::size_t(got.numel()), want.size());
  const float* g = got.data<float>();
  for (std::size_t i = 0; i < want.size(); ++i) {
    if (!std::isfinite(want[i])) {
      ASSERT_TRUE(std::isnan(want[i]) ? std::isnan(g[i]) : g[i] == want[i])
          << "at " << i << ": " << g[i] << ", not " << want[i];
      continue;
    }
    ASSERT_NEAR(g[i], want[i], 2e-5 * (1 + std::abs(want[i]))) << "at " << i;
  }
}

std::string gradient_line(const Executable& exe) {
  return kernel_line(exe, "convolution_backward_data");
}

struct Gradient {
  Tensor dx;
  std::string line;
};

Gradient run(const Case& c, const std::vector<float>& w, const std::vector<float>& dy,
             int threads = 0) {
  CompileOptions o;
  if (threads > 0) o.cpu.threads = threads;
  auto exe = compile_graph(data_gradient_graph(c), "cpu", o);
  auto out = exe->run(std::vector<Tensor>{Tensor::from(dense_values(c.x(), 1), c.x()),
                                          Tensor::from(w, c.weights()), Tensor::from(dy, c.dy())});
  return {out[0], gradient_line(*exe)};
}

// The MNIST CNN's second convolution (4 images); 5x5 padded 2 over one vector of input
// channels; an uneven 2x3 kernel over three vectors (AVX-512; AVX2 takes 48 channels
// dense) padded 1 and 2; 1x1 over four (AVX-512); padding 2 around a 3x3 kernel (a full
// convolution: the corners of dy are read by one position of x each); 3x3 padded 0 and 1.
const Case kCases[] = {{4, 13, 13, 32, 64, 3, 3, 0, 0}, {4, 12, 12, 16, 16, 5, 5, 2, 2},
                       {8, 9, 10, 48, 32, 2, 3, 1, 2},  {8, 16, 16, 64, 16, 1, 1, 0, 0},
                       {8, 8, 8, 32, 32, 3, 3, 2, 2},   {8, 11, 12, 16, 32, 3, 3, 0, 1}};

TEST(CpuZeroSkipConv, PooledGradientsSkipTheirZeros) {
  GLIA_REQUIRE_CPU_BACKEND();
  for (const Case& c : kCases) {
    SCOPED_TRACE(
        cat(c.kh, "x", c.kw, " kernel, ", c.c, " channels in, padding ", c.pad_h, ", ", c.pad_w));
    const auto w = dense_values(c.weights(), 2), dy = pooled_pattern(c, 3);
    const Gradient r = run(c, w, dy);
    expect_near(r.dx, by_hand(c, w, dy));
    // Input channels in at most four vectors of 8 take the loops on every ISA they run on.
    if (c.c <= 32) {
      EXPECT_THAT(r.line, HasSubstr("glia zero-skipping data gradient"));
    }
    if (r.line.find("zero-skipping") != std::string::npos) {
      EXPECT_THAT(r.line, HasSubstr("(1 of 1 runs)"));
    }
  }
}

TEST(CpuZeroSkipConv, EveryIsaAndThreadCount) {
  GLIA_REQUIRE_CPU_BACKEND();
  const Case& c = kCases[0];
  const auto w = dense_values(c.weights(), 4), dy = scattered(c, 20, 5);
  const auto want = by_hand(c, w, dy);
  for (const char* isa : {"", "avx2", "baseline"}) {
    ScopedEnv cap("GLIA_CPU_ISA", isa);
    std::vector<Tensor> first;
    for (int threads : {1, 2, 3}) {
      SCOPED_TRACE(cat("GLIA_CPU_ISA=", isa, ", ", threads, " threads"));
      const Gradient r = run(c, w, dy, threads);
      expect_near(r.dx, want);
      // Baseline SSE has no loops here: the dense kernel runs.
      EXPECT_EQ(r.line.find("(1 of 1 runs)") != std::string::npos, std::string(isa) != "baseline")
          << r.line;
      // Each element is summed by one thread, in one order: the same bits on any number.
      if (first.empty())
        first.push_back(r.dx);
      else
        EXPECT_TRUE(allclose(r.dx, first[0], 0, 0));
    }
  }
}

TEST(CpuZeroSkipConv, DenseGradientsRunDense) {
  GLIA_REQUIRE_CPU_BACKEND();
  const Case& c = kCases[0];
  const auto w = dense_values(c.weights(), 6);
  for (int percent : {60, 100}) {
    SCOPED_TRACE(cat(percent, "% nonzero"));
    const auto dy = scattered(c, percent, 7);
    const Gradient r = run(c, w, dy);
    expect_near(r.dx, by_hand(c, w, dy));
    EXPECT_THAT(r.line, HasSubstr("(0 of 1 runs)"));
  }
}

// 0 x inf is NaN: an infinity among the weights sends the run to the dense kernel, whose
// sums are NaN wherever the infinite weight meets a zero of dy. NaN in dy is a nonzero:
// kept, it makes NaN every input position whose window reads it.
TEST(CpuZeroSkipConv, InfinitiesAndNaN) {
  GLIA_REQUIRE_CPU_BACKEND();
  const Case& c = kCases[0];
  auto w = dense_values(c.weights(), 8);
  auto dy = pooled_pattern(c, 9);
  w[100] = std::numeric_limits<float>::infinity();
  Gradient r = run(c, w, dy);
  expect_near(r.dx, by_hand(c, w, dy));
  EXPECT_THAT(r.line, HasSubstr("(0 of 1 runs)"));

  w[100] = 0.5f;
  dy[std::size_t(((1 * c.oh() + 4) * c.ow() + 7) * c.k + 3)] = std::nanf("");
  r = run(c, w, dy);
  const auto want = by_hand(c, w, dy);
  expect_near(r.dx, want);
  EXPECT_THAT(r.line, HasSubstr("(1 of 1 runs)"));
  std::int64_t nans = 0;
  for (double v : want) nans += std::isnan(v);
  EXPECT_EQ(nans, 9 * c.c);  // the 3x3 input positions around it, every input channel
}

TEST(CpuZeroSkipConv, TheEnvironmentSwitchLeavesTheGradientDense) {
  GLIA_REQUIRE_CPU_BACKEND();
  const Case& c = kCases[0];
  const auto w = dense_values(c.weights(), 10), dy = pooled_pattern(c, 11);
  ScopedEnv off("GLIA_CPU_ZERO_SKIP", "0");
  const Gradient r = run(c, w, dy);
  expect_near(r.dx, by_hand(c, w, dy));
  EXPECT_THAT(r.line, Not(HasSubstr("zero-skipping")));
}

}  // namespace
}  // namespace glia::testing
