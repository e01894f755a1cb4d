// What a training step takes: the library's losses and metrics as they stand, batches by
// input name for models with several inputs, and the probability losses' refusal of logits.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "glia/layers/combine.hpp"
#include "glia/optim/losses.hpp"
#include "glia/optim/metrics.hpp"
#include "optim/step_test_util.hpp"

namespace glia {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using testing::Linear;
using testing::local_sgd;
using testing::mse;
using testing::tensor;
using ::testing::ThrowsMessage;
using testing::values;

// The library's losses and metrics go straight into a step, no lambda around them.
TEST_F(Linear, LibraryLossesAndMetricsNeedNoWrapper) {
  TrainStep step(model, losses::mean_squared_error, local_sgd(0.05),
                 {.metrics = {{"mae", metrics::mean_absolute_error},
                              {"huber", losses::huber.with({.delta = 0.5})}}});
  TrainState s = step.init(0);
  // The loss reported is the library's mean squared error, and the metrics are computed
  // on the same predictions before the update.
  ModelState before = s.model;
  StepOutput first = step(s, x, y);
  auto built = build(model);
  Tensor pred = built.predict(before, x);
  std::vector<double> pv = values(pred), yv = values(y);
  double se = 0, ae = 0;
  for (std::size_t i = 0; i < pv.size(); ++i)
    se += (pv[i] - yv[i]) * (pv[i] - yv[i]), ae += std::abs(pv[i] - yv[i]);
  EXPECT_NEAR(first.loss, se / double(pv.size()), 1e-5);
  EXPECT_NEAR(first.metrics.at("mae"), ae / double(pv.size()), 1e-5);
  double last = first.loss;
  for (int i = 0; i < 30; ++i) last = step(s, x, y).loss;
  EXPECT_LT(last, first.loss);
}

// Two inputs by name: y = dense(a) + dense(b), trained on y = a0 - b1; the loss falls, the
// step matches a hand-computed SGD update, and an EvalStep reads the same map.
TEST(TrainStep, SeveralInputsByName) {
  Model a = input("a", {-1, 2}), b = input("b", {-1, 2});
  Model y = add({dense(a, 1, {.use_bias = false}), dense(b, 1, {.use_bias = false})});
  TrainStep step(y, mse, local_sgd(0.1));
  TrainState s = step.init(0);
  Tensor xa = tensor({1, 0, 0, 1, 2, 1}, {3, 2}), xb = tensor({0, 1, 1, 0, 1, 2}, {3, 2});
  Tensor target = tensor({0, -1, -1}, {3, 1});  // a0 - b1
  // One SGD step by hand: d mean((p - t)^2) / dW = 2/3 X^T (p - t) for each input's kernel.
  std::vector<double> wa = values(s.model.params.at("dense_0").at("kernel"));
  std::vector<double> wb = values(s.model.params.at("dense_1").at("kernel"));
  std::vector<double> av = values(xa), bv = values(xb), tv = values(target);
  double ga[2] = {0, 0}, gb[2] = {0, 0};
  for (int i = 0; i < 3; ++i) {
    double p = av[std::size_t(2 * i)] * wa[0] + av[std::size_t(2 * i + 1)] * wa[1] +
               bv[std::size_t(2 * i)] * wb[0] + bv[std::size_t(2 * i + 1)] * wb[1];
    for (int k = 0; k < 2; ++k) {
      ga[k] += 2.0 / 3 * av[std::size_t(2 * i + k)] * (p - tv[std::size_t(i)]);
      gb[k] += 2.0 / 3 * bv[std::size_t(2 * i + k)] * (p - tv[std::size_t(i)]);
    }
  }
  const std::map<std::string, Tensor> x{{"a", xa}, {"b", xb}};
  const double first = step(s, x, target).loss;
  std::vector<double> na = values(s.model.params.at("dense_0").at("kernel"));
  std::vector<double> nb = values(s.model.params.at("dense_1").at("kernel"));
  for (int k = 0; k < 2; ++k) {
    EXPECT_NEAR(na[std::size_t(k)], wa[std::size_t(k)] - 0.1 * ga[k], 1e-6);
    EXPECT_NEAR(nb[std::size_t(k)], wb[std::size_t(k)] - 0.1 * gb[k], 1e-6);
  }
  double last = first;
  for (int i = 0; i < 200; ++i) last = step(s, x, target).loss;
  EXPECT_LT(last, 1e-3 * first);
  EvalStep eval(y, mse);
  EXPECT_NEAR(eval(s.model, x, target).loss, last, 1e-3 * first);
}

// The probability losses refuse a model that ends in logits (a dense layer without an
// activation), naming the two fixes; from_logits, or a softmax at the end, trains.
TEST(TrainStep, ProbabilityLossesRefuseLogits) {
  Model x = input("x", {-1, 3});
  Tensor xs = tensor({0.5f, -1, 2, 1, 0.25f, -0.5f}, {2, 3});
  Tensor ys = tensor({1, 0, 0, 0, 1, 0}, {2, 3});
  TrainStep logits(dense(x, 3), losses::categorical_cross_entropy, local_sgd(0.1));
  TrainState s = logits.init(0);
  EXPECT_THAT([&] { logits(s, xs, ys); },
              ThrowsMessage<Error>(AllOf(HasSubstr("categorical_cross_entropy"),
                                         HasSubstr("logits, not probabilities"),
                                         HasSubstr("from_logits = true"), HasSubstr("softmax"))));
  TrainStep fixed(dense(x, 3), losses::categorical_cross_entropy.with({.from_logits = true}),
                  local_sgd(0.1));
  TrainState f = fixed.init(0);
  EXPECT_TRUE(std::isfinite(fixed(f, xs, ys).loss));
  TrainStep probs(dense(x, 3, {.activation = "softmax"}), losses::categorical_cross_entropy,
                  local_sgd(0.1));
  TrainState p = probs.init(0);
  EXPECT_TRUE(std::isfinite(probs(p, xs, ys).loss));
  TrainStep binary(dense(x, 1), losses::binary_cross_entropy, local_sgd(0.1));
  TrainState b = binary.init(0);
  EXPECT_THAT(
      [&] {
        binary(b, xs, tensor({1, 0}, {2, 1}));
      },
      ThrowsMessage<Error>(AllOf(HasSubstr("binary_cross_entropy"), HasSubstr("sigmoid"))));
}

}  // namespace
}  // namespace glia
