// Gradients of composites against central finite differences in f64: softmax,
// log_softmax, logsumexp, a two-layer MLP loss and a small conv + max-pool network, the
// networks differentiated with respect to a parameter map with value_and_grad.
#include <map>
#include <string>
#include <vector>

#include "autograd/grad_test_util.hpp"
#include "autograd/gradcheck.hpp"

namespace glia {
namespace {

using testing::expect_gradients_match;
using testing::random_tensor;
using Params = std::map<std::string, Expr>;

TEST(CompositeGrad, Softmax) {
  Tensor w = random_tensor({2, 3, 4}, -1, 1, 2);
  for (std::int64_t axis : {-1, 0, 1}) {
    SCOPED_TRACE(axis);
    expect_gradients_match(
        [axis](const std::vector<Expr>& in) { return sum(softmax(in[0], axis) * in[1]); },
        {random_tensor({2, 3, 4}, -3, 3, 1), w}, {.check = {true, false}});
  }
}

TEST(CompositeGrad, LogSoftmax) {
  Tensor w = random_tensor({3, 5}, -1, 1, 4);
  for (std::int64_t axis : {-1, 0}) {
    SCOPED_TRACE(axis);
    expect_gradients_match(
        [axis](const std::vector<Expr>& in) { return sum(log_softmax(in[0], axis) * in[1]); },
        {random_tensor({3, 5}, -3, 3, 3), w}, {.check = {true, false}});
  }
  // Large logits: the shifted form keeps the gradient finite and exact.
  expect_gradients_match(
      [](const std::vector<Expr>& in) { return sum(log_softmax(in[0] * 100.0) * in[1]); },
      {random_tensor({3, 5}, -3, 3, 5), w},
      {.eps = 1e-8, .tolerance = 1e-5, .check = {true, false}});
}

TEST(CompositeGrad, Logsumexp) {
  Tensor x = random_tensor({2, 3, 4}, -2, 2, 6);
  expect_gradients_match([](const std::vector<Expr>& in) { return logsumexp(in[0]); }, {x});
  expect_gradients_match(
      [](const std::vector<Expr>& in) {
        return sum(logsumexp(in[0], {0, 2}, true) * logsumexp(in[0], {-1}, true));
      },
      {x});
}

// Mean softmax cross-entropy of logits [N, C] against one-hot labels [N, C].
Expr cross_entropy(const Expr& logits, const Expr& labels) {
  return -mean(sum(labels * log_softmax(logits), {1}));
}

Expr one_hot_labels(const std::vector<std::int64_t>& classes, std::int64_t n) {
  return one_hot(constant(Tensor::from<std::int64_t>(classes)), n, DType::f64);
}

// Compares value_and_grad's gradient map with central differences of `loss`, whose
// parameters are inputs[first..] in the order of `names` (sorted, as the map is).
void expect_map_gradients_match(const std::function<Expr(const Params&, const Expr&)>& loss,
                                const std::vector<std::string>& names,
                                const std::vector<Tensor>& inputs) {
  auto params_of = [&](const std::vector<Expr>& in) {
    Params p;
    for (std::size_t i = 0; i < names.size(); ++i) p.emplace(names[i], in[i + 1]);
    return p;
  };
  auto out = testing::run(
      [&](const std::vector<Expr>& in) {
        auto [value, g] = value_and_grad(loss)(params_of(in), in[0]);
        std::vector<Expr> outs{value, loss(params_of(in), in[0])};
        for (const auto& [name, e] : g) outs.push_back(e);
        return outs;
      },
      inputs);
  EXPECT_NEAR(out[0].item<double>(), out[1].item<double>(), 1e-12);
  testing::ScalarFn scalar = [&](const std::vector<Expr>& in) {
    return loss(params_of(in), in[0]);
  };
  for (std::size_t i = 0; i < names.size(); ++i) {
    SCOPED_TRACE(names[i]);
    Tensor numeric = testing::numeric_gradient(scalar, inputs, i + 1, 1e-6);
    const Tensor& got = out[i + 2];
    ASSERT_EQ(got.type(), inputs[i + 1].type());
    testing::expect_values(got, numeric.to_vector<double>(), 1e-6, names[i]);
  }
}

TEST(CompositeGrad, TwoLayerMlpLoss) {
  for (bool use_relu : {false, true}) {
    SCOPED_TRACE(use_relu ? "relu" : "tanh");
    auto loss = [use_relu](const Params& p, const Expr& x) {
      Expr h = dot(x, p.at("w1")) + p.at("b1");
      h = use_relu ? relu(h) : tanh(h);
      Expr logits = dot(h, p.at("w2")) + p.at("b2");
      return cross_entropy(logits, one_hot_labels({0, 2, 1, 2}, 3));
    };
    expect_map_gradients_match(loss, {"b1", "b2", "w1", "w2"},
                               {random_tensor({4, 5}, -1, 1, 51), random_tensor({7}, -0.5, 0.5, 52),
                                random_tensor({3}, -0.5, 0.5, 53), random_tensor({5, 7}, -1, 1, 54),
                                random_tensor({7, 3}, -1, 1, 55)});
  }
}

TEST(CompositeGrad, ConvMaxPoolDenseLoss) {
  // x [2,1,6,6] -> conv 3x3, 2 channels [2,2,4,4] -> relu -> 2x2 max pool [2,2,2,2]
  // -> flatten [2,8] -> dense [2,3] -> log_softmax cross-entropy.
  auto loss = [](const Params& p, const Expr& x) {
    Expr c = conv(x, p.at("conv_w")) + reshape(p.at("conv_b"), {1, 2, 1, 1});
    Expr pooled = window_max(relu(c), {1, 1, 2, 2});
    Expr logits = dot(reshape(pooled, {2, 8}), p.at("dense_w")) + p.at("dense_b");
    return cross_entropy(logits, one_hot_labels({1, 0}, 3));
  };
  expect_map_gradients_match(
      loss, {"conv_b", "conv_w", "dense_b", "dense_w"},
      {random_tensor({2, 1, 6, 6}, -1, 1, 61), random_tensor({2}, -0.2, 0.2, 62),
       random_tensor({2, 1, 3, 3}, -1, 1, 63), random_tensor({3}, -0.2, 0.2, 64),
       random_tensor({8, 3}, -1, 1, 65)});
  // And with respect to the input image.
  expect_gradients_match(
      [&](const std::vector<Expr>& in) {
        Params p{{"conv_w", in[1]}, {"conv_b", in[2]}, {"dense_w", in[3]}, {"dense_b", in[4]}};
        return loss(p, in[0]);
      },
      {random_tensor({2, 1, 6, 6}, -1, 1, 61), random_tensor({2, 1, 3, 3}, -1, 1, 63),
       random_tensor({2}, -0.2, 0.2, 62), random_tensor({8, 3}, -1, 1, 65),
       random_tensor({3}, -0.2, 0.2, 64)},
      {.check = {true, false, false, false, false}});
}

}  // namespace
}  // namespace glia
