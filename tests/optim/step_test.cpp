// The training and evaluation steps: one SGD step against a closed-form gradient, one
// trace for repeated calls, state replacement, convergence, dropout keys per step, batch
// norm statistics, frozen parameters, lr_scale, and the errors. The optimizer and loss
// are written here so these tests stand alone.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "glia/layers/combine.hpp"
#include "glia/layers/linear.hpp"
#include "glia/layers/normalization.hpp"
#include "glia/optim/step.hpp"
#include "optim/step_test_util.hpp"

namespace glia {
namespace {

using ::testing::HasSubstr;
using testing::Linear;
using testing::local_sgd;
using testing::mse;
using testing::tensor;
using ::testing::ThrowsMessage;
using testing::values;

// Heavy-ball momentum with a step counter: state "count" and "v/<layer>/<name>".
Transformation local_momentum(double lr, double beta) {
  return {[](const ExprParamMap& p) {
            OptState s{{"count", zeros(Shape{}, DType::i64)}};
            for (const auto& [layer, m] : p)
              for (const auto& [name, e] : m) s["v/" + layer + "/" + name] = zeros(e.shape());
            return s;
          },
          [lr, beta](const ExprParamMap& g, const OptState& s, const ExprParamMap&) {
            ExprParamMap u;
            OptState next{{"count", add(s.at("count"), 1)}};  // stays i64
            for (const auto& [layer, m] : g)
              for (const auto& [name, e] : m) {
                Expr v = s.at("v/" + layer + "/" + name) * beta + e;
                next["v/" + layer + "/" + name] = v;
                u[layer][name] = v * -lr;
              }
            return std::pair{u, next};
          }};
}

TEST_F(Linear, OneStepIsTheHandComputedSgdUpdate) {
  const double lr = 0.1;
  TrainStep step(model, mse, local_sgd(lr));
  TrainState s = step.init(7);
  std::vector<double> w = values(s.model.params.at("dense_0").at("kernel"));  // [3, 2]
  std::vector<double> b = values(s.model.params.at("dense_0").at("bias"));    // [2]
  std::vector<double> xv = values(x), yv = values(y);
  // loss = 1/8 sum (xW + b - y)^2; dW = 2/8 X^T r; db = 2/8 sum_rows r.
  std::vector<double> dw(6, 0), db(2, 0);
  double loss = 0;
  for (int n = 0; n < 4; ++n)
    for (int j = 0; j < 2; ++j) {
      double pred = b[j];
      for (int i = 0; i < 3; ++i) pred += xv[n * 3 + i] * w[i * 2 + j];
      double r = pred - yv[n * 2 + j];
      loss += r * r / 8;
      db[j] += 2 * r / 8;
      for (int i = 0; i < 3; ++i) dw[i * 2 + j] += 2 * r / 8 * xv[n * 3 + i];
    }
  StepOutput out = step(s, x, y);
  EXPECT_NEAR(out.loss, loss, 1e-5);
  std::vector<double> w1 = values(s.model.params.at("dense_0").at("kernel"));
  std::vector<double> b1 = values(s.model.params.at("dense_0").at("bias"));
  for (int k = 0; k < 6; ++k) EXPECT_NEAR(w1[k], w[k] - lr * dw[k], 1e-6) << k;
  for (int k = 0; k < 2; ++k) EXPECT_NEAR(b1[k], b[k] - lr * db[k], 1e-6) << k;
  EXPECT_EQ(s.step, 1);
}

TEST_F(Linear, TracedOncePerSignature) {
  TrainStep step(model, mse, local_momentum(0.05, 0.9));
  TrainState s = step.init(0);
  for (int i = 0; i < 5; ++i) step(s, x, y);
  CacheStats stats = step.cache_stats();
  EXPECT_EQ(stats.misses, 1);
  EXPECT_EQ(stats.hits, 4);
  EXPECT_EQ(stats.entries, 1);
  std::string text = step.graph_text(s, x, y);
  step(s, x, y);
  EXPECT_EQ(step.graph_text(s, x, y), text);  // the step number is an input, not a constant
  EXPECT_EQ(step.cache_stats().entries, 1);
  EXPECT_THAT(text, HasSubstr("train_step"));
  // Another batch size is another signature.
  Tensor x2 = tensor({1, 2, 3, 4, 5, 6}, {2, 3}), y2 = tensor({1, 2, 3, 4}, {2, 2});
  step(s, x2, y2);
  EXPECT_EQ(step.cache_stats().misses, 2);
  EXPECT_EQ(step.cache_stats().entries, 2);
}

TEST_F(Linear, StateTensorsAreReplacedByTheOutputs) {
  TrainStep step(model, mse, local_momentum(0.1, 0.5));
  TrainState s = step.init(3);
  ASSERT_EQ(s.optimizer.size(), 3u);  // count, v/dense_0/bias, v/dense_0/kernel
  Tensor kernel = s.model.params.at("dense_0").at("kernel");
  Tensor count = s.optimizer.at("count");
  Tensor v = s.optimizer.at("v/dense_0/kernel");
  std::vector<double> k0 = values(kernel);
  step(s, x, y);
  EXPECT_FALSE(s.model.params.at("dense_0").at("kernel").shares_storage_with(kernel));
  EXPECT_FALSE(s.optimizer.at("count").shares_storage_with(count));
  EXPECT_FALSE(s.optimizer.at("v/dense_0/kernel").shares_storage_with(v));
  EXPECT_EQ(values(kernel), k0);  // the old tensor is untouched (still held here only)
  EXPECT_EQ(s.optimizer.at("count").item<std::int64_t>(), 1);
  // After one step v is the gradient, and the kernel moved by -lr * v.
  std::vector<double> v1 = values(s.optimizer.at("v/dense_0/kernel"));
  std::vector<double> k1 = values(s.model.params.at("dense_0").at("kernel"));
  for (std::size_t i = 0; i < k1.size(); ++i) EXPECT_NEAR(k1[i], k0[i] - 0.1 * v1[i], 1e-6);
  step(s, x, y);
  EXPECT_EQ(s.optimizer.at("count").item<std::int64_t>(), 2);
  EXPECT_EQ(s.step, 2);
}

TEST_F(Linear, LrScaleScalesTheUpdate) {
  TrainStep step(model, mse, local_sgd(0.1));
  TrainState a = step.init(1), b = step.init(1);
  b.lr_scale = 0.25;
  std::vector<double> k0 = values(a.model.params.at("dense_0").at("kernel"));
  step(a, x, y);
  step(b, x, y);
  std::vector<double> ka = values(a.model.params.at("dense_0").at("kernel"));
  std::vector<double> kb = values(b.model.params.at("dense_0").at("kernel"));
  for (std::size_t i = 0; i < k0.size(); ++i)
    EXPECT_NEAR(kb[i] - k0[i], 0.25 * (ka[i] - k0[i]), 1e-6);
  EXPECT_EQ(step.cache_stats().misses, 1);  // lr_scale is an input
}

TEST(TrainStep, LossFallsOnATinyRegression) {
  // y = 2 x0 - 3 x1 + 0.5 on 16 points.
  std::vector<float> xs, ys;
  for (int i = 0; i < 16; ++i) {
    float a = static_cast<float>(i % 4) - 1.5f, c = static_cast<float>(i / 4) * 0.5f - 0.75f;
    xs.insert(xs.end(), {a, c});
    ys.push_back(2 * a - 3 * c + 0.5f);
  }
  Tensor x = tensor(xs, {16, 2}), y = tensor(ys, {16, 1});
  TrainStep step(dense(input("x", {-1, 2}), 1), mse, local_sgd(0.1));
  TrainState s = step.init(0);
  std::vector<double> losses;
  for (int i = 0; i < 50; ++i) losses.push_back(step(s, x, y).loss);
  EXPECT_LT(losses.back(), 1e-3 * losses.front());
  for (std::size_t i = 1; i < losses.size(); ++i) EXPECT_LT(losses[i], losses[i - 1]) << i;
  EXPECT_EQ(step.cache_stats().misses, 1);
}

// A stochastic layer that outputs its own uniform draw, so the key shows in a metric.
Model noise(const Model& x) {
  Model m = layer("noise", {x}, [](LayerContext& c) {
    if (!c.training()) return c.input() * 0.0;
    return c.input() * 0.0 + random::uniform(c.key(), Shape{});
  });
  auto node = std::make_shared<LayerNode>(m.node());
  node->stochastic = true;
  return Model(std::move(node));
}

TEST(TrainStep, DropoutKeyIsDerivedFromSeedAndStep) {
  Model model = noise(dense(input("x", {-1, 2}), 1));  // layers: x 0, dense_0 1, noise_0 2
  StepOptions opts{.metrics = {{"u", [](const Expr&, const Expr& p) { return reduce_max(p); }}}};
  TrainStep step(model, mse, local_sgd(0.1), opts);
  Tensor x = tensor({1, 2, 3, 4, 5, 6, 7, 8}, {4, 2}), y = Tensor::zeros({4, 1});
  auto expected = [](std::uint64_t seed, std::uint32_t at) {
    auto f = jit([at](const Expr& k) {
      Expr step_key = random::fold_in(random::fold_in(k, kDropoutStream), at);
      return random::uniform(random::fold_in(step_key, 2), Shape{});
    });
    return f(random::key(seed)).item<double>();
  };
  TrainState s = step.init(5);
  std::vector<double> u;
  for (std::uint32_t i = 0; i < 3; ++i) {
    u.push_back(step(s, x, y).metrics.at("u"));
    EXPECT_EQ(u.back(), expected(5, i)) << "step " << i;
  }
  EXPECT_NE(u[0], u[1]);
  EXPECT_NE(u[1], u[2]);
  TrainState other = step.init(6);
  EXPECT_NE(step(other, x, y).metrics.at("u"), u[0]);
  EXPECT_EQ(step.cache_stats().misses, 1);
}

TEST(TrainStep, BatchNormStatisticsUpdateThroughTheStep) {
  Model model = dense(batch_norm(input("x", {-1, 2})), 1);
  TrainStep step(model, mse, local_sgd(0.1));
  TrainState s = step.init(0);
  Tensor x = tensor({1, 10, 2, 20, 3, 30, 6, 40}, {4, 2}), y = Tensor::zeros({4, 1});
  step(s, x, y);
  // PyTorch's update with momentum 0.1 from mean 0 and var 1; the unbiased batch variance.
  std::vector<double> rm = values(s.model.state.at("batch_norm_0").at("running_mean"));
  std::vector<double> rv = values(s.model.state.at("batch_norm_0").at("running_var"));
  // column 0: 1 2 3 6 (mean 3, unbiased var 14/3); column 1: 10 20 30 40 (25, 500/3)
  EXPECT_NEAR(rm[0], 0.1 * 3, 1e-5);
  EXPECT_NEAR(rm[1], 0.1 * 25, 1e-4);
  EXPECT_NEAR(rv[0], 0.9 + 0.1 * 14.0 / 3, 1e-5);
  EXPECT_NEAR(rv[1], 0.9 + 0.1 * 500.0 / 3, 1e-3);
  step(s, x, y);
  rm = values(s.model.state.at("batch_norm_0").at("running_mean"));
  EXPECT_NEAR(rm[0], 0.9 * 0.3 + 0.1 * 3, 1e-5);
}

TEST_F(Linear, FrozenParametersStayPut) {
  Model frozen =
      freeze(model, [](const std::string&, const std::string& p) { return p == "kernel"; });
  TrainStep step(frozen, mse, local_sgd(0.1, /*decay=*/0.5));  // decay would move a zero gradient
  TrainState s = step.init(0);
  std::vector<double> k0 = values(s.model.params.at("dense_0").at("kernel"));
  std::vector<double> b0 = values(s.model.params.at("dense_0").at("bias"));
  step(s, x, y);
  EXPECT_EQ(values(s.model.params.at("dense_0").at("kernel")), k0);
  EXPECT_NE(values(s.model.params.at("dense_0").at("bias")), b0);
}

TEST_F(Linear, EvalStepComputesLossAndMetricsInInferenceMode) {
  StepOptions opts{
      .metrics = {{"mae", [](const Expr& t, const Expr& p) { return mean(abs(p - t)); }}}};
  EvalStep eval(model, mse, opts);
  ModelState ms;
  ms.params["dense_0"]["kernel"] = tensor({1, 0, 0, 1, 1, -1}, {3, 2});
  ms.params["dense_0"]["bias"] = tensor({0.5f, -0.5f}, {2});
  std::vector<double> xv = values(x), yv = values(y);
  double loss = 0, mae = 0;
  for (int n = 0; n < 4; ++n) {
    double p0 = xv[n * 3] + xv[n * 3 + 2] + 0.5, p1 = xv[n * 3 + 1] - xv[n * 3 + 2] - 0.5;
    double r0 = p0 - yv[n * 2], r1 = p1 - yv[n * 2 + 1];
    loss += (r0 * r0 + r1 * r1) / 8;
    mae += (std::abs(r0) + std::abs(r1)) / 8;
  }
  StepOutput out = eval(ms, x, y);
  EXPECT_NEAR(out.loss, loss, 1e-5);
  EXPECT_NEAR(out.metrics.at("mae"), mae, 1e-5);
  eval(ms, x, y);
  EXPECT_EQ(eval.cache_stats().misses, 1);
  EXPECT_EQ(eval.cache_stats().hits, 1);
  // Without a loss: metrics only.
  EvalStep metrics_only(model, nullptr, opts);
  EXPECT_EQ(metrics_only(ms, x, y).loss, 0);
}

TEST_F(Linear, Errors) {
  auto per_example = [](const Expr& t, const Expr& p) { return mean(square(p - t), {1}); };
  TrainStep bad_loss(model, per_example, local_sgd(0.1));
  TrainState s = bad_loss.init(0);
  EXPECT_THAT([&] { bad_loss(s, x, y); },
              ThrowsMessage<Error>(HasSubstr("the loss must return a scalar, got f32[4]")));
  EXPECT_EQ(s.step, 0);  // left as it was

  // An optimizer whose state changes shape would retrace every call.
  Transformation drifting{[](const ExprParamMap&) {
                            return OptState{{"n", zeros(Shape{})}};
                          },
                          [](const ExprParamMap& g, const OptState&, const ExprParamMap&) {
                            return std::pair{g, OptState{{"n", zeros(Shape{2})}}};
                          }};
  TrainStep drift(model, mse, drifting);
  TrainState d = drift.init(0);
  EXPECT_THAT([&] { drift(d, x, y); },
              ThrowsMessage<Error>(HasSubstr("changed its state from {n f32} to {n f32[2]}")));

  Model two = add({input("a", {-1, 2}), input("b", {-1, 2})});
  TrainStep pair(two, mse, local_sgd(0.1));
  TrainState ps = pair.init(0);
  Tensor two_rows = tensor({1, 2, 3, 4}, {2, 2});
  EXPECT_THAT([&] { pair(ps, two_rows, two_rows); },
              ThrowsMessage<Error>(HasSubstr("has 2 inputs (a, b): pass x as a map")));
  EXPECT_THAT(
      [&] {
        pair(ps, {{"a", two_rows}}, two_rows);
      },
      ThrowsMessage<Error>(HasSubstr("no tensor for input 'b'")));
  EXPECT_THAT(
      [&] {
        pair(ps, {{"a", two_rows}, {"b", two_rows}, {"c", two_rows}}, two_rows);
      },
      ThrowsMessage<Error>(HasSubstr("the model has no input 'c' (its inputs: a, b)")));
  EXPECT_THAT(
      [&] {
        pair(ps, {{"a", two_rows}, {"b", tensor({1, 2}, {1, 2})}}, two_rows);
      },
      ThrowsMessage<Error>(HasSubstr("must hold the same number of examples")));
  TrainStep ok(model, mse, local_sgd(0.1));
  TrainState t = ok.init(0);
  EXPECT_THAT(
      [&] {
        ok(t, tensor({1, 2}, {1, 2}), y);
      },
      ThrowsMessage<Error>(HasSubstr("input 'x' expects f32[?][3], got f32[1][2]")));
}

}  // namespace
}  // namespace glia
