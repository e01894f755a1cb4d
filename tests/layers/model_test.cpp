// The model as a value: naming, custom layers, the pipeline form, freezing (frozen
// parameters get zero gradient) and resolving the DAG.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "glia/autograd.hpp"
#include "glia/core/interpreter.hpp"
#include "glia/layers.hpp"

namespace glia {
namespace {

using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

std::vector<std::string> names(const Model& m) {
  std::vector<std::string> out;
  for (const ResolvedLayer& r : resolve_layers(m)) out.push_back(r.name);
  return out;
}

TEST(Model, DefaultNamesCountPerTypeAndUserNamesStay) {
  Model x = input("data", {-1, 4});
  Model y = dense(activation(dense(x, 8, {.name = "encoder"}), "relu"), 3);
  Model z = dense(y, 2);
  EXPECT_EQ(names(z),
            (std::vector<std::string>{"data", "encoder", "relu_0", "dense_0", "dense_1"}));
  // A user name that looks like a default one is skipped by the counter.
  Model w = dense(dense(x, 2, {.name = "dense_0"}), 2);
  EXPECT_EQ(names(w), (std::vector<std::string>{"data", "dense_0", "dense_1"}));
  EXPECT_THAT([&] { resolve_layers(dense(dense(x, 2, {.name = "a"}), 2, {.name = "a"})); },
              ThrowsMessage<Error>(HasSubstr("two layers are named 'a'")));
}

TEST(Model, SharedSubgraphsAreVisitedOnce) {
  Model x = input("x", {-1, 2});
  Model h = dense(x, 2);
  Model y = add({h, h, activation(h, "tanh")});
  EXPECT_EQ(names(y), (std::vector<std::string>{"x", "dense_0", "tanh_0", "add_0"}));
  auto [init, predict] = build(y);
  ModelState s = init(3);
  EXPECT_EQ(s.params.size(), 1u);  // one dense layer, however often it is used
}

// then() takes an activation's name, a function of one Expr, or a layer function with
// its arguments: y = sigmoid(relu(x W + b) * 2), checked against a hand computation.
TEST(Model, ThenTakesNamesExprFunctionsAndLayers) {
  Model x = input("x", {-1, 2});
  Model y = x.then(dense, 3, DenseOptions{})
                .then("relu")
                .then([](const Expr& e) { return e * 2.0; })
                .then(activations::sigmoid);
  BuiltModel b = build(y);
  ModelState s = b.init(0);
  std::vector<float> w = s.params.at("dense_0").at("kernel").to_vector<float>();  // [2][3]
  std::vector<float> bias = s.params.at("dense_0").at("bias").to_vector<float>();
  const float in[2] = {0.5f, -1.5f};
  double h[3];
  for (int j = 0; j < 3; ++j) {
    double v = bias[std::size_t(j)] + in[0] * w[std::size_t(j)] + in[1] * w[std::size_t(3 + j)];
    h[j] = 1 / (1 + std::exp(-2 * std::max(v, 0.0)));
  }
  std::vector<float> got =
      b.predict(s, Tensor::from<float>({0.5f, -1.5f}, Shape{1, 2})).to_vector<float>();
  for (int j = 0; j < 3; ++j) EXPECT_NEAR(got[std::size_t(j)], h[j], 1e-6) << j;
  EXPECT_EQ(x.then("relu").node().type, "relu");
  EXPECT_EQ(x.then([](const Expr& e) { return e; }).node().type, "function");
  EXPECT_THAT([&] { x.then("no_such_activation"); },
              ThrowsMessage<Error>(HasSubstr("no_such_activation")));
}

TEST(Model, CustomLayerWithParametersAndThen) {
  // y = x * scale + shift, scale initialised to 2 and shift to 0.5 by name.
  auto affine = [](const Model& x) {
    return layer(
        "affine", {x},
        [](LayerContext& c) { return c.input() * c.param("scale") + c.param("shift"); },
        {{"scale", [](const InputShapes& in) { return Shape{in[0][1]}; }, initializers::full(2)},
         {"shift", [](const InputShapes&) { return Shape{}; }, initializers::full(0.5)}});
  };
  Model y = input("x", {-1, 3}).then(affine).then(activation, "relu", ActivationOptions{});
  auto [init, predict] = build(y);
  ModelState s = init(0);
  EXPECT_EQ(s.params.at("affine_0").at("scale").to_vector<float>(), (std::vector<float>{2, 2, 2}));
  Tensor out = predict(s, Tensor::from<float>({1, -1, 0.25f, -2, 3, 0}, Shape{2, 3}));
  EXPECT_EQ(out.to_vector<float>(), (std::vector<float>{2.5f, 0, 1, 0, 6.5f, 0.5f}));
  EXPECT_THAT([&] { layer("bad", {}, [](LayerContext& c) { return c.input(); }); },
              ThrowsMessage<Error>(HasSubstr("at least one input")));
}

TEST(Model, FrozenParametersGetZeroGradient) {
  Model x = input("data", {-1, 3});
  Model base = dense(dense(x, 4, {.activation = "tanh"}), 2);
  Model frozen = freeze(base, [](const std::string& layer, const std::string& param) {
    return layer == "dense_0" && param == "kernel";
  });
  ModelState s = build(base).init(1);
  Tensor in = Tensor::from<float>({0.5f, -1, 2, 1, 0, -0.5f}, Shape{2, 3});
  auto grads = [&](const Model& m) {
    Graph g = trace(
        [&](const std::vector<Expr>& v) {
          ExprParamMap p{{"dense_0", {{"bias", v[0]}, {"kernel", v[1]}}},
                         {"dense_1", {{"bias", v[2]}, {"kernel", v[3]}}}};
          auto loss = [&](const ExprParamMap& q) {
            return sum(square(apply(m, q, {}, {{"data", v[4]}}).output));
          };
          ExprParamMap d = grad(loss)(p);
          return std::vector<Expr>{d["dense_0"]["bias"], d["dense_0"]["kernel"],
                                   d["dense_1"]["kernel"]};
        },
        {{f32, {4}}, {f32, {3, 4}}, {f32, {2}}, {f32, {4, 2}}, in.type()});
    return interpret(
        g, std::vector<Tensor>{s.params["dense_0"]["bias"], s.params["dense_0"]["kernel"],
                               s.params["dense_1"]["bias"], s.params["dense_1"]["kernel"], in});
  };
  std::vector<Tensor> free = grads(base), fixed = grads(frozen);
  auto nonzero = [](const Tensor& t) {
    for (float v : t.to_vector<float>())
      if (v != 0) return true;
    return false;
  };
  EXPECT_TRUE(nonzero(free[1]));
  EXPECT_FALSE(nonzero(fixed[1]));           // the frozen kernel
  EXPECT_TRUE(allclose(fixed[0], free[0]));  // the rest is unchanged
  EXPECT_TRUE(allclose(fixed[2], free[2]));
  // Freezing does not change the forward pass.
  EXPECT_TRUE(allclose(build(frozen).predict(s, in), build(base).predict(s, in)));
}

TEST(Model, TrainModeUsesTheKeyAndInferenceModeIsDeterministic) {
  Model y = dropout(input("data", {-1, 100}), {.rate = 0.5});
  auto [init, predict] = build(y);
  ModelState s = init(0);
  Tensor x = Tensor::ones({2, 100});
  EXPECT_TRUE(equal(predict(s, x), x));
  Tensor a = predict.train(s, x, random::key(1)).output;
  Tensor b = predict.train(s, x, random::key(1)).output;
  Tensor c = predict.train(s, x, random::key(2)).output;
  EXPECT_TRUE(equal(a, b));
  EXPECT_FALSE(equal(a, c));
  EXPECT_THAT([&] { predict.train(s, x, Tensor::zeros({3}, u32)); },
              ThrowsMessage<Error>(HasSubstr("u32[2]")));
}

}  // namespace
}  // namespace glia
