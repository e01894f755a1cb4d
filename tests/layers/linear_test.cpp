// Linear layers (dense, bilinear, embedding, bias): values computed with plain loops from
// the drawn parameters, shapes with extra leading axes, options, errors and gradients.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "autograd/gradcheck.hpp"
#include "glia/layers.hpp"
#include "layers/f64_params.hpp"

// GCC 12 flags options given with designated initializers that leave fields out.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace glia {
namespace {

using testing::with_f64_params;

using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

std::vector<double> values(const ModelState& s, const std::string& layer,
                           const std::string& param) {
  return s.params.at(layer).at(param).to_vector<double>();
}

TEST(Dense, ValuesWithLeadingAxes) {
  Model y = dense(input("x", {-1, 3, 4}), 5, {.bias_initializer = initializers::normal(0, 1)});
  auto [init, predict] = build(y);
  ModelState s = init(0);
  ASSERT_EQ(s.params.at("dense_0").at("kernel").shape(), (Shape{4, 5}));
  ASSERT_EQ(s.params.at("dense_0").at("bias").shape(), (Shape{5}));
  std::vector<double> k = values(s, "dense_0", "kernel"), b = values(s, "dense_0", "bias");
  Tensor x = testing::random_tensor(Shape{2, 3, 4}).cast(DType::f32);
  Tensor out = predict(s, x);
  ASSERT_EQ(out.shape(), (Shape{2, 3, 5}));
  std::vector<double> xv = x.to_vector<double>(), ov = out.to_vector<double>();
  for (int r = 0; r < 6; ++r)
    for (int o = 0; o < 5; ++o) {
      double acc = b[o];
      for (int i = 0; i < 4; ++i) acc += xv[r * 4 + i] * k[i * 5 + o];
      EXPECT_NEAR(ov[r * 5 + o], acc, 1e-5);
    }
}

TEST(Dense, NoBiasAndActivation) {
  Model y = dense(input("x", {-1, 3}), 4, {.activation = "relu", .use_bias = false});
  auto [init, predict] = build(y);
  ModelState s = init(2);
  EXPECT_EQ(s.params.at("dense_0").count("bias"), 0u);
  std::vector<double> k = values(s, "dense_0", "kernel");
  Tensor x = Tensor::from<float>({1, -2, 0.5, -1, 3, 2}, Shape{2, 3});
  std::vector<double> xv = x.to_vector<double>(), ov = predict(s, x).to_vector<double>();
  int negatives = 0;
  for (int r = 0; r < 2; ++r)
    for (int o = 0; o < 4; ++o) {
      double z = 0;
      for (int i = 0; i < 3; ++i) z += xv[r * 3 + i] * k[i * 4 + o];
      negatives += z < 0;
      EXPECT_NEAR(ov[r * 4 + o], std::max(z, 0.0), 1e-5);
    }
  EXPECT_GT(negatives, 0);  // relu did something
}

TEST(Dense, Errors) {
  Model x = input("x", {-1, 3});
  EXPECT_THAT([&] { dense(x, 0); },
              ThrowsMessage<Error>(HasSubstr("dense: units must be positive, got 0")));
  EXPECT_THAT([&] { dense(x, 2, {.activation = "relux"}); },
              ThrowsMessage<Error>(HasSubstr("dense: unknown activation 'relux'")));
}

TEST(Bilinear, ValuesWithLeadingAxes) {
  Model a = input("a", {-1, 3, 4}), b = input("b", {-1, 3, 2});
  Model y = bilinear(a, b, 5, {.bias_initializer = initializers::normal(0, 1)});
  auto [init, predict] = build(y);
  ModelState s = init(1);
  ASSERT_EQ(s.params.at("bilinear_0").at("kernel").shape(), (Shape{5, 4, 2}));
  ASSERT_EQ(s.params.at("bilinear_0").at("bias").shape(), (Shape{5}));
  std::vector<double> k = values(s, "bilinear_0", "kernel"), bias = values(s, "bilinear_0", "bias");
  Tensor xa = testing::random_tensor(Shape{2, 3, 4}, -1, 1, 1).cast(DType::f32);
  Tensor xb = testing::random_tensor(Shape{2, 3, 2}, -1, 1, 2).cast(DType::f32);
  Tensor out = predict(s, {{"a", xa}, {"b", xb}});
  ASSERT_EQ(out.shape(), (Shape{2, 3, 5}));
  std::vector<double> av = xa.to_vector<double>(), bv = xb.to_vector<double>(),
                      ov = out.to_vector<double>();
  for (int r = 0; r < 6; ++r)
    for (int u = 0; u < 5; ++u) {
      double acc = bias[u];
      for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 2; ++j) acc += av[r * 4 + i] * k[(u * 4 + i) * 2 + j] * bv[r * 2 + j];
      EXPECT_NEAR(ov[r * 5 + u], acc, 1e-5);
    }
}

TEST(Bilinear, NoBiasAndActivation) {
  Model y = bilinear(input("a", {-1, 2}), input("b", {-1, 3}), 2,
                     {.activation = "tanh", .use_bias = false, .name = "bl"});
  auto [init, predict] = build(y);
  ModelState s = init(0);
  EXPECT_EQ(s.params.at("bl").count("bias"), 0u);
  std::vector<double> k = values(s, "bl", "kernel");
  Tensor xa = Tensor::from<float>({1, 2, -1, 0.5}, Shape{2, 2});
  Tensor xb = Tensor::from<float>({0.5, -1, 2, 1, 1, -3}, Shape{2, 3});
  std::vector<double> av = xa.to_vector<double>(), bv = xb.to_vector<double>();
  std::vector<double> ov = predict(s, {{"a", xa}, {"b", xb}}).to_vector<double>();
  for (int r = 0; r < 2; ++r)
    for (int u = 0; u < 2; ++u) {
      double acc = 0;
      for (int i = 0; i < 2; ++i)
        for (int j = 0; j < 3; ++j) acc += av[r * 2 + i] * k[(u * 2 + i) * 3 + j] * bv[r * 3 + j];
      EXPECT_NEAR(ov[r * 2 + u], std::tanh(acc), 1e-5);
    }
}

TEST(Bilinear, Errors) {
  Model a = input("a", {-1, 3}), b = input("b", {-1, 2});
  EXPECT_THAT([&] { bilinear(a, b, -1); },
              ThrowsMessage<Error>(HasSubstr("bilinear: units must be positive, got -1")));
  EXPECT_THAT([&] { bilinear(a, b, 2, {.activation = "nope"}); },
              ThrowsMessage<Error>(HasSubstr("bilinear: unknown activation 'nope'")));
  Model mismatched = bilinear(input("a", {2, 3}), input("b", {4, 2}), 2);
  EXPECT_THAT([&] { build(mismatched).init(0); },
              ThrowsMessage<Error>(HasSubstr(
                  "layer 'bilinear_0' (bilinear) with input(s) f32[2][3], f32[4][2]: bilinear: "
                  "expected inputs with the same leading axes")));
  Model ranks = bilinear(input("a", {2, 3}), input("b", {2, 5, 2}), 2);
  EXPECT_THAT([&] { build(ranks).init(0); },
              ThrowsMessage<Error>(HasSubstr("expected inputs with the same leading axes")));
}

TEST(Embedding, LooksUpRows) {
  for (DType dt : {DType::i64, DType::i32, DType::u8}) {
    SCOPED_TRACE(std::string(dtype_name(dt)));
    Model y = embedding(input("ids", {-1, 3}, dt), 7, 4);
    auto [init, predict] = build(y);
    ModelState s = init(0);
    ASSERT_EQ(s.params.at("embedding_0").at("kernel").shape(), (Shape{7, 4}));
    std::vector<double> k = values(s, "embedding_0", "kernel");
    // The default initializer is uniform(0.01).
    for (double v : k) EXPECT_LE(std::abs(v), 0.01);
    std::vector<std::int64_t> ids{0, 6, 3, 3, 1, 0};
    Tensor out = predict(s, Tensor::from<std::int64_t>(ids, Shape{2, 3}).cast(dt));
    ASSERT_EQ(out.shape(), (Shape{2, 3, 4}));
    std::vector<double> ov = out.to_vector<double>();
    for (std::size_t p = 0; p < ids.size(); ++p)
      for (std::size_t e = 0; e < 4; ++e)
        EXPECT_EQ(ov[p * 4 + e], k[static_cast<std::size_t>(ids[p]) * 4 + e]);
  }
}

TEST(Embedding, Errors) {
  Model ids = input("ids", {-1}, DType::i64);
  EXPECT_THAT([&] { embedding(ids, 0, 4); },
              ThrowsMessage<Error>(HasSubstr("embedding: vocab_size must be positive, got 0")));
  EXPECT_THAT([&] { embedding(ids, 4, -2); },
              ThrowsMessage<Error>(HasSubstr("embedding: embedding_size must be positive")));
  Model floats = embedding(input("ids", {-1, 2}), 5, 3);
  EXPECT_THAT([&] { build(floats).init(0); },
              ThrowsMessage<Error>(HasSubstr("embedding: expected integer ids, got f32[1][2]")));
  Model bools = embedding(input("ids", {-1}, DType::boolean), 5, 3);
  EXPECT_THAT([&] { build(bools).init(0); },
              ThrowsMessage<Error>(HasSubstr("embedding: expected integer ids")));
}

TEST(Bias, AddsOverTheLastAxis) {
  Model y = bias(input("x", {-1, 2, 3}), {.bias_initializer = initializers::normal(0, 1)});
  auto [init, predict] = build(y);
  ModelState s = init(4);
  ASSERT_EQ(s.params.at("bias_0").at("bias").shape(), (Shape{3}));
  std::vector<double> b = values(s, "bias_0", "bias");
  Tensor x = testing::random_tensor(Shape{2, 2, 3}).cast(DType::f32);
  Tensor out = predict(s, x);
  ASSERT_EQ(out.shape(), (Shape{2, 2, 3}));
  std::vector<double> xv = x.to_vector<double>(), ov = out.to_vector<double>();
  for (std::size_t p = 0; p < xv.size(); ++p) EXPECT_NEAR(ov[p], xv[p] + b[p % 3], 1e-6);
  // The default initializer is zeros: the identity map.
  ModelState z = build(bias(input("x", {-1, 3}))).init(0);
  EXPECT_EQ(values(z, "bias_0", "bias"), (std::vector<double>{0, 0, 0}));
  EXPECT_THAT([] { build(bias(input("x", {}))).init(0); },
              ThrowsMessage<Error>(HasSubstr("bias: expected an input of rank >= 1")));
}

// ---- Gradients (f64 parameters, central differences) ----------------------------------

TEST(LinearGradients, Dense) {
  Model m = with_f64_params(
      dense(input("x", {-1, 2, 3}, DType::f64), 4, {.activation = "tanh", .name = "d"}));
  testing::expect_gradients_match(
      [&](const std::vector<Expr>& in) {
        ExprParamMap p{{"d", {{"kernel", in[1]}, {"bias", in[2]}}}};
        return sum(square(apply(m, p, {}, {{"x", in[0]}}).output));
      },
      {testing::random_tensor(Shape{2, 2, 3}, -1, 1, 1),
       testing::random_tensor(Shape{3, 4}, -1, 1, 2), testing::random_tensor(Shape{4}, -1, 1, 3)});
}

TEST(LinearGradients, Bilinear) {
  Model m = with_f64_params(bilinear(input("a", {-1, 3}, DType::f64),
                                     input("b", {-1, 2}, DType::f64), 2, {.name = "bl"}));
  testing::expect_gradients_match(
      [&](const std::vector<Expr>& in) {
        ExprParamMap p{{"bl", {{"kernel", in[2]}, {"bias", in[3]}}}};
        return sum(square(apply(m, p, {}, {{"a", in[0]}, {"b", in[1]}}).output));
      },
      {testing::random_tensor(Shape{3, 3}, -1, 1, 1), testing::random_tensor(Shape{3, 2}, -1, 1, 2),
       testing::random_tensor(Shape{2, 3, 2}, -1, 1, 3),
       testing::random_tensor(Shape{2}, -1, 1, 4)});
}

TEST(LinearGradients, Embedding) {
  Model m = with_f64_params(embedding(input("ids", {-1, 3}, DType::i64), 5, 2, {.name = "e"}));
  // Repeated ids: their gradients add up in the same kernel row.
  Tensor ids = Tensor::from<std::int64_t>({4, 1, 4, 0, 4, 1}, Shape{2, 3});
  testing::expect_gradients_match(
      [&](const std::vector<Expr>& in) {
        ExprParamMap p{{"e", {{"kernel", in[1]}}}};
        Expr y = apply(m, p, {}, {{"ids", in[0]}}).output;
        return sum(square(y) * Expr(testing::random_tensor(Shape{2, 3, 2}, -1, 1, 9)));
      },
      {ids, testing::random_tensor(Shape{5, 2}, -1, 1, 2)});
}

TEST(LinearGradients, Bias) {
  Model m = with_f64_params(bias(input("x", {-1, 3}, DType::f64), {.name = "b"}));
  testing::expect_gradients_match(
      [&](const std::vector<Expr>& in) {
        ExprParamMap p{{"b", {{"bias", in[1]}}}};
        return sum(exp(apply(m, p, {}, {{"x", in[0]}}).output));
      },
      {testing::random_tensor(Shape{4, 3}, -1, 1, 1), testing::random_tensor(Shape{3}, -1, 1, 2)});
}

}  // namespace
}  // namespace glia
