// Pooling layers against hand-computed values and naive loops written here: windowed
// pools with padding, strides and dilation, adaptive pools with uneven bins, global
// pools, layouts, option errors and gradients.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "autograd/gradcheck.hpp"
#include "glia/layers.hpp"
#include "layers/spatial_test_util.hpp"

namespace glia {
namespace {

using namespace spatial_test;  // NOLINT(google-build-using-namespace)
using Pairs = std::vector<std::pair<std::int64_t, std::int64_t>>;

struct RefWindow {
  Ints window{}, strides{}, low{}, dilation{};
  double p = 1;  // sums of x^p
};

// Channels-last window reductions: for out[n, q..., c], the window elements at
// q * s + k * d - low that fall inside x; padding is skipped by max and adds 0 to sums.
std::vector<double> ref_window(const std::vector<double>& x, const Ints& xs, const Ints& ys,
                               const RefWindow& r, bool max) {
  std::size_t sp = xs.size() - 2;
  std::vector<double> y(static_cast<std::size_t>(numel(ys)));
  for (std::int64_t f = 0; f < numel(ys); ++f) {
    Ints q = unravel(f, ys);
    double acc = max ? -std::numeric_limits<double>::infinity() : 0;
    for (std::int64_t kf = 0; kf < numel(r.window); ++kf) {
      Ints k = unravel(kf, r.window), xi{q[0]};
      bool inside = true;
      for (std::size_t d = 0; d < sp; ++d) {
        std::int64_t dil = r.dilation.empty() ? 1 : r.dilation[d];
        std::int64_t pos = q[d + 1] * r.strides[d] + k[d] * dil - r.low[d];
        inside = inside && pos >= 0 && pos < xs[d + 1];
        xi.push_back(pos);
      }
      if (!inside) continue;
      xi.push_back(q.back());
      double v = x[static_cast<std::size_t>(ravel(xi, xs))];
      acc = max ? std::max(acc, v) : acc + std::pow(v, r.p);
    }
    y[static_cast<std::size_t>(f)] = acc;
  }
  return y;
}

// Pools have no parameters: an empty state.
Tensor run(const Model& y, const Tensor& x) { return build(y).predict(ModelState{}, x); }

Tensor vec1d(const std::vector<float>& v) {
  return Tensor::from<float>(v, Shape{1, static_cast<std::int64_t>(v.size()), 1});
}

// ---- Windowed pools ------------------------------------------------------------------------

TEST(MaxPool, HandComputed1d) {
  Model x = input("x", {-1, 5, 1});
  // Strides default to the kernel size; the last element falls outside "valid".
  expect_values(run(max_pool(x, {.kernel_size = {2}}), vec1d({1, 5, 2, 4, 3})), {5, 4});
  // "same": ceil(5 / 2) = 3 windows, total padding 1, on the high side.
  expect_values(run(max_pool(x, {.kernel_size = {2}, .padding = "same"}), vec1d({1, 5, 2, 4, 3})),
                {5, 4, 3});
  // Padding never wins a maximum (it is -inf), even over negative values.
  Model y = max_pool(input("x", {-1, 3, 1}),
                     {.kernel_size = {2}, .strides = {1}, .padding = Pairs{{1, 1}}});
  expect_values(run(y, vec1d({-1, -5, -2})), {-1, -1, -2, -2});
}

TEST(AvgPool, PaddingCountsInTheDivisor) {
  Model y = avg_pool(input("x", {-1, 4, 1}),
                     {.kernel_size = {3}, .strides = {1}, .padding = Pairs{{1, 1}}});
  expect_values(run(y, vec1d({1, 2, 3, 4})), {3.0 / 3, 6.0 / 3, 9.0 / 3, 7.0 / 3});
}

TEST(LpPool, HandComputed1d) {
  Model x = input("x", {-1, 4, 1});
  expect_values(run(lp_pool(x, {.kernel_size = {2}}), vec1d({3, 4, 1, -2})), {5, std::sqrt(5.0)});
  // No absolute value: p = 1 is the plain window sum.
  expect_values(run(lp_pool(x, {.kernel_size = {2}, .norm = 1}), vec1d({3, 4, 1, -2})), {7, -1});
  expect_values(run(lp_pool(x, {.kernel_size = {2}, .norm = 3}), vec1d({1, 2, 3, 4})),
                {std::cbrt(9.0), std::cbrt(91.0)});
}

TEST(WindowPools, TwoDimensionalSameStrided) {
  Tensor x = random_f32({2, 5, 6, 3}, 1, 0.1, 1);
  Model in = input("x", {-1, 5, 6, 3});
  PoolOptions o{.kernel_size = {3, 2}, .strides = {2, 1}, .padding = "same"};
  Ints xs{2, 5, 6, 3}, ys{2, 3, 6, 3};
  // H: 3 windows, total (3 - 1) * 2 + 3 - 5 = 2 -> (1, 1); W: 6, total 5 + 2 - 6 = 1 -> (0, 1).
  RefWindow r{{3, 2}, {2, 1}, {1, 0}, {}};
  Tensor mx = run(max_pool(in, o), x);
  ASSERT_EQ(mx.shape(), Shape(ys));
  expect_values(mx, ref_window(values(x), xs, ys, r, true));
  std::vector<double> sums = ref_window(values(x), xs, ys, r, false);
  std::vector<double> avg = sums;
  for (double& v : avg) v /= 6;
  expect_values(run(avg_pool(in, o), x), avg);
  r.p = 2;
  std::vector<double> lp = ref_window(values(x), xs, ys, r, false);
  for (double& v : lp) v = std::sqrt(v);
  expect_values(run(lp_pool(in, o), x), lp);
}

TEST(WindowPools, DilationAndExplicitStrides) {
  Tensor x = random_f32({2, 7, 2}, 2);
  Tensor y = run(max_pool(input("x", {-1, 7, 2}),
                          {.kernel_size = {2}, .strides = {1}, .window_dilation = {3}}),
                 x);
  ASSERT_EQ(y.shape(), (Shape{2, 4, 2}));  // window extent 4
  expect_values(y, ref_window(values(x), {2, 7, 2}, {2, 4, 2}, {{2}, {1}, {0}, {3}}, true));
}

TEST(WindowPools, ChannelsFirst3d) {
  Tensor x = random_f32({1, 2, 4, 5, 4}, 3);  // [N, C, D, H, W]
  Tensor y = run(avg_pool(input("x", {-1, 2, 4, 5, 4}),
                          {.kernel_size = {2}, .padding = "same", .channels = Channels::first}),
                 x);
  ASSERT_EQ(y.shape(), (Shape{1, 2, 2, 3, 2}));
  // H: total (3 - 1) * 2 + 2 - 5 = 1 -> (0, 1).
  std::vector<double> want =
      ref_window(channels_to_last(values(x), {1, 2, 4, 5, 4}), {1, 4, 5, 4, 2}, {1, 2, 3, 2, 2},
                 {{2, 2, 2}, {2, 2, 2}, {0, 0, 0}, {}}, false);
  for (double& v : want) v /= 8;
  expect_values(channels_to_last(values(y), {1, 2, 2, 3, 2}), want);
}

TEST(WindowPools, IntegerInputs) {
  Model x = input("x", {-1, 4, 1}, DType::i32);
  Tensor v = Tensor::from<std::int32_t>({1, 7, 2, 4}, Shape{1, 4, 1});
  Tensor mx = run(max_pool(x, {.kernel_size = {2}}), v);
  EXPECT_EQ(mx.dtype(), DType::i32);
  expect_values(mx, {7, 4});
  Tensor avg = run(avg_pool(x, {.kernel_size = {2}}), v);
  EXPECT_EQ(avg.dtype(), DType::f32);
  expect_values(avg, {4, 3});
}

// ---- Adaptive pools ------------------------------------------------------------------------

TEST(AdaptivePool, UnevenBins1d) {
  // 5 -> 3: bins [0, 2), [1, 4), [3, 5).
  Model x = input("x", {-1, 5, 1});
  Tensor v = vec1d({1, 2, 3, 4, 5});
  expect_values(run(adaptive_avg_pool(x, {.output_size = {3}}), v), {1.5, 3, 4.5});
  expect_values(run(adaptive_max_pool(x, {.output_size = {3}}), v), {2, 4, 5});
  expect_values(run(adaptive_lp_pool(x, {.output_size = {3}}), v),
                {std::sqrt(5.0), std::sqrt(29.0), std::sqrt(41.0)});
  // 2 -> 3 repeats elements: bins [0, 1), [0, 2), [1, 2).
  expect_values(run(adaptive_avg_pool(input("x", {-1, 2, 1}), {.output_size = {3}}), vec1d({1, 3})),
                {1, 2, 3});
}

// PyTorch's bins over the spatial axes of a channels-last 2-D input.
std::vector<double> ref_adaptive(const std::vector<double>& x, const Ints& xs, const Ints& ys,
                                 int kind, double p = 2) {
  std::vector<double> y(static_cast<std::size_t>(numel(ys)));
  for (std::int64_t f = 0; f < numel(ys); ++f) {
    Ints q = unravel(f, ys);
    std::int64_t h0 = q[1] * xs[1] / ys[1], h1 = ((q[1] + 1) * xs[1] + ys[1] - 1) / ys[1];
    std::int64_t w0 = q[2] * xs[2] / ys[2], w1 = ((q[2] + 1) * xs[2] + ys[2] - 1) / ys[2];
    double acc = kind == 0 ? -std::numeric_limits<double>::infinity() : 0;
    for (std::int64_t h = h0; h < h1; ++h)
      for (std::int64_t w = w0; w < w1; ++w) {
        double v = x[static_cast<std::size_t>(ravel({q[0], h, w, q[3]}, xs))];
        acc = kind == 0 ? std::max(acc, v) : acc + (kind == 1 ? v : std::pow(v, p));
      }
    if (kind == 1) acc /= static_cast<double>((h1 - h0) * (w1 - w0));
    if (kind == 2) acc = std::pow(acc, 1 / p);
    y[static_cast<std::size_t>(f)] = acc;
  }
  return y;
}

TEST(AdaptivePool, TwoDimensional) {
  Tensor x = random_f32({2, 5, 4, 3}, 4, 0.1, 1);
  Model in = input("x", {-1, 5, 4, 3});
  Ints xs{2, 5, 4, 3}, ys{2, 3, 2, 3};
  AdaptivePoolOptions o{.output_size = {3, 2}};
  Tensor mx = run(adaptive_max_pool(in, o), x);
  ASSERT_EQ(mx.shape(), Shape(ys));
  expect_values(mx, ref_adaptive(values(x), xs, ys, 0));
  expect_values(run(adaptive_avg_pool(in, o), x), ref_adaptive(values(x), xs, ys, 1));
  o.norm = 3;
  expect_values(run(adaptive_lp_pool(in, o), x), ref_adaptive(values(x), xs, ys, 2, 3));
}

TEST(AdaptivePool, ChannelsFirstBroadcastsOneSize) {
  Tensor x = random_f32({1, 2, 5, 4}, 5);  // [N, C, H, W]
  Tensor y = run(adaptive_avg_pool(input("x", {-1, 2, 5, 4}),
                                   {.output_size = {3}, .channels = Channels::first}),
                 x);
  ASSERT_EQ(y.shape(), (Shape{1, 2, 3, 3}));
  expect_values(
      channels_to_last(values(y), {1, 2, 3, 3}),
      ref_adaptive(channels_to_last(values(x), {1, 2, 5, 4}), {1, 5, 4, 2}, {1, 3, 3, 2}, 1));
}

// ---- Global pools --------------------------------------------------------------------------

TEST(GlobalPool, ReducesSpatialAxes) {
  Tensor x = random_f32({2, 3, 4, 2}, 6);
  std::vector<double> v = values(x);
  std::vector<double> mx(4, -1e9), avg(4, 0), lp(4, 0);
  for (std::int64_t f = 0; f < 48; ++f) {
    Ints i = unravel(f, {2, 3, 4, 2});
    auto o = static_cast<std::size_t>(i[0] * 2 + i[3]);
    double e = v[static_cast<std::size_t>(f)];
    mx[o] = std::max(mx[o], e);
    avg[o] += e / 12;
    lp[o] += e * e;
  }
  for (double& e : lp) e = std::sqrt(e);
  Model in = input("x", {-1, 3, 4, 2});
  Tensor y = run(global_max_pool(in), x);
  ASSERT_EQ(y.shape(), (Shape{2, 2}));
  expect_values(y, mx);
  expect_values(run(global_avg_pool(in), x), avg);
  Tensor kept = run(global_lp_pool(in, {.keep_axes = true}), x);
  ASSERT_EQ(kept.shape(), (Shape{2, 1, 1, 2}));
  expect_values(kept, lp);
  // Channels-first: the same data read as [N, C, H, W] = [2, 3, 4, 2] pools axes 2, 3.
  Tensor first = run(global_avg_pool(in, {.keep_axes = true, .channels = Channels::first}), x);
  ASSERT_EQ(first.shape(), (Shape{2, 3, 1, 1}));
  for (std::size_t k = 0; k < 6; ++k) {
    double s = 0;
    for (std::size_t j = 0; j < 8; ++j) s += v[k * 8 + j];
    EXPECT_NEAR(values(first)[k], s / 8, 1e-5);
  }
}

// ---- Errors --------------------------------------------------------------------------------

TEST(PoolErrors, Options) {
  Model x = input("x", {-1, 8, 8, 2});
  expect_error([&] { max_pool(x, {.kernel_size = {0}}); }, "max_pool: kernel_size must be >= 1");
  expect_error(
      [&] {
        avg_pool(x, {.kernel_size = {2}, .strides = {1, 1, 1, 1}});
      },
      "avg_pool: strides has 4 entries, expected at most 3");
  expect_error(
      [&] {
        max_pool(x, {.padding = Pairs{{-1, 0}}});
      },
      "max_pool: padding must be non-negative, got (-1, 0)");
  expect_error([&] { lp_pool(x, {.norm = 0}); }, "lp_pool: norm must be positive, got 0");
  expect_error([&] { adaptive_avg_pool(x, {}); }, "adaptive_avg_pool: output_size is required");
  expect_error([&] { adaptive_max_pool(x, {.output_size = {0}}); },
               "adaptive_max_pool: output_size must be >= 1");
  expect_error([&] { global_lp_pool(x, {.norm = -1}); }, "global_lp_pool: norm must be positive");
}

TEST(PoolErrors, ShapesAtBuild) {
  auto run_on = [](const Model& m, const Shape& shape) {
    return [m, shape] { run(m, Tensor::zeros(shape)); };
  };
  expect_error(run_on(max_pool(input("x", {-1, 4}), {.kernel_size = {2}}), {2, 4}),
               "layer 'max_pool_0' (max_pool) with input(s) f32[2][4]: max_pool: expected an "
               "input of rank 3 to 5");
  expect_error(run_on(avg_pool(input("x", {-1, 8, 2}), {.kernel_size = {2, 2}}), {1, 8, 2}),
               "avg_pool: kernel_size has 2 entries, expected 1 (one per spatial axis)");
  expect_error(run_on(adaptive_avg_pool(input("x", {-1, 8, 8, 2}), {.output_size = {2, 2, 2}}),
                      {1, 8, 8, 2}),
               "adaptive_avg_pool: output_size has 3 entries, expected 2");
  expect_error(run_on(global_max_pool(input("x", {-1, 2})), {1, 2}),
               "global_max_pool: expected an input of rank 3 to 5");
}

// ---- Gradients -------------------------------------------------------------------------------

// d sum(w * pool(x)) / dx against central differences, w fixed and random.
void expect_pool_gradients(const std::function<Model(const Model&)>& make, const Shape& shape,
                           double lo = -1, double hi = 1) {
  Model m = make(input("x", shape.dims(), DType::f64));
  glia::testing::expect_gradients_match(
      [&](const std::vector<Expr>& in) {
        Expr y = apply(m, {}, {}, {{"x", in[0]}}).output;
        return sum(y * Expr(glia::testing::random_tensor(y.shape(), -1, 1, 99)));
      },
      {glia::testing::random_tensor(shape, lo, hi, 3)});
}

TEST(PoolGradients, WindowPools) {
  PoolOptions o{.kernel_size = {3, 2}, .strides = {2, 1}, .padding = "same"};
  expect_pool_gradients([&](const Model& x) { return max_pool(x, o); }, {2, 5, 4, 2});
  expect_pool_gradients([&](const Model& x) { return avg_pool(x, o); }, {2, 5, 4, 2});
  expect_pool_gradients([&](const Model& x) { return lp_pool(x, o); }, {2, 5, 4, 2});
  PoolOptions cubic{.kernel_size = {2}, .strides = {1}, .norm = 3};
  expect_pool_gradients([&](const Model& x) { return lp_pool(x, cubic); }, {1, 5, 2}, 0.5, 1.5);
}

TEST(PoolGradients, AdaptiveAndGlobalPools) {
  AdaptivePoolOptions o{.output_size = {3, 2}};
  expect_pool_gradients([&](const Model& x) { return adaptive_avg_pool(x, o); }, {1, 5, 3, 2});
  expect_pool_gradients([&](const Model& x) { return adaptive_max_pool(x, o); }, {1, 5, 3, 2});
  expect_pool_gradients([](const Model& x) { return global_lp_pool(x); }, {2, 3, 2});
}

}  // namespace
}  // namespace glia
