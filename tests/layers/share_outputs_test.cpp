// Several outputs (outputs()) and weight sharing (reapply, Shared): predict gives each
// head by name; a block applied twice keeps one set of parameters, trained by both
// applications; both survive model_to_json and freeze. Expected values are computed here
// from the parameters by plain loops.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "glia/autograd.hpp"
#include "glia/compiler/jit.hpp"
#include "glia/layers.hpp"

namespace glia {
namespace {

using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

// x [n][k] times kernel [k][m] plus bias [m], by loops.
std::vector<double> affine(const std::vector<float>& x, const Tensor& kernel, const Tensor& bias,
                           std::int64_t n) {
  const std::int64_t k = kernel.shape()[0], m = kernel.shape()[1];
  std::vector<float> w = kernel.to_vector<float>(), b = bias.to_vector<float>();
  std::vector<double> y(std::size_t(n * m));
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t j = 0; j < m; ++j) {
      double v = b[std::size_t(j)];
      for (std::int64_t p = 0; p < k; ++p)
        v += double(x[std::size_t(i * k + p)]) * w[std::size_t(p * m + j)];
      y[std::size_t(i * m + j)] = v;
    }
  return y;
}

void expect_values(const Tensor& t, const std::vector<double>& want) {
  std::vector<float> got = t.to_vector<float>();
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5) << i;
}

const std::vector<float> kLeft = {0.5f, -1, 2, 0.25f, 1.5f, -0.5f};  // [2][3]
const std::vector<float> kRight = {-2, 1, 0.75f, 3, -1, 0.5f};

TEST(Outputs, PredictGivesEachHeadByName) {
  Model x = input("x", {-1, 3});
  Model trunk = dense(x, 4, {.name = "trunk"});
  Model m = outputs({{"a", dense(trunk, 2, {.name = "head_a"})}, {"b", dense(trunk, 1)}});
  EXPECT_EQ(output_names(m), (std::vector<std::string>{"a", "b"}));
  BuiltModel built = build(m);
  ModelState s = built.init(4);
  EXPECT_EQ(s.params.size(), 3u);
  std::map<std::string, Tensor> y = built.predict.outputs(s, Tensor::from(kLeft, Shape{2, 3}));
  ASSERT_EQ(y.size(), 2u);
  std::vector<double> h = affine(kLeft, s.params["trunk"]["kernel"], s.params["trunk"]["bias"], 2);
  std::vector<float> hf(h.begin(), h.end());
  expect_values(y["a"], affine(hf, s.params["head_a"]["kernel"], s.params["head_a"]["bias"], 2));
  expect_values(y["b"], affine(hf, s.params["dense_0"]["kernel"], s.params["dense_0"]["bias"], 2));

  EXPECT_THAT(
      [&] {
        built.predict(s, Tensor::from(kLeft, Shape{2, 3}));
      },
      ThrowsMessage<Error>(HasSubstr("several outputs (a, b)")));
  EXPECT_THAT([&] { dense(m, 2); }, ThrowsMessage<Error>(HasSubstr("is an outputs() model")));
  EXPECT_THAT([&] { outputs({}); }, ThrowsMessage<Error>(HasSubstr("at least one head")));
  EXPECT_THAT(
      [&] {
        export_predict(m, s, {{"x", {DType::f32, Shape{1, 3}}}});
      },
      ThrowsMessage<Error>(HasSubstr("export each head's model on its own")));
  // A model with one output gives it as "output".
  std::map<std::string, Tensor> one =
      build(trunk).predict.outputs(s, Tensor::from(kLeft, Shape{2, 3}));
  ASSERT_EQ(one.count("output"), 1u);
  expect_values(one["output"], h);
}

TEST(Sharing, ReapplyUsesTheSameParameters) {
  Model left = input("left", {-1, 3}), right = input("right", {-1, 3});
  Model a = dense(left, 2, {.name = "enc"});
  Model b = reapply(a, {{left, right}});
  Model m = outputs({{"a", a}, {"b", b}});
  std::vector<ResolvedLayer> layers = resolve_layers(m);
  int sharing = 0;
  for (const ResolvedLayer& r : layers) {
    if (!r.shared()) continue;
    ++sharing;
    EXPECT_EQ(r.params_of, "enc");
  }
  EXPECT_EQ(sharing, 1);
  BuiltModel built = build(m);
  ModelState s = built.init(1);
  ASSERT_EQ(s.params.size(), 1u);  // one kernel and bias for both applications
  auto y = built.predict.outputs(s, {{"left", Tensor::from(kLeft, Shape{2, 3})},
                                     {"right", Tensor::from(kRight, Shape{2, 3})}});
  const Tensor& w = s.params["enc"]["kernel"];
  const Tensor& bias = s.params["enc"]["bias"];
  expect_values(y["a"], affine(kLeft, w, bias, 2));
  expect_values(y["b"], affine(kRight, w, bias, 2));
  EXPECT_THAT(summary(m), HasSubstr("shares enc"));

  // The gradient of sum(a) + sum(b) with respect to the shared kernel is the sum of both
  // applications': column sums of left plus column sums of right, in every column.
  auto loss = [&](const ExprParamMap& p) {
    Applied out = apply(m, p, {},
                        {{"left", constant(Tensor::from(kLeft, Shape{2, 3}))},
                         {"right", constant(Tensor::from(kRight, Shape{2, 3}))}});
    return sum(out.outputs.at("a")) + sum(out.outputs.at("b"));
  };
  ParamMap grads = jit(grad(loss))(s.params);
  std::vector<float> g = grads["enc"]["kernel"].to_vector<float>();
  for (int p = 0; p < 3; ++p)
    for (int j = 0; j < 2; ++j)
      EXPECT_NEAR(g[std::size_t(p * 2 + j)],
                  kLeft[std::size_t(p)] + kLeft[std::size_t(3 + p)] + kRight[std::size_t(p)] +
                      kRight[std::size_t(3 + p)],
                  1e-5);
  EXPECT_NEAR(grads["enc"]["bias"].to_vector<float>()[0], 4, 1e-6);  // 2 rows, 2 applications
}

TEST(Sharing, SharedBlockCalledTwice) {
  Shared encoder([](const Model& x) {
    return dense(dense(x, 4, {.activation = "tanh"}), 2, {.name = "code"});
  });
  Model left = input("left", {-1, 3}), right = input("right", {-1, 3});
  Model a = encoder(left), b = encoder(right);
  Model m = subtract(a, b);
  BuiltModel built = build(m);
  ModelState s = built.init(2);
  EXPECT_EQ(s.params.size(), 2u);  // dense_0 and code, once
  // The same input on both sides: the difference is exactly zero.
  Tensor x = Tensor::from(kLeft, Shape{2, 3});
  for (float v : built.predict(s, {{"left", x}, {"right", x}}).to_vector<float>())
    EXPECT_EQ(v, 0.0f);
  // A block applied to an input of another width cannot share its kernel.
  Model wide = input("wide", {-1, 5});
  EXPECT_THAT(
      [&] {
        build(outputs({{"a", a}, {"w", encoder(wide)}})).init(0);
      },
      ThrowsMessage<Error>(HasSubstr("shares parameters with layer 'dense_0'")));
  EXPECT_THAT(
      [&] {
        reapply(a, {{input("other", {-1, 3}), right}});
      },
      ThrowsMessage<Error>(HasSubstr("not among the model's layers")));
}

TEST(Sharing, SurvivesJsonAndFreeze) {
  Model left = input("left", {-1, 3}), right = input("right", {-1, 3});
  Shared encoder([](const Model& x) { return dense(x, 2, {.activation = "relu"}); });
  Model m = outputs({{"l", encoder(left)}, {"r", dense(encoder(right), 1)}});
  const std::string text = model_to_json(m);
  EXPECT_THAT(text, HasSubstr("\"shares\":\"dense_0\""));
  Model back = model_from_json(text);
  EXPECT_EQ(model_to_json(back), text);
  ModelState s = build(m).init(5);
  ModelState t = build(back).init(5);
  ASSERT_EQ(s.params.size(), t.params.size());
  std::map<std::string, Tensor> x{{"left", Tensor::from(kLeft, Shape{2, 3})},
                                  {"right", Tensor::from(kRight, Shape{2, 3})}};
  auto ya = build(m).predict.outputs(s, x), yb = build(back).predict.outputs(s, x);
  for (const char* head : {"l", "r"})
    EXPECT_EQ(ya[head].to_vector<float>(), yb[head].to_vector<float>()) << head;

  // Freezing the shared layer freezes it for both applications.
  Model frozen = freeze(m, [](const std::string& l, const std::string&) { return l == "dense_0"; });
  ASSERT_EQ(build(frozen).init(5).params.size(), s.params.size());
  auto loss = [&](const ExprParamMap& p) {
    std::map<std::string, Expr> in;
    for (const auto& [k, v] : x) in[k] = constant(v);
    Applied out = apply(frozen, p, {}, in);
    return sum(out.outputs.at("l")) + sum(out.outputs.at("r"));
  };
  ParamMap g = jit(grad(loss))(s.params);
  for (float v : g["dense_0"]["kernel"].to_vector<float>()) EXPECT_EQ(v, 0.0f);
}

}  // namespace
}  // namespace glia
