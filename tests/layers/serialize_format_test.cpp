// The JSON text of model_to_json (written out by hand for a small model), frozen
// parameters, constants of every dtype with exact values, and every error of
// model_to_json / model_from_json asserted by its message.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "expect_error.hpp"
#include "layers/serialize_util.hpp"

namespace glia {
namespace {

using testing::expect_error;
using testing::expect_round_trip;

const char* const kDenseJson = R"({
  "format": "glia.model",
  "version": 1,
  "output": "dense_0",
  "layers": [
    {"name":"x","type":"input","inputs":[],"shape":[-1,3],"dtype":"f32"},
    {"name":"dense_0","type":"dense","inputs":["x"],"options":{"units":2,"activation":"relu","use_bias":true,"kernel_initializer":{"name":"glorot_uniform","scale":1.0},"bias_initializer":{"name":"zeros"}}}
  ]
}
)";

Model small_dense() { return dense(input("x", {-1, 3}), 2, {.activation = "relu"}); }

// `text` with its one occurrence of `from` replaced by `to`.
std::string replaced(std::string text, const std::string& from, const std::string& to) {
  std::size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  EXPECT_EQ(text.find(from, at + 1), std::string::npos) << from;
  return at == std::string::npos ? text : text.replace(at, from.size(), to);
}

TEST(SerializeFormat, JsonTextOfADenseModel) {
  EXPECT_EQ(model_to_json(small_dense()), kDenseJson);
  Model m = model_from_json(kDenseJson);
  EXPECT_EQ(m.node().type, "dense");
  EXPECT_EQ(m.node().name, "dense_0");
  EXPECT_EQ(m.node().inputs.at(0)->input_shape, (std::vector<std::int64_t>{-1, 3}));
}

TEST(SerializeFormat, InputShapesDTypesAndNamedLayers) {
  Model a = input("a", {-1, 4}, DType::f64), b = input("b", {4, -1}, DType::f64);
  Model y = add({a, transpose(b, {}, {.name = "bt"})});
  std::string json = model_to_json(y);
  EXPECT_THAT(json, ::testing::HasSubstr(
                        R"({"name":"b","type":"input","inputs":[],"shape":[4,-1],"dtype":"f64"})"));
  EXPECT_THAT(json, ::testing::HasSubstr(R"("name":"add_0","type":"add","inputs":["a","bt"])"));
  expect_round_trip(y, 4);
}

TEST(SerializeFormat, FrozenParametersAreRecordedPerLayer) {
  Model x = input("x", {-1, 3});
  Model m = dense(dense(x, 4), 2, {.name = "head"});
  Model f = freeze(m, [](const std::string& layer, const std::string& param) {
    return layer == "dense_0" || param == "bias";
  });
  std::string json = model_to_json(f);
  EXPECT_THAT(json, ::testing::HasSubstr(R"("frozen":["kernel","bias"])"));
  EXPECT_THAT(json, ::testing::HasSubstr(R"("name":"zeros"}},"frozen":["bias"]})"));
  EXPECT_THAT(model_to_json(m), ::testing::Not(::testing::HasSubstr("frozen")));
  Model r = expect_round_trip(f);
  std::vector<LayerShapes> shapes = layer_shapes(r, default_input_types(r, 2));
  ASSERT_EQ(shapes.size(), 3u);
  EXPECT_TRUE(shapes[1].params[0].frozen && shapes[1].params[1].frozen);   // dense_0
  EXPECT_TRUE(!shapes[2].params[0].frozen && shapes[2].params[1].frozen);  // head
  // A frozen batch norm: its state is frozen too, as freeze() asks about every entry.
  expect_round_trip(freeze(batch_norm(input("x", {-1, 3}))));
}

// A constant of each dtype, with extreme and non-finite values, comes back bitwise.
TEST(SerializeFormat, ConstantsOfEveryDTypeKeepExactValues) {
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  std::vector<Tensor> values = {
      Tensor::from<float>({1.5f, -0.0f, static_cast<float>(nan), static_cast<float>(inf),
                           -static_cast<float>(inf), 1e-30f, 0.1f, 3.4e38f}),
      Tensor::from<double>({0.1, -0.0, nan, -inf, 5e-324, 1.7976931348623157e308}, Shape{2, 3}),
      Tensor::from<float>({0.5f, -2.0f, 65504.0f, static_cast<float>(inf), 0.1f}).cast(DType::f16),
      Tensor::from<float>({0.5f, -2.0f, 3e38f, static_cast<float>(nan), 0.1f}).cast(DType::bf16),
      Tensor::from<std::int64_t>({std::numeric_limits<std::int64_t>::min(), (1LL << 53) + 1,
                                  std::numeric_limits<std::int64_t>::max()}),
      Tensor::from<std::int32_t>({std::numeric_limits<std::int32_t>::min(), 0, 2147483647}),
      Tensor::from<std::uint32_t>({0u, 4294967295u}),
      Tensor::from<std::uint8_t>({0, 255, 7}, Shape{3, 1}),
      Tensor::from<bool>({true, false, true}),
      Tensor::scalar(-3.25, DType::f32),
  };
  for (const Tensor& v : values) {
    SCOPED_TRACE(v.type().to_string());
    Model m = constant(v, {.name = "k"});
    std::string json = model_to_json(m);
    Model r = model_from_json(json);
    EXPECT_EQ(model_to_json(r), json);
    Tensor out = build(r).predict(ModelState{}, std::map<std::string, Tensor>{});
    EXPECT_TRUE(equal(out, v)) << out;
  }
  std::string json = model_to_json(constant(Tensor::from<float>({1, 2}), {}));
  EXPECT_THAT(json, ::testing::HasSubstr(
                        R"("options":{"value":{"dtype":"f32","shape":[2],"data":[1.0,2.0]}})"));
  EXPECT_THAT(model_to_json(constant(Tensor::from<float>({-static_cast<float>(inf)}), {})),
              ::testing::HasSubstr(R"("data":["-inf"])"));
}

// ---- Errors -------------------------------------------------------------------------------

TEST(SerializeErrors, CustomLayersAndInitializersHaveNoJson) {
  Model x = input("x", {-1, 3});
  Model scaled = layer("scale", {x}, [](LayerContext& c) { return c.input() * 2.0; });
  expect_error([&] { model_to_json(dense(scaled, 2)); },
               "model_to_json: custom layer 'scale_0' (type scale) has no JSON description");
  Initializer mine{"mine",
                   [](const Expr&, const TensorType& t) { return glia::zeros(t.shape, t.dtype); }};
  expect_error([&] { model_to_json(dense(x, 2, {.kernel_initializer = mine})); },
               "model_to_json: layer 'dense_0' (dense): option 'kernel_initializer' is a custom "
               "initializer, which has no JSON description");
}

TEST(SerializeErrors, MalformedJsonAndDocument) {
  expect_error([] { model_from_json(R"({"format": "glia.model", )"); },
               "model_from_json: malformed JSON");
  expect_error([] { model_from_json("[1, 2]"); }, "model_from_json: expected a JSON object");
  std::string good = kDenseJson;
  expect_error([&] { model_from_json(replaced(good, "glia.model", "keras")); },
               "model_from_json: the format is 'keras', expected 'glia.model'");
  expect_error([&] { model_from_json(replaced(good, "\"version\": 1", "\"version\": 2")); },
               "model_from_json: unsupported version 2 (this build reads version 1)");
  expect_error([&] { model_from_json(replaced(good, "\"version\": 1", "\"version\": \"1\"")); },
               "model_from_json: option 'version' must be an integer, got \"1\"");
  expect_error(
      [&] { model_from_json(replaced(good, "\"output\": \"dense_0\"", "\"output\": \"y\"")); },
      "model_from_json: the output 'y' is not one of the layers");
  expect_error([&] { model_from_json(replaced(good, "\"layers\"", "\"items\"")); },
               "model_from_json: option 'layers' is missing");
}

TEST(SerializeErrors, UnknownTypeAndBadInputs) {
  std::string good = kDenseJson;
  expect_error([&] { model_from_json(replaced(good, R"("type":"dense")", R"("type":"densest")")); },
               "model_from_json: layer 'dense_0' (densest): unknown layer type 'densest'");
  expect_error([&] { model_from_json(replaced(good, R"("inputs":["x"])", R"("inputs":["z"])")); },
               "model_from_json: layer 'dense_0' (dense): option 'inputs' names 'z', which is not "
               "an earlier layer");
  expect_error(
      [&] { model_from_json(replaced(good, R"("inputs":["x"])", R"("inputs":["x","x"])")); },
      "model_from_json: layer 'dense_0' (dense): expected 1 input(s), got 2");
  expect_error([&] { model_from_json(replaced(good, R"("dtype":"f32")", R"("dtype":"f17")")); },
               "model_from_json: layer 'x' (input): unknown dtype");
  expect_error([&] { model_from_json(replaced(good, R"("name":"dense_0",)", R"("name":"x",)")); },
               "model_from_json: two layers are named 'x'");
}

TEST(SerializeErrors, MissingIllTypedAndUnknownOptions) {
  std::string good = kDenseJson;
  expect_error([&] { model_from_json(replaced(good, R"("units":2,)", "")); },
               "model_from_json: layer 'dense_0' (dense): option 'units' is missing");
  expect_error([&] { model_from_json(replaced(good, R"("units":2)", R"("units":"2")")); },
               "model_from_json: layer 'dense_0' (dense): option 'units' must be an integer, got "
               "\"2\"");
  expect_error([&] { model_from_json(replaced(good, R"("units":2)", R"("units":2.5)")); },
               "option 'units' must be an integer, got 2.5");
  expect_error([&] { model_from_json(replaced(good, R"("use_bias":true)", R"("use_bias":1)")); },
               "option 'use_bias' must be true or false, got 1");
  expect_error([&] { model_from_json(replaced(good, R"("units":2)", R"("units":2,"unit":3)")); },
               "model_from_json: layer 'dense_0' (dense): unknown option 'unit'");
  expect_error([&] { model_from_json(replaced(good, R"("units":2)", R"("units":-2)")); },
               "model_from_json: layer 'dense_0' (dense): dense: units must be positive, got -2");
  expect_error(
      [&] { model_from_json(replaced(good, R"("activation":"relu")", R"("activation":"rulu")")); },
      "model_from_json: layer 'dense_0' (dense): dense: unknown activation 'rulu'");
  expect_error([&] { model_from_json(replaced(good, R"(,"options":{)", R"(,"opts":{)")); },
               "model_from_json: layer 'dense_0' (dense): option 'options' is missing");
}

TEST(SerializeErrors, BadInitializersPaddingAndFrozen) {
  std::string good = kDenseJson;
  expect_error([&] { model_from_json(replaced(good, R"("name":"zeros")", R"("name":"twos")")); },
               "model_from_json: layer 'dense_0' (dense), initializer 'bias_initializer': option "
               "'name' names an unknown initializer 'twos'");
  expect_error([&] { model_from_json(replaced(good, R"("scale":1.0)", R"("scale":"big")")); },
               "initializer 'kernel_initializer': option 'scale' must be a number, got \"big\"");
  expect_error([&] { model_from_json(replaced(good, R"(,"scale":1.0)", "")); },
               "initializer 'kernel_initializer': option 'scale' is missing");
  expect_error(
      [&] {
        model_from_json(replaced(good, R"({"name":"zeros"})", R"({"name":"zeros","value":1})"));
      },
      "initializer 'bias_initializer': unknown option 'value'");
  std::string conv_json = model_to_json(conv(input("x", {-1, 5, 2}), 2, {.kernel_size = {3}}));
  expect_error(
      [&] { model_from_json(replaced(conv_json, R"("padding":"valid")", R"("padding":[[1]])")); },
      "model_from_json: layer 'conv_0' (conv): option 'padding' must be an array of "
      "[low, high] pairs, got [[1]]");
  expect_error(
      [&] { model_from_json(replaced(conv_json, R"("channels":"last")", R"("channels":"mid")")); },
      "option 'channels' must be one of \"last\", \"first\", got \"mid\"");
  std::string frozen = model_to_json(freeze(small_dense()));
  expect_error([&] { model_from_json(replaced(frozen, R"(["kernel","bias"])", R"(["weight"])")); },
               "model_from_json: layer 'dense_0' (dense): option 'frozen' names 'weight', which "
               "is not a parameter of the layer (it has: kernel, bias)");
  std::string k = model_to_json(constant(Tensor::from<std::uint8_t>({1, 2}), {}));
  expect_error([&] { model_from_json(replaced(k, "[1,2]", "[1,256]")); },
               "tensor 'value': option 'data' has an invalid u8 value 256 at position 1");
  expect_error([&] { model_from_json(replaced(k, "[1,2]", "[1]")); },
               "tensor 'value': option 'data' must be an array of 2 values for u8[2]");
}

}  // namespace
}  // namespace glia
