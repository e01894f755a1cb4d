// The `cpu` backend's max pooling against the interpreter: window_max on glia's own
// channels-last loop (windows that neither overlap nor leave the input) or oneDNN's
// pooling, and select_and_scatter on its own first-maximum loop, over channels-last and
// channels-first layouts, strides, padding, overlapping windows, ties and NaN.
#include <cmath>
#include <limits>
#include <map>
#include <string>

#include "compiler/cpu_test_util.hpp"
#include "glia/autograd/grad.hpp"
#include "scoped_env.hpp"

namespace glia::testing {
namespace {

struct PoolCase {
  std::string name;
  Shape x;
  Ints window;
  WindowOptions o;
};

// Cases whose windows glia's channels-last loop pools (the others go to oneDNN).
bool glia_pools(const std::string& name) { return name.rfind("nhwc_", 0) == 0 || name == "3d"; }

std::vector<PoolCase> pool_cases() {
  return {
      {"nhwc_2x2", {3, 8, 8, 5}, {1, 2, 2, 1}, {}},
      {"nhwc_odd", {1, 7, 9, 3}, {1, 2, 2, 1}, {}},
      // Channel counts past a vector register (16 lanes with AVX-512, 8 with AVX2), with
      // a remainder: whole registers, then the scalar channels.
      {"nhwc_wide", {2, 6, 6, 37}, {1, 2, 2, 1}, {}},
      {"nhwc_wide_uncovered", {3, 5, 7, 20}, {1, 2, 2, 1}, {}},
      {"nhwc_wide_3x3_stride3", {2, 9, 7, 33}, {1, 3, 3, 1}, {.strides = {1, 3, 3, 1}}},
      {"nchw_3x3_stride2", {2, 3, 9, 10}, {1, 1, 3, 3}, {.strides = {1, 1, 2, 2}}},
      {"overlapping_padded",
       {2, 7, 6, 4},
       {1, 3, 3, 1},
       {.strides = {1, 1, 1, 1}, .padding_low = {0, 1, 1, 0}, .padding_high = {0, 1, 0, 0}}},
      {"dilated",
       {2, 9, 9, 3},
       {1, 2, 2, 1},
       {.strides = {1, 2, 2, 1}, .window_dilation = {1, 2, 3, 1}}},
      {"1d", {4, 11, 6}, {1, 3, 1}, {.strides = {1, 2, 1}}},
      {"3d", {2, 5, 4, 6, 3}, {1, 2, 2, 3, 1}, {}},
  };
}

// max over windows, and its gradient for the loss sum(window_max(x) * w).
Graph pool_graph(const PoolCase& c, const Shape& y) {
  return trace(
      [&](const std::vector<Expr>& in) {
        Expr loss = sum(window_max(in[0], c.window, c.o) * in[1]);
        return std::vector<Expr>{window_max(in[0], c.window, c.o), gradients(loss, {in[0]})[0]};
      },
      {{f32, c.x}, {f32, y}}, c.name);
}

Shape pooled_shape(const PoolCase& c) {
  Graph g = trace(
      [&](const std::vector<Expr>& in) {
        return std::vector<Expr>{window_max(in[0], c.window, c.o)};
      },
      {{f32, c.x}}, "shape");
  return g.type(g.outputs()[0]).shape;
}

// The adjoint's loops in each vector width this machine has (GLIA_CPU_ISA caps it; an
// unknown value leaves the widest).
const char* const kIsas[] = {"widest", "avx2", "baseline"};

TEST(CpuPool, MaxPoolAndItsGradientMatchInterp) {
  GLIA_REQUIRE_CPU_BACKEND();
  for (const char* isa : kIsas)
    for (const PoolCase& c : pool_cases()) {
      ScopedEnv cap("GLIA_CPU_ISA", isa);
      SCOPED_TRACE(cat(c.name, " ", isa));
      Shape y = pooled_shape(c);
      Graph g = pool_graph(c, y);
      auto exe = expect_cpu_matches_interp(
          g, {seeded(c.x, f32, -1, 1, 1), seeded(y, f32, -1, 1, 2)}, 1e-6, 1e-6);
      std::map<PoolSpec::Kind, int> kinds;
      for (const PoolSpec* p : exe->program().specs<PoolSpec>()) ++kinds[p->kind];
      EXPECT_EQ(kinds[PoolSpec::Kind::max], 1) << exe->describe();
      EXPECT_EQ(kinds[PoolSpec::Kind::max_backward], 1) << exe->describe();
      EXPECT_TRUE(reference_ops(*exe).empty()) << exe->describe();
      EXPECT_EQ(exe->describe().find("-> glia max loop (channels-last)") != std::string::npos,
                glia_pools(c.name))
          << exe->describe();
    }
}

// Ties go to the first maximum in window order: in a window of equal values, the
// top-left element gets the whole gradient.
TEST(CpuPool, TiesGoToTheFirstMaximum) {
  GLIA_REQUIRE_CPU_BACKEND();
  PoolCase c{"ties", {1, 4, 4, 2}, {1, 2, 2, 1}, {}};
  Graph g = pool_graph(c, {1, 2, 2, 2});
  // Channel 0: all ones; channel 1: ones with a 3 at the bottom-right of each window.
  std::vector<float> x(32, 1.0f);
  for (int h : {1, 3})
    for (int w : {1, 3}) x[static_cast<std::size_t>((h * 4 + w) * 2 + 1)] = 3.0f;
  Tensor xs = Tensor::from(x, Shape{1, 4, 4, 2});
  Tensor w = Tensor::from(std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8}, Shape{1, 2, 2, 2});
  auto exe = compile_graph(g, "cpu");
  std::vector<Tensor> args{xs, w};
  Tensor grad = exe->run(args)[1];
  std::vector<float> want(32, 0.0f);
  // window (i, j) has top-left (2i, 2j); its weights are w[i, j, 0] and w[i, j, 1].
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j) {
      float w0 = float((i * 2 + j) * 2 + 1), w1 = w0 + 1;
      want[static_cast<std::size_t>(((2 * i) * 4 + 2 * j) * 2)] = w0;
      want[static_cast<std::size_t>(((2 * i + 1) * 4 + 2 * j + 1) * 2 + 1)] = w1;
    }
  expect_tensor(grad, f32, {1, 4, 4, 2}, std::vector<double>(want.begin(), want.end()));
  // NHWC pooled over H and W: [N, C, H, W] views with the channels innermost.
  auto pools = exe->program().specs<PoolSpec>();
  ASSERT_EQ(pools.size(), 2u);
  const PoolSpec& back = *pools[1];
  EXPECT_EQ(back.kind, PoolSpec::Kind::max_backward);
  EXPECT_EQ(back.input.dims, (std::vector<std::int64_t>{1, 2, 4, 4}));
  EXPECT_EQ(back.input.strides, (std::vector<std::int64_t>{32, 1, 8, 2}));
  EXPECT_EQ(back.source.dims, (std::vector<std::int64_t>{1, 2, 2, 2}));
  EXPECT_EQ(back.window, (std::vector<std::int64_t>{2, 2}));
  EXPECT_EQ(back.strides, (std::vector<std::int64_t>{2, 2}));
}

// The first maximum per channel where the channels fill vector registers: a NaN beats
// numbers and the first NaN stays; equal values and infinities go to the first position.
TEST(CpuPool, NaNsAndTiesPickTheFirstMaximumInEveryChannel) {
  GLIA_REQUIRE_CPU_BACKEND();
  constexpr int kChannels = 35;  // two 16-lane registers and 3 more
  PoolCase c{"nan_ties", {1, 2, 2, kChannels}, {1, 2, 2, 1}, {}};
  Graph g = pool_graph(c, {1, 1, 1, kChannels});
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  // Window position k (0..3, row-major) of channel ch, and the position that wins.
  std::vector<float> x(4 * kChannels);
  std::vector<int> winner(kChannels);
  for (int ch = 0; ch < kChannels; ++ch) {
    float v[4] = {1, 1, 1, 1};
    switch (ch % 6) {
      case 0:  // all equal
        winner[std::size_t(ch)] = 0;
        break;
      case 1:  // a NaN beats a larger number
        v[1] = 5, v[2] = nan, winner[std::size_t(ch)] = 2;
        break;
      case 2:  // two NaNs: the first stays
        v[1] = nan, v[3] = nan, winner[std::size_t(ch)] = 1;
        break;
      case 3:  // a plain maximum last
        v[3] = 2 + float(ch), winner[std::size_t(ch)] = 3;
        break;
      case 4:  // all -inf
        v[0] = v[1] = v[2] = v[3] = -inf, winner[std::size_t(ch)] = 0;
        break;
      default:  // +inf ties: the first
        v[1] = inf, v[2] = inf, winner[std::size_t(ch)] = 1;
        break;
    }
    for (int k = 0; k < 4; ++k) x[std::size_t(k * kChannels + ch)] = v[k];
  }
  std::vector<float> w(kChannels);
  for (int ch = 0; ch < kChannels; ++ch) w[std::size_t(ch)] = float(ch + 1);
  std::vector<double> want(4 * kChannels, 0.0);
  for (int ch = 0; ch < kChannels; ++ch)
    want[std::size_t(winner[std::size_t(ch)] * kChannels + ch)] = ch + 1;
  std::vector<Tensor> args{Tensor::from(x, Shape{1, 2, 2, kChannels}),
                           Tensor::from(w, Shape{1, 1, 1, kChannels})};
  for (const char* isa : kIsas) {
    ScopedEnv cap("GLIA_CPU_ISA", isa);
    SCOPED_TRACE(isa);
    std::vector<Tensor> out = compile_graph(g, "cpu")->run(args);
    expect_tensor(out[1], f32, {1, 2, 2, kChannels}, want);
    // The maxima themselves: the winner's value, NaN where a NaN won.
    const float* y = out[0].data<float>();
    for (int ch = 0; ch < kChannels; ++ch) {
      const float v = x[std::size_t(winner[std::size_t(ch)] * kChannels + ch)];
      if (std::isnan(v))
        EXPECT_TRUE(std::isnan(y[ch])) << "channel " << ch;
      else
        EXPECT_EQ(y[ch], v) << "channel " << ch;
    }
  }
}

// A conv layer as glia's layers trace it: its relu's gradient masks the cotangent by the
// output's sign (layers/src/activation.cpp).
Expr conv_relu_layer(const Expr& x, const Expr& k, const Expr& b) {
  Expr z = transpose(conv(transpose(x, {0, 3, 1, 2}), transpose(k, {3, 2, 0, 1}),
                          {.padding_low = {1, 1}, .padding_high = {1, 1}}),
                     {0, 2, 3, 1});
  z = z + broadcast(b, z.shape(), {3});
  Expr y = relu(z);
  return custom_grad(
      y, {z}, [y](const Expr& g) { return std::vector<Expr>{select(greater(y, 0.0), g, 0.0)}; });
}

// Max pooling over a conv layer's relu output: the pooling's adjoint writes relu's gradient
// mask too (zero where the layer's output is not above zero), one kernel where the adjoint
// and a select were two, on the channels-last loop in each vector width (2x2 windows) and on
// the general loop (overlapping, padded windows). Half the layer's outputs are zeros, so
// the mask decides half the windows.
TEST(CpuPool, ReluMaskFoldsIntoTheAdjoint) {
  GLIA_REQUIRE_CPU_BACKEND();
  const Shape x{3, 10, 10, 8}, k{3, 3, 8, 16}, b{16};
  struct Pooling {
    std::string name;
    WindowOptions o;
    Ints window;
  };
  const std::vector<Pooling> poolings = {
      {"2x2", {}, {1, 2, 2, 1}},
      {"3x3_overlapping_padded",
       {.strides = {1, 1, 1, 1}, .padding_low = {0, 1, 1, 0}, .padding_high = {0, 1, 0, 0}},
       {1, 3, 3, 1}}};
  for (const Pooling& p : poolings)
    for (const char* isa : kIsas) {
      if (p.name != "2x2" && std::string(isa) != "widest") continue;
      ScopedEnv cap("GLIA_CPU_ISA", isa);
      SCOPED_TRACE(cat(p.name, " ", isa));
      auto pooled = [&](const std::vector<Expr>& in) {
        return window_max(conv_relu_layer(in[0], in[1], in[2]), p.window, p.o);
      };
      Graph shape =
          trace([&](const std::vector<Expr>& in) { return std::vector<Expr>{pooled(in)}; },
                {{f32, x}, {f32, k}, {f32, b}}, "shape");
      const Shape y = shape.type(shape.outputs()[0]).shape;
      Graph g = trace(
          [&](const std::vector<Expr>& in) {
            return gradients(sum(pooled(in) * in[3]), {in[0], in[1], in[2]});
          },
          {{f32, x}, {f32, k}, {f32, b}, {f32, y}}, "grads");
      auto exe = expect_optimized_matches_interp(g, seeded_inputs(g), 1e-5);
      const std::string adjoint = kernel_line(*exe, "max_pool_backward");
      EXPECT_NE(adjoint.find("where input > 0"), std::string::npos) << exe->describe();
      EXPECT_NE(adjoint.find("positive maxima only"), std::string::npos) << adjoint;
      EXPECT_EQ(count_kernels(*exe, "pooling"), 1) << exe->describe();  // the adjoint alone
    }
}

TEST(CpuPool, OtherCasesAreLeftToOtherKernels) {
  GLIA_REQUIRE_CPU_BACKEND();
  // Windows over every axis (no batch/channel pair and four pooled axes), and f64.
  PoolCase all{"all_axes", {4, 4, 4, 4}, {2, 2, 2, 2}, {}};
  Graph g = pool_graph(all, pooled_shape(all));
  auto exe = expect_cpu_matches_interp(
      g, {seeded(all.x, f32, -1, 1, 1), seeded(pooled_shape(all), f32, -1, 1, 2)});
  EXPECT_TRUE(on_reference(*exe, Op::window_max));
  EXPECT_TRUE(on_reference(*exe, Op::select_and_scatter));
  Graph typed = trace(
      [](const std::vector<Expr>& in) {
        return std::vector<Expr>{window_max(in[0], {1, 2, 2, 1})};
      },
      {{f64, {1, 4, 4, 1}}}, "f64");
  exe = expect_cpu_matches_interp(typed, {seeded({1, 4, 4, 1}, f64, -1, 1, 1)});
  EXPECT_TRUE(on_reference(*exe, Op::window_max));
}

}  // namespace
}  // namespace glia::testing
