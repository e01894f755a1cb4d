// Shared by the serialize tests: the round-trip check model -> JSON -> model, which must
// give the same JSON, layer shapes, initial parameters (bitwise, same seed) and outputs
// in inference and train mode (bitwise, same key) on the interpreter.
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <string>

#include "glia/layers.hpp"

namespace glia::testing {

// Deterministic inputs of type `t`: small mixed-sign values for floats, 0..4 for integers.
inline Tensor sample_input(const TensorType& t, int salt) {
  std::vector<float> v;
  for (std::int64_t i = 0; i < t.shape.numel(); ++i) {
    int k = static_cast<int>((7 * i + 3 * salt) % 11);
    v.push_back(is_float(t.dtype) ? 0.25f * static_cast<float>(k - 5) : static_cast<float>(k % 5));
  }
  return Tensor::from<float>(v, t.shape).cast(t.dtype);
}

inline void expect_same_params(const ParamMap& a, const ParamMap& b, const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (const auto& [layer, params] : a) {
    ASSERT_EQ(b.count(layer), 1u) << what << ": layer " << layer;
    ASSERT_EQ(params.size(), b.at(layer).size()) << what << ": layer " << layer;
    for (const auto& [name, t] : params)
      EXPECT_TRUE(equal(t, b.at(layer).at(name))) << what << ": " << layer << "." << name;
  }
}

inline void expect_same_shapes(const std::vector<LayerShapes>& a,
                               const std::vector<LayerShapes>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    SCOPED_TRACE(a[i].name);
    EXPECT_EQ(a[i].name, b[i].name);
    EXPECT_EQ(a[i].type, b[i].type);
    EXPECT_EQ(a[i].options, b[i].options);
    EXPECT_EQ(a[i].inputs, b[i].inputs);
    EXPECT_EQ(a[i].input_types, b[i].input_types);
    EXPECT_EQ(a[i].output, b[i].output);
    ASSERT_EQ(a[i].params.size(), b[i].params.size());
    for (std::size_t p = 0; p < a[i].params.size(); ++p) {
      EXPECT_EQ(a[i].params[p].name, b[i].params[p].name);
      EXPECT_EQ(a[i].params[p].type, b[i].params[p].type);
      EXPECT_EQ(a[i].params[p].is_state, b[i].params[p].is_state);
      EXPECT_EQ(a[i].params[p].frozen, b[i].params[p].frozen);
    }
  }
}

// The rebuilt model, after checking everything the header of this file lists.
inline Model expect_round_trip(const Model& model, std::int64_t batch = 2) {
  const std::string json = model_to_json(model);
  Model rebuilt = model_from_json(json);
  EXPECT_EQ(model_to_json(rebuilt), json);
  InputTypes types = default_input_types(model, batch);
  EXPECT_EQ(default_input_types(rebuilt, batch), types);
  expect_same_shapes(layer_shapes(model, types), layer_shapes(rebuilt, types));

  BuiltModel a = build(model), b = build(rebuilt);
  ModelState sa = a.init(types, 7), sb = b.init(types, 7);
  expect_same_params(sa.params, sb.params, "init params");
  expect_same_params(sa.state, sb.state, "init state");
  std::map<std::string, Tensor> inputs;
  int salt = 0;
  for (const auto& [name, type] : types) inputs[name] = sample_input(type, salt++);
  EXPECT_TRUE(equal(a.predict(sa, inputs), b.predict(sb, inputs))) << "inference output";
  Tensor key = Tensor::from<std::uint32_t>({12, 34});
  TrainResult ta = a.predict.train(sa, inputs, key), tb = b.predict.train(sb, inputs, key);
  EXPECT_TRUE(equal(ta.output, tb.output)) << "train output";
  expect_same_params(ta.state, tb.state, "train state");
  return rebuilt;
}

}  // namespace glia::testing
