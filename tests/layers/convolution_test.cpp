// Convolution layers against naive loops written here from the drawn parameters:
// shapes, strides, padding, dilations, groups, layouts, option errors and gradients.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "autograd/gradcheck.hpp"
#include "glia/layers.hpp"
#include "layers/spatial_test_util.hpp"

namespace glia {
namespace {

using namespace spatial_test;  // NOLINT(google-build-using-namespace)

struct RefConv {
  Ints strides{}, low{}, kernel_dilation{}, input_dilation{};
  std::int64_t groups = 1;
};

// y[n, q..., o] = sum over kernel positions k and the group's channels c of
// x[n, (q * s + k * kd - low) / id, g * C/G + c] * w[k..., c, o], where the position
// must land on an element of the input dilated by id. Channels-last throughout.
std::vector<double> ref_conv(const std::vector<double>& x, const Ints& xs,
                             const std::vector<double>& w, const Ints& ws, const Ints& ys,
                             const RefConv& r) {
  std::size_t sp = xs.size() - 2;
  std::int64_t cg = ws[sp], og = ys.back() / r.groups;
  Ints kdims(ws.begin(), ws.begin() + static_cast<std::ptrdiff_t>(sp));
  std::vector<double> y(static_cast<std::size_t>(numel(ys)));
  for (std::int64_t f = 0; f < numel(ys); ++f) {
    Ints q = unravel(f, ys);
    std::int64_t o = q.back(), g = o / og;
    double acc = 0;
    for (std::int64_t kf = 0; kf < numel(kdims); ++kf) {
      Ints k = unravel(kf, kdims), xi{q[0]};
      bool inside = true;
      for (std::size_t d = 0; d < sp; ++d) {
        std::int64_t id = r.input_dilation.empty() ? 1 : r.input_dilation[d];
        std::int64_t kd = r.kernel_dilation.empty() ? 1 : r.kernel_dilation[d];
        std::int64_t pos = q[d + 1] * r.strides[d] + k[d] * kd - r.low[d];
        inside = inside && pos >= 0 && pos % id == 0 && pos / id < xs[d + 1];
        xi.push_back(pos / id);
      }
      if (!inside) continue;
      for (std::int64_t c = 0; c < cg; ++c) {
        Ints xc = xi, wk = k;
        xc.push_back(g * cg + c);
        wk.insert(wk.end(), {c, o});
        acc +=
            x[static_cast<std::size_t>(ravel(xc, xs))] * w[static_cast<std::size_t>(ravel(wk, ws))];
      }
    }
    y[static_cast<std::size_t>(f)] = acc;
  }
  return y;
}

// The transposed conv written as a scatter (PyTorch's definition): each x[n, i..., c]
// adds x * w[k..., c, o] at y[n, i * s + k * kd - low..., o]; positions outside y drop.
std::vector<double> ref_conv_transpose(const std::vector<double>& x, const Ints& xs,
                                       const std::vector<double>& w, const Ints& ws, const Ints& ys,
                                       const Ints& strides, const Ints& low, std::int64_t kd = 1) {
  std::size_t sp = xs.size() - 2;
  Ints kdims(ws.begin(), ws.begin() + static_cast<std::ptrdiff_t>(sp));
  std::vector<double> y(static_cast<std::size_t>(numel(ys)));
  for (std::int64_t f = 0; f < numel(xs); ++f) {
    Ints i = unravel(f, xs);
    for (std::int64_t kf = 0; kf < numel(kdims); ++kf) {
      Ints k = unravel(kf, kdims), yi{i[0]};
      bool inside = true;
      for (std::size_t d = 0; d < sp; ++d) {
        std::int64_t pos = i[d + 1] * strides[d] + k[d] * kd - low[d];
        inside = inside && pos >= 0 && pos < ys[d + 1];
        yi.push_back(pos);
      }
      if (!inside) continue;
      for (std::int64_t o = 0; o < ys.back(); ++o) {
        Ints yo = yi, wk = k;
        yo.push_back(o);
        wk.insert(wk.end(), {i.back(), o});
        y[static_cast<std::size_t>(ravel(yo, ys))] +=
            x[static_cast<std::size_t>(f)] * w[static_cast<std::size_t>(ravel(wk, ws))];
      }
    }
  }
  return y;
}

// Adds bias[o] along the last axis.
std::vector<double> plus_bias(std::vector<double> y, const std::vector<double>& bias) {
  for (std::size_t i = 0; i < y.size(); ++i) y[i] += bias[i % bias.size()];
  return y;
}

struct Ran {
  ModelState state;
  Tensor out;
  std::vector<double> param(const std::string& layer, const std::string& name) const {
    return values(state.params.at(layer).at(name));
  }
};

// Builds the model, draws parameters (biases made non-zero so they are checked) and
// runs it on x.
Ran run(const Model& y, const Tensor& x) {
  auto [init, predict] = build(y);
  ModelState s = init(0);
  unsigned seed = 100;
  for (auto& [layer, params] : s.params)
    for (auto& [name, t] : params)
      if (name.find("bias") != std::string::npos) t = random_f32(t.shape(), ++seed);
  Tensor out = predict(s, x);
  return {s, out};
}

TEST(Conv, HandComputed1d) {
  Model y = conv(input("x", {-1, 4, 1}), 1, {.kernel_size = {3}});
  auto [init, predict] = build(y);
  ModelState s = init(0);
  s.params["conv_0"]["kernel"] = Tensor::from<float>({1, 0, -1}, Shape{3, 1, 1});
  s.params["conv_0"]["bias"] = Tensor::from<float>({0.5f}, Shape{1});
  Tensor out = predict(s, Tensor::from<float>({1, 2, 3, 4}, Shape{1, 4, 1}));
  EXPECT_EQ(out.shape(), (Shape{1, 2, 1}));
  expect_values(out, {1 - 3 + 0.5, 2 - 4 + 0.5});
}

TEST(Conv, Strided1dValid) {
  Tensor x = random_f32({2, 7, 3}, 1);
  Ran r = run(conv(input("x", {-1, 7, 3}), 4, {.kernel_size = {3}, .strides = {2}}), x);
  EXPECT_EQ(r.state.params.at("conv_0").at("kernel").shape(), (Shape{3, 3, 4}));
  ASSERT_EQ(r.out.shape(), (Shape{2, 3, 4}));  // (7 - 3) / 2 + 1
  expect_values(r.out, plus_bias(ref_conv(values(x), {2, 7, 3}, r.param("conv_0", "kernel"),
                                          {3, 3, 4}, {2, 3, 4}, {{2}, {0}}),
                                 r.param("conv_0", "bias")));
}

TEST(Conv, Same2dStrided) {
  Tensor x = random_f32({1, 5, 6, 2}, 2);
  Ran r = run(conv(input("x", {-1, 5, 6, 2}), 3,
                   {.kernel_size = {3, 2}, .strides = {2}, .padding = "same"}),
              x);
  ASSERT_EQ(r.out.shape(), (Shape{1, 3, 3, 3}));  // ceil(5 / 2), ceil(6 / 2)
  // H: total (3 - 1) * 2 + 3 - 5 = 2 -> (1, 1); W: (3 - 1) * 2 + 2 - 6 = 0.
  expect_values(r.out, plus_bias(ref_conv(values(x), {1, 5, 6, 2}, r.param("conv_0", "kernel"),
                                          {3, 2, 2, 3}, {1, 3, 3, 3}, {{2, 2}, {1, 0}}),
                                 r.param("conv_0", "bias")));
}

TEST(Conv, ExplicitPaddingAndKernelDilation2d) {
  Tensor x = random_f32({2, 6, 6, 2}, 3);
  Ran r = run(conv(input("x", {-1, 6, 6, 2}), 2,
                   {.kernel_size = {3},
                    .padding = std::vector<std::pair<std::int64_t, std::int64_t>>{{1, 2}, {0, 1}},
                    .kernel_dilation = {2},
                    .activation = "relu"}),
              x);
  // Dilated window 5: H 1 + 6 + 2 - 5 + 1 = 5, W 6 + 1 - 5 + 1 = 3.
  ASSERT_EQ(r.out.shape(), (Shape{2, 5, 3, 2}));
  std::vector<double> want =
      plus_bias(ref_conv(values(x), {2, 6, 6, 2}, r.param("conv_0", "kernel"), {3, 3, 2, 2},
                         {2, 5, 3, 2}, {{1, 1}, {1, 0}, {2, 2}}),
                r.param("conv_0", "bias"));
  for (double& v : want) v = std::max(v, 0.0);
  expect_values(r.out, want);
}

TEST(Conv, Same3d) {
  Tensor x = random_f32({1, 4, 3, 5, 2}, 4);
  Ran r =
      run(conv(input("x", {-1, 4, 3, 5, 2}), 3, {.kernel_size = {2, 3, 1}, .padding = "same"}), x);
  EXPECT_EQ(r.state.params.at("conv_0").at("kernel").shape(), (Shape{2, 3, 1, 2, 3}));
  ASSERT_EQ(r.out.shape(), (Shape{1, 4, 3, 5, 3}));
  // Totals 1, 2, 0: the smaller half low.
  expect_values(r.out, plus_bias(ref_conv(values(x), {1, 4, 3, 5, 2}, r.param("conv_0", "kernel"),
                                          {2, 3, 1, 2, 3}, {1, 4, 3, 5, 3}, {{1, 1, 1}, {0, 1, 0}}),
                                 r.param("conv_0", "bias")));
}

TEST(Conv, FeatureGroups) {
  Tensor x = random_f32({2, 6, 4}, 5);
  Ran r = run(conv(input("x", {-1, 6, 4}), 6, {.kernel_size = {3}, .feature_groups = 2}), x);
  EXPECT_EQ(r.state.params.at("conv_0").at("kernel").shape(), (Shape{3, 2, 6}));
  ASSERT_EQ(r.out.shape(), (Shape{2, 4, 6}));
  expect_values(r.out, plus_bias(ref_conv(values(x), {2, 6, 4}, r.param("conv_0", "kernel"),
                                          {3, 2, 6}, {2, 4, 6}, {{1}, {0}, {}, {}, 2}),
                                 r.param("conv_0", "bias")));
}

TEST(Conv, InputDilation) {
  Tensor x = random_f32({1, 4, 2}, 6);
  Ran r = run(conv(input("x", {-1, 4, 2}), 1,
                   {.kernel_size = {2}, .input_dilation = {2}, .use_bias = false}),
              x);
  EXPECT_EQ(r.state.params.at("conv_0").count("bias"), 0u);
  ASSERT_EQ(r.out.shape(), (Shape{1, 6, 1}));  // dilated input 7
  expect_values(r.out, ref_conv(values(x), {1, 4, 2}, r.param("conv_0", "kernel"), {2, 2, 1},
                                {1, 6, 1}, {{1}, {0}, {}, {2}}));
}

TEST(Conv, ChannelsFirst) {
  Tensor x = random_f32({2, 3, 5, 4}, 7);  // [N, C, H, W]
  Ran r = run(conv(input("x", {-1, 3, 5, 4}), 2,
                   {.kernel_size = {3}, .padding = "same", .channels = Channels::first}),
              x);
  EXPECT_EQ(r.state.params.at("conv_0").at("kernel").shape(), (Shape{3, 3, 3, 2}));
  ASSERT_EQ(r.out.shape(), (Shape{2, 2, 5, 4}));
  std::vector<double> want =
      plus_bias(ref_conv(channels_to_last(values(x), {2, 3, 5, 4}), {2, 5, 4, 3},
                         r.param("conv_0", "kernel"), {3, 3, 3, 2}, {2, 5, 4, 2}, {{1, 1}, {1, 1}}),
                r.param("conv_0", "bias"));
  expect_values(channels_to_last(values(r.out), {2, 2, 5, 4}), want);
}

TEST(ConvTranspose, HandComputed1d) {
  Model y = conv_transpose(input("x", {-1, 2, 1}), 1, {.kernel_size = {3}, .strides = {2}});
  auto [init, predict] = build(y);
  ModelState s = init(0);
  s.params["conv_transpose_0"]["kernel"] = Tensor::from<float>({1, 10, 100}, Shape{3, 1, 1});
  Tensor out = predict(s, Tensor::from<float>({1, 2}, Shape{1, 2, 1}));
  ASSERT_EQ(out.shape(), (Shape{1, 5, 1}));  // (2 - 1) * 2 + 3
  // x0 * k at 0..2, x1 * k at 2..4.
  expect_values(out, {1, 10, 100 + 2, 20, 200});
}

TEST(ConvTranspose, OutputShapes) {
  using Pairs = std::vector<std::pair<std::int64_t, std::int64_t>>;
  auto shape = [](const ConvLayerOptions& o) {
    Model y = conv_transpose(input("x", {-1, 3, 4, 2}), 3, o);
    auto [init, predict] = build(y);
    return predict(init(0), Tensor::zeros({1, 3, 4, 2})).shape();
  };
  EXPECT_EQ(shape({.kernel_size = {3}, .strides = {2}}), (Shape{1, 7, 9, 3}));
  EXPECT_EQ(shape({.kernel_size = {3}, .strides = {2}, .padding = "same"}), (Shape{1, 6, 8, 3}));
  EXPECT_EQ(shape({.kernel_size = {3}, .strides = {2}, .padding = Pairs{{1, 1}}}),
            (Shape{1, 5, 7, 3}));
  // Kernel smaller than the stride.
  EXPECT_EQ(shape({.kernel_size = {2}, .strides = {3}}), (Shape{1, 8, 11, 3}));
  EXPECT_EQ(shape({.kernel_size = {2}, .strides = {3}, .padding = "same"}), (Shape{1, 9, 12, 3}));
  EXPECT_EQ(shape({.kernel_size = {3}, .strides = {2}, .kernel_dilation = {2}}),
            (Shape{1, 9, 11, 3}));
}

TEST(ConvTranspose, ValuesMatchScatter) {
  using Pairs = std::vector<std::pair<std::int64_t, std::int64_t>>;
  Tensor x = random_f32({2, 3, 4, 2}, 8);
  struct Case {
    ConvLayerOptions o;
    Ints out, low;
  };
  // "same" with k = 3, s = 2: the "same" conv on 6 elements pads (0, 1), so nothing is
  // cropped low; explicit (1, 2) crops 1 low.
  std::vector<Case> cases{
      {{.kernel_size = {3}, .strides = {2}}, {2, 7, 9, 3}, {0, 0}},
      {{.kernel_size = {3}, .strides = {2}, .padding = "same"}, {2, 6, 8, 3}, {0, 0}},
      {{.kernel_size = {3}, .strides = {2, 1}, .padding = Pairs{{1, 2}, {0, 1}}},
       {2, 4, 5, 3},
       {1, 0}},
      {{.kernel_size = {4}, .strides = {1}, .padding = "same"}, {2, 3, 4, 3}, {1, 1}}};
  for (const Case& c : cases) {
    Ran r = run(conv_transpose(input("x", {-1, 3, 4, 2}), 3, c.o), x);
    ASSERT_EQ(r.out.shape(), Shape(c.out));
    Ints ks = r.state.params.at("conv_transpose_0").at("kernel").shape().dims();
    Ints strides = c.o.strides.size() == 1 ? Ints{c.o.strides[0], c.o.strides[0]} : c.o.strides;
    expect_values(r.out, plus_bias(ref_conv_transpose(values(x), {2, 3, 4, 2},
                                                      r.param("conv_transpose_0", "kernel"), ks,
                                                      c.out, strides, c.low),
                                   r.param("conv_transpose_0", "bias")));
  }
}

TEST(DepthwiseConv, ShapesAndValues) {
  Tensor x = random_f32({1, 4, 5, 3}, 9);
  Ran r = run(
      depthwise_conv(input("x", {-1, 4, 5, 3}), 2, {.kernel_size = {2, 3}, .strides = {1, 2}}), x);
  EXPECT_EQ(r.state.params.at("depthwise_conv_0").at("kernel").shape(), (Shape{2, 3, 1, 6}));
  EXPECT_EQ(r.state.params.at("depthwise_conv_0").at("bias").shape(), (Shape{6}));
  ASSERT_EQ(r.out.shape(), (Shape{1, 3, 2, 6}));
  // Output channel c * 2 + j reads input channel c only.
  expect_values(r.out,
                plus_bias(ref_conv(values(x), {1, 4, 5, 3}, r.param("depthwise_conv_0", "kernel"),
                                   {2, 3, 1, 6}, {1, 3, 2, 6}, {{1, 2}, {0, 0}, {}, {}, 3}),
                          r.param("depthwise_conv_0", "bias")));
}

TEST(SeparableConv, TwoDimensional) {
  Tensor x = random_f32({2, 5, 5, 2}, 10);
  Ran r = run(
      separable_conv2d(input("x", {-1, 5, 5, 2}), 3, 2, {.kernel_size = {3}, .padding = "same"}),
      x);
  const auto& p = r.state.params.at("separable_conv2d_0");
  EXPECT_EQ(p.at("depthwise_kernel").shape(), (Shape{3, 3, 1, 4}));
  EXPECT_EQ(p.at("depthwise_bias").shape(), (Shape{4}));
  EXPECT_EQ(p.at("pointwise_kernel").shape(), (Shape{1, 1, 4, 3}));
  EXPECT_EQ(p.at("pointwise_bias").shape(), (Shape{3}));
  ASSERT_EQ(r.out.shape(), (Shape{2, 5, 5, 3}));
  std::vector<double> mid =
      plus_bias(ref_conv(values(x), {2, 5, 5, 2}, r.param("separable_conv2d_0", "depthwise_kernel"),
                         {3, 3, 1, 4}, {2, 5, 5, 4}, {{1, 1}, {1, 1}, {}, {}, 2}),
                r.param("separable_conv2d_0", "depthwise_bias"));
  expect_values(r.out, plus_bias(ref_conv(mid, {2, 5, 5, 4},
                                          r.param("separable_conv2d_0", "pointwise_kernel"),
                                          {1, 1, 4, 3}, {2, 5, 5, 3}, {{1, 1}, {0, 0}}),
                                 r.param("separable_conv2d_0", "pointwise_bias")));
}

TEST(SeparableConv, ThreeDimensional) {
  Tensor x = random_f32({1, 3, 3, 4, 2}, 11);
  Ran r = run(separable_conv3d(input("x", {-1, 3, 3, 4, 2}), 2, 1, {.kernel_size = {2}}), x);
  const auto& p = r.state.params.at("separable_conv3d_0");
  EXPECT_EQ(p.at("depthwise_kernel").shape(), (Shape{2, 2, 2, 1, 2}));
  EXPECT_EQ(p.at("pointwise_kernel").shape(), (Shape{1, 1, 1, 2, 2}));
  ASSERT_EQ(r.out.shape(), (Shape{1, 2, 2, 3, 2}));
  std::vector<double> mid = plus_bias(
      ref_conv(values(x), {1, 3, 3, 4, 2}, r.param("separable_conv3d_0", "depthwise_kernel"),
               {2, 2, 2, 1, 2}, {1, 2, 2, 3, 2}, {{1, 1, 1}, {0, 0, 0}, {}, {}, 2}),
      r.param("separable_conv3d_0", "depthwise_bias"));
  expect_values(r.out, plus_bias(ref_conv(mid, {1, 2, 2, 3, 2},
                                          r.param("separable_conv3d_0", "pointwise_kernel"),
                                          {1, 1, 1, 2, 2}, {1, 2, 2, 3, 2}, {{1, 1, 1}, {0, 0, 0}}),
                                 r.param("separable_conv3d_0", "pointwise_bias")));
}

// ---- Errors --------------------------------------------------------------------------------

TEST(ConvErrors, OptionsAtCreation) {
  Model x = input("x", {-1, 8, 8, 4});
  expect_error([&] { conv(x, 0); }, "conv: filters must be positive, got 0");
  expect_error([&] { conv(x, 4, {.strides = {0}}); }, "conv: strides must be >= 1, got [0]");
  expect_error(
      [&] {
        conv(x, 4, {.kernel_size = {3, 3, 3, 3}});
      },
      "conv: kernel_size has 4 entries, expected at most 3");
  expect_error([&] { conv(x, 4, {.padding = "full"}); },
               "conv: padding must be \"valid\", \"same\" or (low, high) pairs, got \"full\"");
  expect_error([&] { conv(x, 3, {.feature_groups = 2}); },
               "conv: filters (3) are not divisible by feature_groups (2)");
  expect_error([&] { conv(x, 4, {.activation = "nope"}); }, "conv: unknown activation 'nope'");
  expect_error([&] { conv_transpose(x, -1); }, "conv_transpose: filters must be positive");
  expect_error([&] { conv_transpose(x, 2, {.input_dilation = {2}}); },
               "conv_transpose: input_dilation is not supported");
  expect_error([&] { depthwise_conv(x, 0); },
               "depthwise_conv: channel_multiplier must be positive");
  expect_error([&] { depthwise_conv(x, 1, {.feature_groups = 2}); },
               "depthwise_conv: feature_groups is set by the layer");
  expect_error([&] { separable_conv2d(x, 0); }, "separable_conv2d: filters must be positive");
}

TEST(ConvErrors, ShapesAtBuild) {
  auto init_of = [](const Model& m) { return [m] { build(m).init(0); }; };
  expect_error(
      init_of(conv(input("x", {-1, 8, 4}), 2, {.kernel_size = {3, 3}})),
      "conv: kernel_size has 2 entries, expected 1 (one per spatial axis) or a single value");
  expect_error(init_of(conv(input("x", {-1, 8, 8, 3}), 4, {.feature_groups = 2})),
               "conv: input channels (3) are not divisible by feature_groups (2)");
  expect_error(init_of(conv(input("x", {-1, 4}), 2)),
               "layer 'conv_0' (conv) with input(s) f32[1][4]: conv: expected an input of rank 3 "
               "to 5");
  expect_error(init_of(separable_conv2d(input("x", {-1, 8, 4}), 2)),
               "separable_conv2d: expected an input of rank 4 (2 spatial axes), got rank 3");
  expect_error(init_of(separable_conv3d(input("x", {-1, 8, 8, 4}), 2)),
               "separable_conv3d: expected an input of rank 5 (3 spatial axes), got rank 4");
  expect_error(
      init_of(conv(
          input("x", {-1, 8, 8, 4}), 2,
          {.padding = std::vector<std::pair<std::int64_t, std::int64_t>>{{1, 1}, {1, 1}, {1, 1}}})),
      "conv: padding has 3 pairs, expected 2 (one per spatial axis) or a single pair");
}

}  // namespace
}  // namespace glia
