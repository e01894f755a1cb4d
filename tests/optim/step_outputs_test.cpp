// Models with several outputs through TrainStep, EvalStep and the Loop: a weighted loss
// per head (reported with each head's own loss), metrics per head, named inputs and
// targets from Batches, and a siamese model (one shared encoder) that learns.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "glia/layers/activation.hpp"
#include "glia/layers/combine.hpp"
#include "glia/optim/loop.hpp"
#include "glia/optim/losses.hpp"
#include "glia/optim/metrics.hpp"
#include "glia/optim/optimizers.hpp"
#include "optim/step_test_util.hpp"

namespace glia {
namespace {

using ::testing::HasSubstr;
using testing::local_sgd;
using testing::tensor;
using ::testing::ThrowsMessage;
using testing::values;

double mean_squared(const Tensor& pred, const Tensor& target) {
  std::vector<double> p = values(pred), t = values(target);
  double s = 0;
  for (std::size_t i = 0; i < p.size(); ++i) s += (p[i] - t[i]) * (p[i] - t[i]);
  return s / static_cast<double>(p.size());
}

struct TwoHeads : ::testing::Test {
  Model x_in = input("x", {-1, 3});
  Model trunk = dense(x_in, 4, {.activation = "tanh", .name = "trunk"});
  Model model = outputs(
      {{"a", dense(trunk, 2, {.name = "head_a"})}, {"b", dense(trunk, 1, {.name = "head_b"})}});
  Tensor x = tensor({0.5f, -1, 2, 1, 0.25f, -0.5f, -2, 1.5f, 0, 0.75f, -0.25f, 1}, {4, 3});
  std::map<std::string, Tensor> y{{"a", tensor({1, 0, -1, 2, 0.5f, 0.5f, 3, -2}, {4, 2})},
                                  {"b", tensor({0.5f, -1, 2, 0}, {4, 1})}};
};

// The step's loss is la + 0.5 lb on the predictions before the update; each head's own
// loss and metric is reported beside it.
TEST_F(TwoHeads, WeightedLossPerHead) {
  TrainStep step(
      model,
      OutputLosses{{"a", {losses::mean_squared_error}}, {"b", {losses::mean_squared_error, 0.5}}},
      local_sgd(0.05), {.output_metrics = {{"a", {{"mae", metrics::mean_absolute_error}}}}});
  TrainState s = step.init(3);
  std::map<std::string, Tensor> pred = build(model).predict.outputs(s.model, x);
  const double la = mean_squared(pred["a"], y["a"]), lb = mean_squared(pred["b"], y["b"]);
  std::vector<double> pa = values(pred["a"]), ya = values(y["a"]);
  double mae = 0;
  for (std::size_t i = 0; i < pa.size(); ++i) mae += std::abs(pa[i] - ya[i]) / 8.0;
  StepOutput out = step(s, x, y);
  EXPECT_NEAR(out.loss, la + 0.5 * lb, 1e-5);
  EXPECT_NEAR(out.metrics.at("a_loss"), la, 1e-5);
  EXPECT_NEAR(out.metrics.at("b_loss"), lb, 1e-5);
  EXPECT_NEAR(out.metrics.at("a_mae"), mae, 1e-5);
  EXPECT_EQ(out.metrics.size(), 3u);

  EvalStep eval(model, OutputLosses{{"b", {losses::mean_squared_error, 2}}});
  std::map<std::string, Tensor> after = build(model).predict.outputs(s.model, x);
  StepOutput e = eval(s.model, x, std::map<std::string, Tensor>{{"b", y["b"]}});
  EXPECT_NEAR(e.loss, 2 * mean_squared(after["b"], y["b"]), 1e-5);
}

// A head whose loss weighs 0 gets no gradient: its layer keeps its parameters while the
// other head's and the trunk's move.
TEST_F(TwoHeads, ZeroWeightLeavesItsHeadUnchanged) {
  TrainStep step(
      model,
      OutputLosses{{"a", {losses::mean_squared_error}}, {"b", {losses::mean_squared_error, 0}}},
      local_sgd(0.1));
  TrainState s = step.init(1);
  const std::vector<double> b0 = values(s.model.params["head_b"]["kernel"]);
  const std::vector<double> a0 = values(s.model.params["head_a"]["kernel"]);
  const std::vector<double> t0 = values(s.model.params["trunk"]["kernel"]);
  step(s, x, y);
  EXPECT_EQ(values(s.model.params["head_b"]["kernel"]), b0);
  EXPECT_NE(values(s.model.params["head_a"]["kernel"]), a0);
  EXPECT_NE(values(s.model.params["trunk"]["kernel"]), t0);
}

TEST_F(TwoHeads, MismatchesAreNamed) {
  auto sgd = local_sgd(0.1);
  EXPECT_THAT([&] { TrainStep(model, losses::mean_squared_error, sgd); },
              ThrowsMessage<Error>(HasSubstr("several outputs (a, b); give a loss per output")));
  EXPECT_THAT(
      [&] {
        TrainStep(model, OutputLosses{{"c", {losses::mean_squared_error}}}, sgd);
      },
      ThrowsMessage<Error>(HasSubstr("a loss for output 'c', which the model does not have")));
  EXPECT_THAT(
      [&] {
        TrainStep(trunk, OutputLosses{{"a", {losses::mean_squared_error}}}, sgd);
      },
      ThrowsMessage<Error>(HasSubstr("the model has one output")));
  EXPECT_THAT(
      [&] {
        TrainStep(model, OutputLosses{{"a", {losses::mean_squared_error, -1}}}, sgd);
      },
      ThrowsMessage<Error>(HasSubstr("must be finite and >= 0")));
  TrainStep step(model, OutputLosses{{"a", {losses::mean_squared_error}}}, sgd);
  TrainState s = step.init(0);
  EXPECT_THAT([&] { step(s, x, y["a"]); },
              ThrowsMessage<Error>(HasSubstr("pass y as a map from output name")));
  EXPECT_THAT([&] { step(s, x, std::map<std::string, Tensor>{}); },
              ThrowsMessage<Error>(HasSubstr("no targets for output 'a'")));
  EXPECT_THAT([&] { step(s, x, y); },  // b has no loss
              ThrowsMessage<Error>(HasSubstr("targets for 'b', which has no loss or metric")));
  EXPECT_THAT(
      [&] {
        step(s, x, std::map<std::string, Tensor>{{"a", tensor({1, 2}, {1, 2})}});
      },
      ThrowsMessage<Error>(HasSubstr("same number of examples")));
  EXPECT_EQ(s.step, 0);  // nothing was applied
}

// 1,024 pairs of 4-vectors: a shared encoder reads both; head "bigger" says which sum is
// larger (two classes), head "total" regresses the sum of all eight numbers. Batches carry
// the two inputs and two targets by name; validation reports every head's loss.
struct Pairs {
  Dataset data;
  static Pairs make(std::int64_t n, std::uint32_t seed) {
    std::vector<float> left, right, bigger, total;
    std::uint32_t s = seed;
    auto uniform = [&s] {
      return static_cast<float>((s = s * 1664525u + 1013904223u) >> 8) / 16777216.0f * 2 - 1;
    };
    for (std::int64_t i = 0; i < n; ++i) {
      float sl = 0, sr = 0;
      for (int j = 0; j < 4; ++j) left.push_back(uniform()), sl += left.back();
      for (int j = 0; j < 4; ++j) right.push_back(uniform()), sr += right.back();
      bigger.push_back(sl > sr ? 1.0f : 0.0f);
      bigger.push_back(sl > sr ? 0.0f : 1.0f);
      total.push_back(sl + sr);
    }
    return {
        Dataset{.inputs = {{"left", tensor(left, {n, 4})}, {"right", tensor(right, {n, 4})}},
                .targets = {{"bigger", tensor(bigger, {n, 2})}, {"total", tensor(total, {n, 1})}}}};
  }
};

TEST(SeveralOutputs, SiameseModelLearnsThroughTheLoop) {
  Model left = input("left", {-1, 4}), right = input("right", {-1, 4});
  Shared encoder([](const Model& x) { return dense(x, 8, {.activation = "tanh"}); });
  Model a = encoder(left), b = encoder(right);
  Model both = concatenate({a, b});
  Model model =
      outputs({{"bigger", dense(both, 2, {.activation = "softmax"})}, {"total", dense(both, 1)}});
  Loop loop = trainer(model,
                      OutputLosses{{"bigger", {losses::categorical_cross_entropy}},
                                   {"total", {losses::mean_squared_error, 0.5}}},
                      optimizers::adam(1e-2), {.progress = ProgressMode::off});
  loop.metric("bigger", "accuracy", metrics::accuracy);
  loop.validate(Batches(Pairs::make(256, 9).data, {.batch_size = 64}));
  LoopState s = loop.run(Batches(Pairs::make(1024, 7).data, {.batch_size = 32, .shuffle = true}),
                         {.epochs = 15});
  const auto& last = s.history.back();
  for (const char* key : {"loss", "bigger_loss", "total_loss", "bigger_accuracy", "validation_loss",
                          "validation_bigger_accuracy", "validation_total_loss"})
    EXPECT_EQ(last.count(key), 1u) << key;
  EXPECT_NEAR(last.at("loss"), last.at("bigger_loss") + 0.5 * last.at("total_loss"), 1e-4);
  EXPECT_GT(last.at("validation_bigger_accuracy"), 0.9);
  EXPECT_LT(last.at("validation_total_loss"), 0.05);     // the sums have variance ~2.7
  EXPECT_EQ(s.train.model.params.count("dense_0"), 1u);  // the encoder, once
  EXPECT_EQ(s.train.model.params.size(), 3u);
}

// Named inputs and one target: the dataset gives inputs by name and y as a tensor.
TEST(SeveralOutputs, NamedInputsWithOneTarget) {
  Dataset d = Pairs::make(512, 3).data;
  d.y = d.targets.at("total");
  d.targets.clear();
  Model model = dense(concatenate({input("left", {-1, 4}), input("right", {-1, 4})}), 1);
  Loop loop = trainer(model, losses::mean_squared_error, optimizers::adam(5e-2),
                      {.progress = ProgressMode::off});
  LoopState s = loop.run(Batches(d, {.batch_size = 32}), {.epochs = 10});
  EXPECT_LT(s.history.back().at("loss"), 1e-3);  // the sum is linear in the inputs
  EXPECT_THAT([&] { Batches(Dataset{.x = d.inputs.at("left"), .y = d.y, .inputs = d.inputs}); },
              ThrowsMessage<Error>(HasSubstr("both x and named inputs")));
  d.inputs["right"] = tensor({1, 2, 3, 4}, {1, 4});
  EXPECT_THAT([&] { Batches b(d); }, ThrowsMessage<Error>(HasSubstr("input 'right' has 1")));
}

}  // namespace
}  // namespace glia
