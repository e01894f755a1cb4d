// The training loop: event order, filters, halting, early stopping and LR reduction on
// scripted metrics, validation, metric aggregation, checkpoints and the evaluator
// (progress output: loop_progress_test.cpp). The optimizer and loss are written here so these tests
// stand alone.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sstream>

#include "optim/loop_test_util.hpp"

namespace glia {
namespace {

using namespace loop_testing;  // NOLINT

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

TEST(Loop, EventOrderForTwoEpochsOfThreeBatches) {
  Loop loop = quiet_trainer();
  std::vector<std::string> log;
  record_all(loop, log);
  LoopState s = loop.run(make_batches(3), {.epochs = 2});
  std::vector<std::string> want{"started 0:0"};
  for (int e = 0; e < 2; ++e) {
    want.push_back("epoch_started " + std::to_string(e) + ":0");
    for (int i = 0; i < 3; ++i) {
      want.push_back("iteration_started " + std::to_string(e) + ":" + std::to_string(i));
      want.push_back("iteration_completed " + std::to_string(e) + ":" + std::to_string(i + 1));
    }
    want.push_back("epoch_completed " + std::to_string(e) + ":3");
  }
  want.push_back("completed 2:3");
  EXPECT_EQ(log, want);
  EXPECT_EQ(s.epoch, 2);
  EXPECT_EQ(s.total_iterations, 6);
  EXPECT_EQ(s.train.step, 6);
  EXPECT_EQ(s.samples, 24);
  EXPECT_EQ(s.history.size(), 2u);
  EXPECT_EQ(s.epoch_seconds.size(), 2u);
  EXPECT_GT(s.samples_per_second, 0);
  EXPECT_FALSE(s.halted);
}

TEST(Loop, Filters) {
  Loop loop = quiet_trainer();
  std::vector<std::string> every2, once2, once4, epoch_every2;
  auto rec = [](std::vector<std::string>& v) {
    return [&v](LoopState& s) {
      v.push_back(label(s.event, s));
      return HandlerResult::continue_;
    };
  };
  loop.handle(Event::iteration_completed, rec(every2), Filter::every(2));
  loop.handle(Event::epoch_completed, rec(once2), Filter::once(2));
  loop.handle(Event::iteration_started, rec(once4), Filter::once(4));
  loop.handle(Event::epoch_started, rec(epoch_every2), Filter::every(2));
  loop.run(make_batches(3), {.epochs = 3});
  // Iterations count over the run: the 2nd, 4th and 6th ... of 9.
  EXPECT_THAT(every2, ElementsAre("iteration_completed 0:2", "iteration_completed 1:1",
                                  "iteration_completed 1:3", "iteration_completed 2:2"));
  EXPECT_THAT(once2, ElementsAre("epoch_completed 1:3"));
  EXPECT_THAT(once4, ElementsAre("iteration_started 1:0"));
  EXPECT_THAT(epoch_every2, ElementsAre("epoch_started 1:0"));
  EXPECT_THAT([] { Filter::every(0); }, ThrowsMessage<Error>(HasSubstr("n must be >= 1")));
}

TEST(Loop, HaltEpochFiresEpochHaltedAndTheNextEpochRuns) {
  Loop loop = quiet_trainer();
  std::vector<std::string> log;
  loop.handle(Event::iteration_completed, [](LoopState& s) {
    return s.epoch == 0 && s.iteration == 2 ? HandlerResult::halt_epoch : HandlerResult::continue_;
  });
  std::vector<double> batch_loss;
  loop.handle(Event::iteration_completed, [&](LoopState& s) {
    batch_loss.push_back(s.batch.loss);
    return HandlerResult::continue_;
  });
  record_all(loop, log);
  LoopState s = loop.run(make_batches(3), {.epochs = 2});
  std::vector<std::string> want{"started 0:0",
                                "epoch_started 0:0",
                                "iteration_started 0:0",
                                "iteration_completed 0:1",
                                "iteration_started 0:1",
                                "epoch_halted 0:2",  // the halting handler ends the event
                                "epoch_started 1:0",
                                "iteration_started 1:0",
                                "iteration_completed 1:1",
                                "iteration_started 1:1",
                                "iteration_completed 1:2",
                                "iteration_started 1:2",
                                "iteration_completed 1:3",
                                "epoch_completed 1:3",
                                "completed 2:3"};
  EXPECT_EQ(log, want);
  EXPECT_EQ(s.total_iterations, 5);
  EXPECT_FALSE(s.halted);
  ASSERT_EQ(s.history.size(), 2u);
  // The recorder ran after batch 1 of epoch 1 only (the halting handler ended batch 2's
  // event), then after each batch of epoch 2.
  ASSERT_EQ(batch_loss.size(), 4u);
  EXPECT_NEAR(s.history[1].at("loss"), (batch_loss[1] + batch_loss[2] + batch_loss[3]) / 3, 1e-12);
}

TEST(Loop, HaltLoopStops) {
  Loop loop = quiet_trainer();
  loop.handle(Event::iteration_completed, [](LoopState& s) {
    return s.total_iterations == 4 ? HandlerResult::halt_loop : HandlerResult::continue_;
  });
  std::vector<std::string> log;
  record_all(loop, log);
  LoopState s = loop.run(make_batches(3), {.epochs = 5});
  EXPECT_TRUE(s.halted);
  EXPECT_EQ(s.total_iterations, 4);
  EXPECT_EQ(s.train.step, 4);
  EXPECT_EQ(s.history.size(), 2u);
  ASSERT_GE(log.size(), 2u);
  EXPECT_EQ(log[log.size() - 2], "iteration_started 1:0");  // no event after the halt ...
  EXPECT_EQ(log.back(), "completed 2:1");                   // ... but completed
}

// Sets "validation_score" from a script, as a validation handler would.
void script(Loop& loop, std::vector<double> values, const std::string& name = "validation_score") {
  loop.handle(Event::epoch_completed, [values, name](LoopState& s) {
    s.metrics[name] = values.at(static_cast<std::size_t>(s.epoch));
    return HandlerResult::continue_;
  });
}

TEST(Loop, EarlyStopWithPatience) {
  Loop loop = quiet_trainer();
  script(loop, {1.0, 0.8, 0.9, 0.85, 0.7, 0.6});
  loop.early_stop({.monitor = "validation_score", .patience = 2});
  LoopState s = loop.run(make_batches(1), {.epochs = 6});
  // Best 0.8 at epoch 2; epochs 3 and 4 do not improve: halted after epoch 4.
  EXPECT_TRUE(s.halted);
  ASSERT_EQ(s.history.size(), 4u);
  EXPECT_EQ(s.history[3].at("validation_score"), 0.85);

  Loop up = quiet_trainer();
  script(up, {0.1, 0.5, 0.52, 0.6, 0.3, 0.2, 0.1}, "accuracy_like");
  up.early_stop(
      {.monitor = "accuracy_like", .patience = 1, .mode = MonitorMode::max, .min_delta = 0.05});
  LoopState u = up.run(make_batches(1), {.epochs = 7});
  EXPECT_EQ(u.history.size(), 3u);  // 0.52 is not better than 0.5 by more than 0.05
  // A second run starts afresh.
  EXPECT_EQ(up.run(make_batches(1), {.epochs = 7}).history.size(), 3u);

  Loop missing = quiet_trainer();
  missing.early_stop();
  EXPECT_THAT([&] { missing.run(make_batches(1), {.epochs = 2}); },
              ThrowsMessage<Error>(HasSubstr("no metric 'validation_loss' at the end of epoch 1; "
                                             "the epoch has: loss (attach validate() before it)")));
}

TEST(Loop, ReduceLrOnPlateauScalesLrScale) {
  Loop loop = quiet_trainer();
  script(loop, {1.0, 1.1, 1.2, 0.5, 0.6, 0.7});
  loop.reduce_lr_on_plateau(
      {.monitor = "validation_score", .factor = 0.5, .patience = 1, .min_scale = 0.3});
  std::vector<double> scales;
  loop.handle(Event::epoch_completed, [&](LoopState& s) {
    scales.push_back(s.train.lr_scale);
    return HandlerResult::continue_;
  });
  LoopState s = loop.run(make_batches(1), {.epochs = 6});
  EXPECT_THAT(scales, ElementsAre(1.0, 0.5, 0.3, 0.3, 0.3, 0.3));
  EXPECT_EQ(s.train.lr_scale, 0.3);
  EXPECT_THAT([&] { loop.reduce_lr_on_plateau({.factor = 1.5}); },
              ThrowsMessage<Error>(HasSubstr("factor must be in (0, 1), got 1.5")));
}

// The mean over batches of each batch's MSE, for a dense(1) model with these parameters.
double average_mse(const ModelState& m, const std::vector<Batch>& batches) {
  std::vector<double> w = m.params.at("dense_0").at("kernel").to_vector<double>();
  double b = m.params.at("dense_0").at("bias").item<double>();
  double total = 0;
  for (const Batch& batch : batches) {
    std::vector<double> x = batch.x.to_vector<double>(), y = batch.y.to_vector<double>();
    double l = 0;
    for (std::size_t n = 0; n < y.size(); ++n) {
      double r = x[2 * n] * w[0] + x[2 * n + 1] * w[1] + b - y[n];
      l += r * r / static_cast<double>(y.size());
    }
    total += l / static_cast<double>(batches.size());
  }
  return total;
}

TEST(Loop, ValidateAddsValidationMetrics) {
  std::vector<Batch> val = make_batches(2);
  Loop loop = quiet_trainer({.metrics = {{"target", mean_target}}});
  loop.validate(val);
  std::vector<double> at_epoch_end;
  loop.handle(Event::epoch_completed, [&](LoopState& s) {
    at_epoch_end.push_back(average_mse(s.train.model, val));
    return HandlerResult::continue_;
  });
  LoopState s = loop.run(make_batches(3), {.epochs = 2});
  ASSERT_EQ(s.history.size(), 2u);
  for (std::size_t e = 0; e < 2; ++e) {
    EXPECT_NEAR(s.history[e].at("validation_loss"), at_epoch_end[e], 1e-5);
    // Targets of the 2 validation batches: a - b + k averaged = (mean of a) - b_k + k.
    double t0 = -0.25 - (-0.5) + 0, t1 = -0.25 - (-0.25) + 1;
    EXPECT_NEAR(s.history[e].at("validation_target"), (t0 + t1) / 2, 1e-6);
  }
  EXPECT_EQ(s.history[0].count("loss"), 1u);
  EXPECT_EQ(s.history[0].count("target"), 1u);
  EXPECT_THAT([] { evaluator(linear_model()).validate(make_batches(1)); },
              ThrowsMessage<Error>(HasSubstr("only a trainer validates")));
}

TEST(Loop, MetricsAreRunningAveragesOrSumsOverTheEpoch) {
  Loop loop = quiet_trainer({.metrics = {{"target", mean_target}}});
  loop.metric("rows", rows, metrics::Aggregate::running_sum);
  std::vector<double> losses;
  std::vector<std::map<std::string, double>> partial;
  loop.handle(Event::iteration_completed, [&](LoopState& s) {
    losses.push_back(s.batch.loss);
    partial.push_back(s.metrics);
    return HandlerResult::continue_;
  });
  std::vector<Batch> batches = make_batches(3);
  LoopState s = loop.run(batches, {.epochs = 2});
  // Batch k's targets average -0.25 - (0.25 k - 0.5) + k = 0.25 + 0.75 k.
  double t[3] = {0.25, 1.0, 1.75};
  EXPECT_NEAR(partial[0].at("target"), t[0], 1e-6);
  EXPECT_NEAR(partial[1].at("target"), (t[0] + t[1]) / 2, 1e-6);
  EXPECT_NEAR(s.history[0].at("target"), (t[0] + t[1] + t[2]) / 3, 1e-6);
  EXPECT_EQ(partial[1].at("rows"), 8);
  EXPECT_EQ(s.history[1].at("rows"), 12);  // reset each epoch
  EXPECT_NEAR(s.history[0].at("loss"), (losses[0] + losses[1] + losses[2]) / 3, 1e-12);
  EXPECT_NEAR(s.history[1].at("loss"), (losses[3] + losses[4] + losses[5]) / 3, 1e-12);
  EXPECT_LT(s.history[1].at("loss"), s.history[0].at("loss"));
  EXPECT_THAT([&] { loop.metric("loss", rows); },
              ThrowsMessage<Error>(HasSubstr("'loss' is the loop's own loss")));
}

TEST(Loop, LogCheckpointAndMaxIterations) {
  std::ostringstream log;
  std::vector<std::int64_t> saved;
  Loop loop = quiet_trainer();
  loop.log(log, Filter::every(2));
  loop.log(log, Filter::always(), Event::epoch_completed);
  loop.handle(
      Event::epoch_completed,
      [&](LoopState& s) {
        saved.push_back(s.train.step);
        return HandlerResult::continue_;
      },
      Filter::every(2));
  LoopState s = loop.run(make_batches(3), {.epochs = 4, .max_iterations_per_epoch = 2});
  EXPECT_EQ(s.total_iterations, 8);
  EXPECT_EQ(s.batches_per_epoch, 2);
  EXPECT_THAT(saved, ElementsAre(4, 8));  // after epochs 2 and 4
  std::vector<std::string> lines = lines_of(log.str());
  ASSERT_EQ(lines.size(), 8u);
  // With two batches an epoch, the aggregate at iteration 2 is the epoch's.
  EXPECT_EQ(lines[0], "Epoch 1, iteration 2: loss " + g4(s.history[0].at("loss")));
  EXPECT_EQ(lines[1], "Epoch 1: loss " + g4(s.history[0].at("loss")));
}

TEST(Loop, ContinuesFromAGivenStateAndEvaluates) {
  Loop loop = quiet_trainer();
  std::vector<Batch> batches = make_batches(3);
  LoopState first = loop.run(batches, {.epochs = 1});
  LoopState second = loop.run(batches, {.epochs = 1}, first.train);
  EXPECT_EQ(second.train.step, 6);
  EXPECT_LT(second.history[0].at("loss"), first.history[0].at("loss"));
  // A state without optimizer entries gets them from init, keeping its parameters.
  LoopState third = loop.run(batches, {.epochs = 1}, TrainState{.model = second.train.model});
  EXPECT_EQ(third.train.step, 3);

  Loop eval =
      evaluator(linear_model(),
                {.metrics = {{"target", mean_target}}, .loss = mse, .progress = ProgressMode::off});
  LoopState e = eval.run(batches, {}, third.train);
  EXPECT_NEAR(e.history[0].at("loss"), average_mse(third.train.model, batches), 1e-5);
  EXPECT_NEAR(e.history[0].at("target"), 1.0, 1e-6);
  EXPECT_EQ(e.train.step, 3);  // untouched
  EXPECT_THAT([&] { eval.run(batches); },
              ThrowsMessage<Error>(HasSubstr("run needs the model state to evaluate")));
}

TEST(Loop, DataFromAFunction) {
  int epochs_asked = 0;
  DataSource data(
      [&](std::int64_t) -> DataSource::Reader {
        ++epochs_asked;
        auto left = std::make_shared<int>(2);
        return [left]() -> std::optional<Batch> {
          if ((*left)-- == 0) return std::nullopt;
          return make_batches(1)[0];
        };
      },
      0);
  LoopState s = quiet_trainer().run(data, {.epochs = 3});
  EXPECT_EQ(epochs_asked, 3);
  EXPECT_EQ(s.total_iterations, 6);
  EXPECT_EQ(s.batches_per_epoch, 0);
}

}  // namespace
}  // namespace glia
