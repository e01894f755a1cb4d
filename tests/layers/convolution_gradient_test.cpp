// Gradients through the convolution layers agree with central finite differences (f64).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "autograd/gradcheck.hpp"
#include "glia/layers.hpp"
#include "layers/f64_params.hpp"
#include "layers/spatial_test_util.hpp"

namespace glia {
namespace {

using testing::with_f64_params;

using namespace spatial_test;  // NOLINT(google-build-using-namespace)

// d sum(w * layer(x)) / d (x, params...) against central differences, w fixed and random.
void expect_layer_gradients(const std::function<Model(const Model&)>& make, const Shape& x_shape) {
  ModelState drawn = build(make(input("x", x_shape.dims()))).init(0);
  const std::string layer = drawn.params.begin()->first;
  std::vector<std::string> names;
  std::vector<Tensor> args{glia::testing::random_tensor(x_shape, -1, 1, 1)};
  unsigned seed = 1;
  for (const auto& [name, t] : drawn.params.at(layer)) {
    names.push_back(name);
    args.push_back(glia::testing::random_tensor(t.shape(), -1, 1, ++seed));
  }
  Model m = with_f64_params(make(input("x", x_shape.dims(), DType::f64)));
  glia::testing::expect_gradients_match(
      [&](const std::vector<Expr>& in) {
        ExprParamMap params;
        for (std::size_t i = 0; i < names.size(); ++i) params[layer][names[i]] = in[i + 1];
        Expr y = apply(m, params, {}, {{"x", in[0]}}).output;
        return sum(y * Expr(glia::testing::random_tensor(y.shape(), -1, 1, 99)));
      },
      args);
}

TEST(ConvGradients, Conv) {
  expect_layer_gradients(
      [](const Model& x) {
        return conv(x, 4,
                    {.kernel_size = {3, 2},
                     .strides = {2, 1},
                     .padding = "same",
                     .feature_groups = 2,
                     .activation = "tanh"});
      },
      {2, 5, 4, 2});
  expect_layer_gradients(
      [](const Model& x) {
        return conv(x, 2,
                    {.kernel_size = {2}, .kernel_dilation = {2}, .channels = Channels::first});
      },
      {1, 3, 6});
}

TEST(ConvGradients, ConvTranspose) {
  expect_layer_gradients(
      [](const Model& x) {
        return conv_transpose(x, 2, {.kernel_size = {3}, .strides = {2}, .padding = "same"});
      },
      {2, 3, 3, 2});
}

TEST(ConvGradients, DepthwiseAndSeparable) {
  expect_layer_gradients(
      [](const Model& x) { return depthwise_conv(x, 2, {.kernel_size = {3}, .strides = {2}}); },
      {2, 7, 3});
  expect_layer_gradients(
      [](const Model& x) {
        return separable_conv2d(x, 3, 2, {.kernel_size = {2}, .padding = "same"});
      },
      {1, 3, 4, 2});
}

}  // namespace
}  // namespace glia
