// The `cpu` backend's zero-skipping data and kernel gradients of a convolution: the
// gradients of sum(conv(x, w) * dy) where dy is mostly zeros (max pooling's adjoint's
// pattern, or scattered), against sums computed here in double: kernels of 2x3 to 5x5 and
// uneven ones (the kernel gradient skips zeros for 3x3 ones), paddings up to the kernel's
// reach and unlike along the two axes, one to eight vectors of input channels, a dy read
// through strides, each ISA's loops, and within one any thread count giving the same
// bits; a dense dy, an infinity in the other operand and the environment switch sending
// the pass to the dense kernel, and NaN in dy kept.
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

// The gradient of sum(conv(x, weights) * dy) with respect to x (operand 0: the
// convolution's data gradient) or the weights (1: its kernel gradient), dy the output
// gradient (channels-last in the graph's layout).
Graph gradient_graph(const Case& c, int wrt) {
  return trace(
      [&](const std::vector<Expr>& in) {
        ConvOptions o;
        o.padding_low = o.padding_high = {c.pad_h, c.pad_w};
        Expr y = transpose(conv(transpose(in[0], {0, 3, 1, 2}), transpose(in[1], {3, 2, 0, 1}), o),
                           {0, 2, 3, 1});
        return gradients(sum(y * in[2]), {in[wrt]});
      },
      {{f32, c.x()}, {f32, c.weights()}, {f32, c.dy()}}, wrt == 0 ? "data" : "kernel");
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

// The kernel gradient in double: dw[i, j, c, k] = sum over images and output positions of
// dy[n, oy, ox, k] * x[n, oy - pad_h + i, ox - pad_w + j, c] (inside x).
std::vector<double> kernel_by_hand(const Case& c, const std::vector<float>& x,
                                   const std::vector<float>& dy) {
  std::vector<double> dw(std::size_t(c.weights().numel()));
  for (std::int64_t i = 0; i < c.kh; ++i)
    for (std::int64_t j = 0; j < c.kw; ++j)
      for (std::int64_t ch = 0; ch < c.c; ++ch)
        for (std::int64_t k = 0; k < c.k; ++k) {
          double acc = 0;
          for (std::int64_t n = 0; n < c.n; ++n)
            for (std::int64_t oy = 0; oy < c.oh(); ++oy)
              for (std::int64_t ox = 0; ox < c.ow(); ++ox) {
                const std::int64_t y = oy - c.pad_h + i, xx = ox - c.pad_w + j;
                if (y < 0 || y >= c.h || xx < 0 || xx >= c.w) continue;
                acc += double(dy[std::size_t(((n * c.oh() + oy) * c.ow() + ox) * c.k + k)]) *
                       x[std::size_t(((n * c.h + y) * c.w + xx) * c.c + ch)];
              }
          dw[std::size_t(((i * c.kw + j) * c.c + ch) * c.k + k)] = acc;
        }
  return dw;
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

// NaN and infinities where `want` has them, else within rounding of the sums.
void expect_near(const Tensor& got, const std::vector<double>& want) {
  ASSERT_EQ(std::size_t(got.numel()), want.size());
  const float* g = got.data<float>();
  for (std::size_t i = 0; i < want.size(); ++i) {
    if (!std::isfinite(want[i])) {
      ASSERT_TRUE(std::isnan(want[i]) ? std::isnan(g[i]) : g[i] == want[i])
          << "at " << i << ": " << g[i] << ", not " << want[i];
      continue;
    }
    ASSERT_NEAR(g[i], want[i], 4e-5 * (1 + std::abs(want[i]))) << "at " << i;
  }
}

struct Gradient {
  Tensor dx;         // or the kernel gradient
  std::string line;  // the pass's kernel
};

// The gradient with respect to operand `wrt` (gradient_graph) of x, weights w and dy.
Gradient run(const Case& c, const std::vector<float>& x, const std::vector<float>& w,
             const std::vector<float>& dy, int wrt, int threads = 0) {
  CompileOptions o;
  if (threads > 0) o.cpu.threads = threads;
  auto exe = compile_graph(gradient_graph(c, wrt), "cpu", o);
  auto out = exe->run(std::vector<Tensor>{Tensor::from(x, c.x()), Tensor::from(w, c.weights()),
                                          Tensor::from(dy, c.dy())});
  return {out[0], kernel_line(*exe, wrt == 0 ? "convolution_backward_data"
                                             : "convolution_backward_weights")};
}

// The data gradient.
Gradient run(const Case& c, const std::vector<float>& w, const std::vector<float>& dy,
             int threads = 0) {
  return run(c, dense_values(c.x(), 1), w, dy, 0, threads);
}

// The MNIST CNN's second convolution (4 images); 5x5 padded 2 over 16 input channels; an
// uneven 2x3 kernel over 48 padded 1 and 2; 3x3 padded 1 over 64; padding 2 around a 3x3 kernel (a
// full convolution: the corners of dy are read by one position of x each); 3x3 padded 0
// and 1.
const Case kCases[] = {{4, 13, 13, 32, 64, 3, 3, 0, 0}, {4, 12, 12, 16, 16, 5, 5, 2, 2},
                       {8, 9, 10, 48, 32, 2, 3, 1, 2},  {8, 11, 11, 64, 16, 3, 3, 1, 1},
                       {8, 9, 9, 32, 32, 3, 3, 2, 2},   {8, 11, 12, 16, 32, 3, 3, 0, 1}};

TEST(CpuZeroSkipConv, PooledGradientsSkipTheirZeros) {
  GLIA_REQUIRE_CPU_BACKEND();
  for (const Case& c : kCases) {
    SCOPED_TRACE(
        cat(c.kh, "x", c.kw, " kernel, ", c.c, " channels in, padding ", c.pad_h, ", ", c.pad_w));
    const auto w = dense_values(c.weights(), 2), dy = pooled_pattern(c, 3);
    const Gradient r = run(c, w, dy);
    expect_near(r.dx, by_hand(c, w, dy));
    EXPECT_THAT(r.line, HasSubstr("glia zero-skipping data gradient"));
    EXPECT_THAT(r.line, HasSubstr("(1 of 1 runs)"));
  }
}

// The kernel gradient of every case: the 3x3 kernels skip the zeros of a pooled dy, the
// others (5x5, 2x3) run the dense kernel.
TEST(CpuZeroSkipConv, PooledKernelGradientsSkipTheirZeros) {
  GLIA_REQUIRE_CPU_BACKEND();
  for (const Case& c : kCases) {
    SCOPED_TRACE(
        cat(c.kh, "x", c.kw, " kernel, ", c.c, " channels in, padding ", c.pad_h, ", ", c.pad_w));
    const auto x = dense_values(c.x(), 12), dy = pooled_pattern(c, 13);
    const Gradient r = run(c, x, dense_values(c.weights(), 2), dy, 1);
    expect_near(r.dx, kernel_by_hand(c, x, dy));
    const bool three = c.kh == 3 && c.kw == 3;
    EXPECT_EQ(r.line.find("glia zero-skipping kernel gradient") != std::string::npos, three);
    if (three) {
      EXPECT_THAT(r.line, HasSubstr("(1 of 1 runs)"));
    }
  }
}

// The gradient with respect to operand `wrt` in double.
std::vector<double> want_for(const Case& c, const std::vector<float>& x,
                             const std::vector<float>& w, const std::vector<float>& dy, int wrt) {
  return wrt == 0 ? by_hand(c, w, dy) : kernel_by_hand(c, x, dy);
}

// An output gradient whose image rows are not contiguous: dy arrives as [n, ow, oh, k] and
// is transposed in the graph, so the kernels read it through strides (the kernel
// gradient's columns then come one position at a time, not in transposed blocks).
TEST(CpuZeroSkipConv, TransposedOutputGradients) {
  GLIA_REQUIRE_CPU_BACKEND();
  const Case& c = kCases[5];  // 9 x 12 outputs
  const auto x = dense_values(c.x(), 16), w = dense_values(c.weights(), 17);
  const auto dy = pooled_pattern(c, 18);
  std::vector<float> swapped(dy.size());  // [n, ow, oh, k]
  for (std::int64_t n = 0; n < c.n; ++n)
    for (std::int64_t oy = 0; oy < c.oh(); ++oy)
      for (std::int64_t ox = 0; ox < c.ow(); ++ox)
        for (std::int64_t k = 0; k < c.k; ++k)
          swapped[std::size_t(((n * c.ow() + ox) * c.oh() + oy) * c.k + k)] =
              dy[std::size_t(((n * c.oh() + oy) * c.ow() + ox) * c.k + k)];
  const Shape swapped_shape{c.n, c.ow(), c.oh(), c.k};
  for (int wrt : {0, 1}) {
    SCOPED_TRACE(cat("gradient of operand ", wrt));
    Graph g = trace(
        [&](const std::vector<Expr>& in) {
          ConvOptions o;
          o.padding_low = o.padding_high = {c.pad_h, c.pad_w};
          Expr y =
              transpose(conv(transpose(in[0], {0, 3, 1, 2}), transpose(in[1], {3, 2, 0, 1}), o),
                        {0, 2, 3, 1});
          return gradients(sum(y * transpose(in[2], {0, 2, 1, 3})), {in[wrt]});
        },
        {{f32, c.x()}, {f32, c.weights()}, {f32, swapped_shape}}, "transposed");
    auto exe = compile_graph(g, "cpu");
    auto out = exe->run(std::vector<Tensor>{Tensor::from(x, c.x()), Tensor::from(w, c.weights()),
                                            Tensor::from(swapped, swapped_shape)});
    expect_near(out[0], want_for(c, x, w, dy, wrt));
    EXPECT_THAT(
        kernel_line(*exe, wrt == 0 ? "convolution_backward_data" : "convolution_backward_weights"),
        HasSubstr("(1 of 1 runs)"))
        << exe->describe();
  }
}

TEST(CpuZeroSkipConv, EveryIsaAndThreadCount) {
  GLIA_REQUIRE_CPU_BACKEND();
  const Case& c = kCases[0];
  const auto x = dense_values(c.x(), 1), w = dense_values(c.weights(), 4), dy = scattered(c, 20, 5);
  for (int wrt : {0, 1}) {
    const auto want = want_for(c, x, w, dy, wrt);
    for (const char* isa : {"", "avx2", "baseline"}) {
      ScopedEnv cap("GLIA_CPU_ISA", isa);
      std::vector<Tensor> first;
      for (int threads : {1, 2, 3}) {
        SCOPED_TRACE(
            cat("gradient of operand ", wrt, ", GLIA_CPU_ISA=", isa, ", ", threads, " threads"));
        const Gradient r = run(c, x, w, dy, wrt, threads);
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
}

TEST(CpuZeroSkipConv, DenseGradientsRunDense) {
  GLIA_REQUIRE_CPU_BACKEND();
  const Case& c = kCases[0];
  const auto x = dense_values(c.x(), 1), w = dense_values(c.weights(), 6);
  for (int wrt : {0, 1})
    for (int percent : {60, 100}) {
      SCOPED_TRACE(cat("gradient of operand ", wrt, ", ", percent, "% nonzero"));
      const auto dy = scattered(c, percent, 7);
      const Gradient r = run(c, x, w, dy, wrt);
      expect_near(r.dx, want_for(c, x, w, dy, wrt));
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

// The kernel gradient likewise: an infinity in x sends the run to the dense kernel; NaN
// in dy makes NaN its output channel's gradient at every tap and input channel (its
// position's window lies inside x).
TEST(CpuZeroSkipConv, KernelGradientInfinitiesAndNaN) {
  GLIA_REQUIRE_CPU_BACKEND();
  const Case& c = kCases[0];
  auto x = dense_values(c.x(), 14);
  const auto w = dense_values(c.weights(), 2);
  auto dy = pooled_pattern(c, 15);
  x[1000] = -std::numeric_limits<float>::infinity();
  Gradient r = run(c, x, w, dy, 1);
  expect_near(r.dx, kernel_by_hand(c, x, dy));
  EXPECT_THAT(r.line, HasSubstr("(0 of 1 runs)"));

  x[1000] = 0.5f;
  dy[std::size_t(((2 * c.oh() + 5) * c.ow() + 6) * c.k + 9)] = std::nanf("");
  r = run(c, x, w, dy, 1);
  const auto want = kernel_by_hand(c, x, dy);
  expect_near(r.dx, want);
  EXPECT_THAT(r.line, HasSubstr("(1 of 1 runs)"));
  std::int64_t nans = 0;
  for (double v : want) nans += std::isnan(v);
  EXPECT_EQ(nans, 9 * c.c);  // output channel 9's, every tap and input channel
}

TEST(CpuZeroSkipConv, TheEnvironmentSwitchLeavesTheGradientsDense) {
  GLIA_REQUIRE_CPU_BACKEND();
  const Case& c = kCases[0];
  const auto x = dense_values(c.x(), 1), w = dense_values(c.weights(), 10),
             dy = pooled_pattern(c, 11);
  ScopedEnv off("GLIA_CPU_ZERO_SKIP", "0");
  for (int wrt : {0, 1}) {
    const Gradient r = run(c, x, w, dy, wrt);
    expect_near(r.dx, want_for(c, x, w, dy, wrt));
    EXPECT_THAT(r.line, Not(HasSubstr("zero-skipping")));
  }
}

}  // namespace
}  // namespace glia::testing
