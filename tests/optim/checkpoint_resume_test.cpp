// Resuming from checkpoints: a run stopped at an epoch's end or inside an epoch and resumed
// from its file (with the model rebuilt from the file's architecture) ends with the same
// bits as a run that never stopped, on every backend here; the checkpoint handler's
// every-N, keep-last-K and keep-the-best modes.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>

#include "glia/compiler/registry.hpp"

#include "checkpoint_test_util.hpp"
#include "expect_error.hpp"

namespace glia {
namespace {

using testing::cross_entropy;
using testing::expect_error_parts;
using testing::expect_same;
using testing::TempDir;

class Resume : public ::testing::TestWithParam<std::string> {
 protected:
  Dataset train_ = testing::synthetic_classes(40, 7);
  Dataset valid_ = testing::synthetic_classes(16, 8);

  // 5 shuffled batches an epoch; the order depends on the epoch, as in a real run.
  Batches batches() const {
    return Batches(train_, {.batch_size = 8, .shuffle = true, .seed = 11});
  }
  Loop make_loop(const Model& model) const {
    return trainer(model, cross_entropy, optimizers::adam(0.02),
                   {.backend = GetParam(),
                    .seed = 3,
                    .metrics = {{"accuracy", testing::accuracy}},
                    .progress = ProgressMode::off});
  }
  static void expect_same_run(const LoopState& want, const LoopState& got) {
    expect_same(want.train, got.train);
    EXPECT_EQ(want.history, got.history);
    EXPECT_EQ(want.epoch, got.epoch);
    EXPECT_EQ(want.total_iterations, got.total_iterations);
    EXPECT_EQ(want.samples, got.samples);
    EXPECT_EQ(want.epoch_seconds.size(), got.epoch_seconds.size());
  }
};

TEST_P(Resume, FromAnEpochEndIsBitIdentical) {
  TempDir dir;
  LoopState full = make_loop(testing::small_classifier()).run(batches(), {.epochs = 3});

  Loop first = make_loop(testing::small_classifier());
  first.checkpoint({.path = dir.file("m.h5")});
  first.run(batches(), {.epochs = 1});
  Checkpoint c = load_checkpoint(dir.file("m.h5"));
  EXPECT_EQ(c.loop.epoch, 1);
  EXPECT_EQ(c.loop.train.step, 5);
  // A new loop on the model rebuilt from the file, as a new process would make it.
  LoopState resumed = make_loop(c.model()).resume(batches(), {.epochs = 3}, c.loop);
  expect_same_run(full, resumed);
  EXPECT_NE(full.history[0].at("loss"), full.history[2].at("loss"));  // it did train
}

TEST_P(Resume, FromInsideAnEpochIsBitIdentical) {
  TempDir dir;
  LoopState full = make_loop(testing::small_classifier()).run(batches(), {.epochs = 3});

  Loop first = make_loop(testing::small_classifier());
  first.checkpoint(
      {.path = dir.file("m.h5"), .event = Event::iteration_completed, .filter = Filter::every(3)});
  // Killed during iteration 8, after the save at iteration 6 (epoch 2, batch 1).
  first.handle(
      Event::iteration_completed, [](LoopState&) { return HandlerResult::halt_loop; },
      Filter::once(7));
  LoopState stopped = first.run(batches(), {.epochs = 3});
  EXPECT_TRUE(stopped.halted);
  Checkpoint c = load_checkpoint(dir.file("m.h5"));
  EXPECT_EQ(c.saved_at, "iteration_completed");
  EXPECT_EQ(c.loop.epoch, 1);
  EXPECT_EQ(c.loop.iteration, 1);
  EXPECT_EQ(c.loop.total_iterations, 6);
  EXPECT_EQ(c.loop.history.size(), 1u);
  EXPECT_EQ(c.loop.metrics.count("loss"), 1u);  // the epoch's running average so far

  LoopState resumed = make_loop(c.model()).resume(batches(), {.epochs = 3}, c.loop);
  expect_same_run(full, resumed);
}

TEST_P(Resume, FromAStateAHandlerCopiedInMemory) {
  LoopState full = make_loop(testing::small_classifier()).run(batches(), {.epochs = 3});
  for (Event at : {Event::epoch_completed, Event::iteration_completed}) {
    SCOPED_TRACE(event_name(at));
    LoopState copy;
    Loop first = make_loop(testing::small_classifier());
    first.handle(
        at,
        [&copy](LoopState& s) {
          copy = s;
          return HandlerResult::halt_loop;
        },
        Filter::once(at == Event::epoch_completed ? 2 : 8));
    first.run(batches(), {.epochs = 3});
    expect_same_run(full,
                    make_loop(testing::small_classifier()).resume(batches(), {.epochs = 3}, copy));
  }
}

TEST_P(Resume, HandlersThatWatchEpochsPickUpWhereTheyWere) {
  TempDir dir;
  auto attach = [&](Loop& loop) {
    loop.validate(Batches(valid_, {.batch_size = 8}))
        .reduce_lr_on_plateau(
            {.monitor = "validation_loss", .factor = 0.5, .patience = 1, .mode = MonitorMode::max});
  };
  Loop whole = make_loop(testing::small_classifier());
  attach(whole);
  LoopState full = whole.run(batches(), {.epochs = 5});
  EXPECT_LT(full.train.lr_scale, 1.0);  // the plateau reduced the rate at least once

  Loop first = make_loop(testing::small_classifier());
  attach(first);
  first.checkpoint({.path = dir.file("m.h5")});
  first.run(batches(), {.epochs = 2});
  Checkpoint c = load_checkpoint(dir.file("m.h5"));
  EXPECT_EQ(c.loop.history.back().count("validation_loss"), 1u);
  Loop second = make_loop(c.model());
  attach(second);
  expect_same_run(full, second.resume(batches(), {.epochs = 5}, c.loop));
}

TEST_P(Resume, KeepsTheLastFilesOrTheBest) {
  TempDir dir;
  Loop loop = make_loop(testing::small_classifier());
  loop.checkpoint({.path = dir.file("last.h5"), .keep_last = 2});
  loop.checkpoint({.path = dir.file("low.h5"), .monitor = "loss"});
  loop.checkpoint({.path = dir.file("high.h5"), .monitor = "loss", .mode = MonitorMode::max});
  loop.checkpoint({.path = dir.file("even.h5"), .filter = Filter::every(2)});
  LoopState s = loop.run(batches(), {.epochs = 4});

  EXPECT_THAT(checkpoint_files(dir.file("last.h5")),
              ::testing::ElementsAre(dir.file("last-00000015.h5"), dir.file("last-00000020.h5")));
  EXPECT_FALSE(std::filesystem::exists(dir.file("last.h5")));
  EXPECT_EQ(load_checkpoint(dir.file("last-00000015.h5")).loop.epoch, 3);

  std::vector<double> losses;
  for (const auto& h : s.history) losses.push_back(h.at("loss"));
  auto low = std::min_element(losses.begin(), losses.end()) - losses.begin();
  auto high = std::max_element(losses.begin(), losses.end()) - losses.begin();
  EXPECT_EQ(load_checkpoint(dir.file("low.h5")).loop.epoch, low + 1);
  EXPECT_EQ(load_checkpoint(dir.file("high.h5")).loop.epoch, high + 1);
  EXPECT_EQ(load_checkpoint(dir.file("even.h5")).loop.epoch, 4);
}

TEST_P(Resume, TheBestSurvivesAResume) {
  TempDir dir;
  // Keep the highest loss: the first epoch's, as the loss falls; a resumed run that forgot
  // it would overwrite the file with epoch 3.
  auto attach = [&](Loop& loop) {
    loop.checkpoint({.path = dir.file("last.h5")});
    loop.checkpoint({.path = dir.file("high.h5"), .monitor = "loss", .mode = MonitorMode::max});
  };
  Loop first = make_loop(testing::small_classifier());
  attach(first);
  first.run(batches(), {.epochs = 2});
  Loop second = make_loop(testing::small_classifier());
  attach(second);
  LoopState s = second.resume(batches(), {.epochs = 4}, load_checkpoint(dir.file("last.h5")).loop);
  std::vector<double> losses;
  for (const auto& h : s.history) losses.push_back(h.at("loss"));
  auto high = std::max_element(losses.begin(), losses.end()) - losses.begin();
  EXPECT_EQ(load_checkpoint(dir.file("high.h5")).loop.epoch, high + 1);
}

TEST_P(Resume, RefusesStatesThatDoNotFit) {
  TempDir dir;
  Loop first = make_loop(testing::small_classifier());
  first.checkpoint(
      {.path = dir.file("m.h5"), .event = Event::iteration_completed, .filter = Filter::every(4)});
  first.run(batches(), {.epochs = 3});
  Checkpoint c = load_checkpoint(dir.file("m.h5"));  // iteration 12: epoch 3, batch 2
  Loop loop = make_loop(testing::small_classifier());
  expect_error_parts([&] { loop.resume(batches(), {.epochs = 2}, c.loop); },
                     {"completed 2 epochs", "asks for 2"});
  c.loop.iteration = 4;
  Batches two(Dataset{train_.x, train_.y}, {.batch_size = 24});  // 2 batches an epoch
  expect_error_parts([&] { loop.resume(two, {.epochs = 3}, c.loop); },
                     {"batch 4 of epoch 3", "only 2 batches"});
  Loop eval = evaluator(testing::small_classifier(), {.progress = ProgressMode::off});
  expect_error_parts([&] { eval.resume(batches(), {.epochs = 3}, c.loop); }, {"only a trainer"});
}

std::vector<std::string> resumable_backends() {
  std::vector<std::string> out;
  for (const std::string& b : backend_names())
    if (b == "interp" || b == "cpu") out.push_back(b);
  return out;
}

INSTANTIATE_TEST_SUITE_P(Checkpoint, Resume, ::testing::ValuesIn(resumable_backends()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace glia
