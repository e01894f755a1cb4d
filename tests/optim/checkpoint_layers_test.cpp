// Checkpoints of every built-in layer type: three models that together hold every layer
// (and every activation) are saved with their parameters and trained model state; the
// loaded file gives the same tensors bit for bit, and the model rebuilt from its
// architecture predicts the same outputs from them.
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "builtin_layer_types.hpp"
#include "checkpoint_test_util.hpp"

namespace glia {
namespace {

using testing::expect_same;

// Inputs, two channels-last images and sequences, plus ids and a side vector.
Model linear_model() {
  Model a = input("a", {-1, 3}), b = input("b", {-1, 2});
  Model ids = input("ids", {-1, 3}, DType::i32);
  Model both = concatenate({bilinear(a, b, 4), flatten(embedding(ids, 7, 4))});
  return bias(dense(both, 5));
}

Model spatial_model() {
  Model x = input("x", {-1, 6, 6, 4});
  Model h = conv(x, 4, {.kernel_size = {3}, .padding = "same", .activation = "relu"});
  h = depthwise_conv(h, 2, {.kernel_size = {3}, .padding = "same"});       // 8 channels
  h = separable_conv2d(h, 4, 1, {.kernel_size = {3}, .padding = "same"});  // 4 channels
  h = conv_transpose(h, 4, {.kernel_size = {2}, .strides = {2}});          // 12 x 12
  h = rms_norm(layer_norm(group_norm(instance_norm(batch_norm(h)), 2)));
  h = spatial_dropout(h, {.rate = 0.2});
  h = max_pool(h, {.kernel_size = {2}});                      // 6 x 6
  h = avg_pool(h, {.kernel_size = {2}});                      // 3 x 3
  h = lp_pool(h, {.kernel_size = {2}, .strides = {1}});       // 2 x 2
  h = resize(pad(h, {{1, 0}, {0, 1}, {0, 0}}, 0.5), {6, 6});  // 3 x 3, then 6 x 6
  Model s = subtract(
      add({adaptive_avg_pool(h, {.output_size = {3}}), adaptive_max_pool(h, {.output_size = {3}})}),
      adaptive_lp_pool(h, {.output_size = {3}}));
  Model y = concatenate({multiply({global_avg_pool(s), global_max_pool(s)}), global_lp_pool(s)});
  y = flatten(transpose(reshape(y, {2, 4}), {1, 0}));  // [N, 8]
  std::vector<Model> halves = split(y, 2);
  y = add({halves[0], halves[1], constant(Tensor::from<float>({0.5f, -1, 2, 0}), {})});
  y = feature_alpha_dropout(alpha_dropout(dropout(y, {.rate = 0.1}), {.rate = 0.1}), {.rate = 0.1});
  std::vector<Model> branches;
  for (const std::string& name : activations::names()) branches.push_back(activation(y, name));
  return dense(add(branches), 3);
}

Model volume_model() {
  Model s = input("s", {-1, 8, 3});
  Model v = input("v", {-1, 3, 3, 3, 2});
  return concatenate(
      {flatten(conv(s, 4, {.kernel_size = {3}})),
       flatten(separable_conv3d(v, 3, 1, {.kernel_size = {2}})),
       flatten(multi_head_attention(s, 3, {.causal = true})),
       flatten(lstm(s, 2, {.reverse = true, .mask = mask(s, 0.5)})), final_state(gru(s, 3)).hidden,
       flatten(conv_lstm(v, 2, {.kernel_size = {2}, .recurrent = {.reverse = true}}))});
}

std::vector<Model> all_models() { return {linear_model(), spatial_model(), volume_model()}; }

// Deterministic inputs: mixed-sign floats, ids in [0, 7).
std::map<std::string, Tensor> sample_inputs(const InputTypes& types) {
  std::map<std::string, Tensor> out;
  for (const auto& [name, t] : types) {
    std::vector<float> v;
    for (std::int64_t i = 0; i < t.shape.numel(); ++i)
      v.push_back(is_float(t.dtype) ? 0.125f * static_cast<float>((i * 7) % 17) - 1.0f
                                    : static_cast<float>((i * 3) % 7));
    out[name] = Tensor::from(v, t.shape).cast(t.dtype);
  }
  return out;
}

class LayerCheckpoint : public ::testing::TestWithParam<int> {};

TEST_P(LayerCheckpoint, ParametersStateAndPredictionsRoundTrip) {
  testing::TempDir dir;
  Model model = all_models().at(static_cast<std::size_t>(GetParam()));
  BuiltModel built = build(model);
  InputTypes types = default_input_types(model, 2);
  std::map<std::string, Tensor> inputs = sample_inputs(types);
  ModelState state = built.init(types, 5);
  state.state = built.predict.train(state, inputs, random::key(9)).state;  // batch statistics

  save_checkpoint(dir.file("m.h5"), model, TrainState{.model = state});
  Checkpoint c = load_checkpoint(dir.file("m.h5"));
  Model rebuilt = c.model();
  check_checkpoint(c, rebuilt);
  expect_same(state.params, c.loop.train.model.params, "params");
  expect_same(state.state, c.loop.train.model.state, "state");
  Tensor want = built.predict(state, inputs);
  for (std::int64_t i = 0; i < want.numel(); ++i) ASSERT_TRUE(std::isfinite(want.element(i)));
  EXPECT_TRUE(equal(build(rebuilt).predict(c.loop.train.model, inputs), want));
}

constexpr const char* kModelNames[] = {"linear", "spatial", "volume"};
INSTANTIATE_TEST_SUITE_P(Checkpoint, LayerCheckpoint, ::testing::Values(0, 1, 2),
                         [](const auto& info) { return std::string(kModelNames[info.param]); });

// The three models hold every layer type declared in layers/include/glia/layers/*.hpp.
TEST(LayerCheckpoint, TheModelsHoldEveryBuiltInLayerType) {
  std::set<std::string> expected = glia::testing::builtin_layer_types();
  for (const std::string& name : activations::names()) expected.insert(name);
  std::set<std::string> seen;
  for (const Model& m : all_models())
    for (const ResolvedLayer& l : resolve_layers(m)) seen.insert(l.node->type);
  EXPECT_EQ(seen, expected);
}

}  // namespace
}  // namespace glia
