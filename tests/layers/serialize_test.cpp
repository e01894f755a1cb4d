// model_to_json / model_from_json round trips: a table of small models covering every
// built-in layer and option variant (initializers with their arguments, DAGs with several
// inputs, named layers, frozen parameters), each checked by expect_round_trip.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <set>

#include "builtin_layer_types.hpp"
#include "layers/serialize_util.hpp"

namespace glia {
namespace {

namespace init = initializers;
using testing::expect_round_trip;

struct Case {
  std::string label;
  Model model;
};

std::vector<Case> linear_cases() {
  Model x = input("x", {-1, 4});
  Model h = dense(x, 5,
                  {.activation = "relu",
                   .use_bias = false,
                   .kernel_initializer = init::he_normal(1.5),
                   .name = "hidden"});
  Model chain = x;
  std::vector<std::pair<Initializer, Initializer>> inits = {
      {init::identity(0.5), init::normal(0.5, 0.2)},
      {init::lecun_uniform(2), init::uniform(0.3)},
      {init::lecun_normal(), init::ones()},
      {init::glorot_normal(0.8), init::zeros()},
      {init::he_uniform(), init::full(-0.125)},
      {init::variance_scaling(2, init::FanMode::fan_out, init::Distribution::truncated_normal),
       init::full(0.1)},
      {init::variance_scaling(0.5, init::FanMode::fan_avg, init::Distribution::uniform),
       init::normal()},
      {init::variance_scaling(), init::uniform()},
      {init::orthogonal(1.5), init::zeros()},
      {init::glorot_uniform(3), init::zeros()}};
  for (const auto& [k, b] : inits)
    chain = dense(chain, 4, {.kernel_initializer = k, .bias_initializer = b});
  Model a = input("a", {-1, 3}), b = input("b", {-1, 2});
  Model ids = input("ids", {-1, 3}, DType::i32);
  return {
      {"dense_default", dense(x, 3)},
      {"dense_options", dense(h, 2,
                              {.activation = "softmax",
                               .kernel_initializer = init::orthogonal(0.5),
                               .bias_initializer = init::full(0.25)})},
      {"dense_initializers", chain},
      {"bilinear",
       bilinear(a, b, 4, {.activation = "tanh", .bias_initializer = init::normal(0.1, 0.3)})},
      {"bilinear_no_bias", bilinear(a, b, 2, {.use_bias = false, .name = "bi"})},
      {"embedding",
       dense(flatten(embedding(ids, 7, 4, {.kernel_initializer = init::normal(0, 1)})), 2)},
      {"bias", bias(x, {.bias_initializer = init::uniform(0.3), .name = "offset"})},
  };
}

std::vector<Case> conv_cases() {
  Model x1 = input("x", {-1, 8, 3});
  Model x2 = input("x", {-1, 6, 6, 4});
  Model x2f = input("x", {-1, 4, 5, 5});
  Model x3 = input("x", {-1, 4, 4, 4, 2});
  using Pairs = std::vector<std::pair<std::int64_t, std::int64_t>>;
  return {
      {"conv1d", conv(x1, 4,
                      {.kernel_size = {3},
                       .strides = {2},
                       .padding = "same",
                       .kernel_dilation = {2},
                       .activation = "gelu"})},
      {"conv2d", conv(x2, 6,
                      {.kernel_size = {3, 2},
                       .padding = Pairs{{1, 0}, {2, 1}},
                       .input_dilation = {2},
                       .feature_groups = 2,
                       .kernel_initializer = init::variance_scaling(1.5, init::FanMode::fan_out,
                                                                    init::Distribution::uniform),
                       .bias_initializer = init::full(-0.5)})},
      {"conv2d_channels_first",
       conv(x2f, 3, {.kernel_size = {2}, .channels = Channels::first, .use_bias = false})},
      {"conv3d", conv(x3, 2, {.kernel_size = {2, 2, 2}, .strides = {1, 2, 1}})},
      {"conv_transpose",
       conv_transpose(
           conv_transpose(x2, 2, {.kernel_size = {3}, .strides = {2}, .padding = "same"}), 2,
           {.kernel_size = {2, 3}, .padding = Pairs{{1, 1}, {0, 1}}, .name = "up"})},
      {"depthwise_conv",
       depthwise_conv(x2, 2, {.kernel_size = {3}, .padding = "same", .activation = "relu6"})},
      {"separable_conv2d", separable_conv2d(x2, 4, 2, {.kernel_size = {3}, .strides = {1, 2}})},
      {"separable_conv3d", separable_conv3d(input("v", {-1, 3, 3, 3, 2}), 3, 1,
                                            {.kernel_size = {2}, .use_bias = false})},
  };
}

std::vector<Case> activation_cases() {
  std::vector<Case> cases;
  Model x = input("x", {-1, 5});
  for (const std::string& name : activations::names())
    cases.push_back({"activation_" + name, activation(x, name)});
  cases.push_back({"activation_named", activation(activation(x, "relu", {.name = "r"}), "silu")});
  cases.push_back({"dense_activations",
                   dense(dense(x, 3, {.activation = "mish"}), 2, {.activation = "log_softmax"})});
  return cases;
}

std::vector<Case> dropout_pool_cases() {
  Model x = input("x", {-1, 6, 6, 2});
  Model xf = input("x", {-1, 2, 6, 6});
  Model r = input("x", {-1, 7, 5, 2});
  using Pairs = std::vector<std::pair<std::int64_t, std::int64_t>>;
  return {
      {"dropouts",
       spatial_dropout(feature_alpha_dropout(
                           alpha_dropout(dropout(x, {.rate = 0.3}), {.rate = 0.2}), {.rate = 0.1}),
                       {.rate = 0.4, .name = "drop"})},
      {"dropout_zero", dropout(x, {.rate = 0})},
      {"max_pool", max_pool(x, {.kernel_size = {2}})},
      {"avg_pool", avg_pool(x, {.kernel_size = {3}, .strides = {1}, .padding = "same"})},
      {"lp_pool",
       lp_pool(x,
               {.kernel_size = {2, 3}, .strides = {2, 1}, .window_dilation = {1, 2}, .norm = 3})},
      {"max_pool_channels_first", max_pool(xf, {.kernel_size = {2},
                                                .padding = Pairs{{1, 1}, {0, 0}},
                                                .channels = Channels::first})},
      {"adaptive_avg_pool", adaptive_avg_pool(r, {.output_size = {3, 2}})},
      {"adaptive_max_pool", adaptive_max_pool(r, {.output_size = {2}, .name = "amp"})},
      {"adaptive_lp_pool", adaptive_lp_pool(r, {.output_size = {3}, .norm = 1.5})},
      {"adaptive_channels_first",
       adaptive_avg_pool(xf, {.output_size = {4, 3}, .channels = Channels::first})},
      {"global_avg_pool", global_avg_pool(r)},
      {"global_max_pool", global_max_pool(r, {.keep_axes = true})},
      {"global_lp_pool", global_lp_pool(xf, {.channels = Channels::first, .norm = 3})},
  };
}

std::vector<Case> norm_shape_cases() {
  Model x = input("x", {-1, 4, 4, 6});
  Model norms = batch_norm(x, {.momentum = 0.2, .gamma_initializer = init::normal(1, 0.1)});
  norms = instance_norm(norms, {.epsilon = 1e-3});
  norms = group_norm(norms, 3, {.beta_initializer = init::full(0.1)});
  norms = layer_norm(norms, {.axis = 2});
  norms = rms_norm(norms, {.epsilon = 1e-6, .name = "rms"});
  Model s = input("s", {-1, 2, 3, 4});
  Model shaped = transpose(transpose(s, {2, 0, 1}), {});  // [N,4,2,3] -> [N,3,2,4]
  shaped = pad(shaped, {{1, 0}, {0, 2}, {1, 1}}, 0.5);    // [N,4,4,6]
  shaped = flatten(reshape(shaped, {6, -1}, {.name = "six"}));
  Model img = input("img", {-1, 3, 4, 2});
  Model imgf = input("img", {-1, 2, 3, 4});
  return {
      {"norms", norms},
      {"batch_norm_axis1", batch_norm(input("x", {-1, 3, 4}), {.axis = 1, .epsilon = 1e-4})},
      {"shaping", shaped},
      {"pad_minus_inf",
       pad(input("x", {-1, 3}), {{1, 1}}, -std::numeric_limits<double>::infinity())},
      {"resize_nearest", resize(img, {5, 2})},
      {"resize_bilinear", resize(img, {6, 8}, {.method = "bilinear"})},
      {"resize_channels_first",
       resize(imgf, {2, 5}, {.method = "bilinear", .channels = Channels::first})},
  };
}

std::vector<Case> combine_cases() {
  Model a = input("a", {-1, 4}), b = input("b", {-1, 4});
  Model h = dense(a, 4, {.name = "left"});
  Model c = concatenate({h, b}, -1);  // [N, 8]
  std::vector<Model> halves = split(c, 2, 1);
  std::vector<Model> named = split(c, 4, -1, {.name = "quarters"});
  Model d = subtract(halves[0], halves[1]);
  Model weights = constant(Tensor::from<float>({0.5f, -1.0f, 2.0f, -0.0f}), {});
  Model m = multiply({d, b, weights});
  Model y = add({m, a, concatenate({named[3], named[0]}, 1, {.name = "cat"})}, {.name = "sum"});
  return {
      {"dag", y},
      {"add_one_input", add({a})},
      {"constant_scalar", add({a, constant(Tensor::scalar(1.5), {.name = "c"})})},
  };
}

std::vector<Case> attention_cases() {
  Model x = input("x", {-1, 4, 6}), kv = input("kv", {-1, 5, 3});
  Model key_mask = input("key_mask", {-1, 5}, DType::boolean);
  Model mask = input("attention_mask", {4, 5}, DType::boolean);
  std::vector<float> bias(20);
  for (int i = 0; i < 20; ++i) bias[i] = 0.125f * static_cast<float>(i % 7) - 0.5f;
  Model scores = constant(Tensor::from<float>(bias, Shape{4, 5}), {});
  return {
      {"attention_self", multi_head_attention(x, 2, {.causal = true, .dropout = 0.25})},
      {"attention_masks", multi_head_attention(x, kv, kv, 3,
                                               {.use_bias = false,
                                                .key_mask = key_mask,
                                                .attention_mask = mask,
                                                .kernel_initializer = init::he_uniform(),
                                                .name = "attn"})},
      {"attention_float_mask",
       multi_head_attention(x, kv, kv, 1,
                            {.attention_mask = scores, .bias_initializer = init::normal(0, 0.1)})},
  };
}

std::vector<Case> recurrent_cases() {
  Model x = input("x", {-1, 4, 3}), h0 = input("h0", {-1, 2}), c0 = input("c0", {-1, 2});
  return {
      {"lstm_default", lstm(x, 2)},
      {"lstm_state_options", lstm(x, 2,
                                  {.recurrent_activation = "hard_sigmoid",
                                   .recurrent_initializer = init::glorot_normal(),
                                   .return_sequences = false,
                                   .reverse = true,
                                   .name = "enc"},
                                  {.hidden = h0, .cell = c0})},
      {"gru_unrolled", gru(x, 3, {.use_bias = false, .unroll = true})},
      {"gru_state", gru(x, 2, {.activation = "softsign"}, {.hidden = h0})},
      {"lstm_masked_cell", final_state(lstm(x, 2, {.mask = mask(x, 0.5)}, {.hidden = h0})).cell},
      {"conv_lstm", conv_lstm(input("frames", {-1, 3, 5, 5, 2}), 2,
                              {.kernel_size = {3, 1},
                               .strides = {2},
                               .padding = "valid",
                               .recurrent = {.activation = "relu", .return_sequences = false}})},
  };
}

class SerializeRoundTrip : public ::testing::TestWithParam<Case> {};

TEST_P(SerializeRoundTrip, SameJsonShapesInitAndOutputs) { expect_round_trip(GetParam().model); }

std::vector<Case> all_cases() {
  std::vector<Case> all;
  for (auto part : {linear_cases(), conv_cases(), activation_cases(), dropout_pool_cases(),
                    norm_shape_cases(), combine_cases(), attention_cases(), recurrent_cases()})
    all.insert(all.end(), part.begin(), part.end());
  return all;
}

INSTANTIATE_TEST_SUITE_P(Layers, SerializeRoundTrip, ::testing::ValuesIn(all_cases()),
                         [](const auto& info) { return info.param.label; });

// Every layer type declared in layers/include/glia/layers/*.hpp, written out by hand.
TEST(SerializeCoverage, TheTableHasEveryBuiltInLayerType) {
  std::set<std::string> expected = glia::testing::builtin_layer_types();
  for (const std::string& name : activations::names()) expected.insert(name);
  EXPECT_EQ(expected.size(), 45u + 22u);
  std::set<std::string> seen;
  for (const Case& c : all_cases())
    for (const ResolvedLayer& l : resolve_layers(c.model)) seen.insert(l.node->type);
  EXPECT_EQ(seen, expected);
}

}  // namespace
}  // namespace glia
