// Loop::terminate_on_nan: a NaN or infinite batch loss halts the loop at that iteration,
// with the epoch, iteration and step named, before later handlers (a checkpoint) see it.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <limits>
#include <sstream>

#include "glia/optim/checkpoint.hpp"
#include "optim/loop_test_util.hpp"

namespace glia {
namespace {

using namespace loop_testing;  // NOLINT

using ::testing::HasSubstr;

// make_batches(3), with batch `bad` of epoch `bad_epoch` holding `value` in its first input
// (or, with `in_target`, its first target).
DataSource poisoned(std::int64_t bad_epoch, int bad, float value, bool in_target = false) {
  return DataSource(
      [=](std::int64_t e) -> DataSource::Reader {
        auto next = std::make_shared<int>(0);
        return [=]() -> std::optional<Batch> {
          if (*next == 3) return std::nullopt;
          Batch b = make_batches(3)[static_cast<std::size_t>(*next)];
          if (e == bad_epoch && *next == bad) {
            Tensor& t = in_target ? b.y : b.x;
            std::vector<float> v = t.to_vector<float>();
            v[0] = value;
            t = Tensor::from<float>(v, t.shape());
          }
          ++*next;
          return b;
        };
      },
      3);
}

TEST(TerminateOnNan, HaltsAtTheNanBatchAndNamesIt) {
  std::ostringstream out;
  Loop loop = trainer(linear_model(), mse, local_sgd(0.05),
                      {.output = &out, .progress = ProgressMode::lines});
  loop.terminate_on_nan();
  std::vector<std::string> seen;  // a handler attached after it
  loop.handle(Event::iteration_completed, [&](LoopState& s) {
    seen.push_back(label(s.event, s));
    return HandlerResult::continue_;
  });
  LoopState s = loop.run(poisoned(0, 1, std::numeric_limits<float>::quiet_NaN()), {.epochs = 3});
  EXPECT_TRUE(s.halted);
  EXPECT_EQ(s.halt_reason, "the loss is nan at epoch 1, iteration 2 (step 2)");
  EXPECT_TRUE(std::isnan(s.batch.loss));
  EXPECT_EQ(s.total_iterations, 2);
  ASSERT_EQ(s.history.size(), 1u);
  // The halting handler ends the event: the one after it saw only the first batch.
  EXPECT_EQ(seen, std::vector<std::string>{"iteration_completed 0:1"});
  EXPECT_THAT(out.str(), HasSubstr("(halted: the loss is nan at epoch 1, iteration 2 (step 2))"));
}

TEST(TerminateOnNan, NamesTheStepOfALaterEpochAndInfiniteLosses) {
  Loop loop = quiet_trainer();
  loop.terminate_on_nan();
  // A target of 1e30: its square overflows f32, so the loss is +inf, not NaN.
  LoopState s = loop.run(poisoned(1, 2, 1e30f, /*in_target=*/true), {.epochs = 3});
  EXPECT_TRUE(s.halted);
  EXPECT_EQ(s.halt_reason, "the loss is inf at epoch 2, iteration 3 (step 6)");
  EXPECT_EQ(s.train.step, 6);
  EXPECT_EQ(s.history.size(), 2u);
}

TEST(TerminateOnNan, FiniteLossesRunToTheEndAndWithoutItNanTrainsOn) {
  Loop guarded = quiet_trainer();
  guarded.terminate_on_nan();
  LoopState clean = guarded.run(make_batches(3), {.epochs = 2});
  EXPECT_FALSE(clean.halted);
  EXPECT_TRUE(clean.halt_reason.empty());
  EXPECT_EQ(clean.total_iterations, 6);

  // Without the handler the NaN reaches the parameters and every later loss.
  LoopState s =
      quiet_trainer().run(poisoned(0, 0, std::numeric_limits<float>::quiet_NaN()), {.epochs = 2});
  EXPECT_FALSE(s.halted);
  EXPECT_EQ(s.total_iterations, 6);
  EXPECT_TRUE(std::isnan(s.batch.loss));
}

TEST(TerminateOnNan, ACheckpointAttachedAfterItNeverSavesTheNanIteration) {
  std::string path = ::testing::TempDir() + "/glia_nan_checkpoint.h5";
  std::remove(path.c_str());
  Loop loop = quiet_trainer();
  loop.terminate_on_nan();
  loop.checkpoint({.path = path, .event = Event::iteration_completed});
  LoopState s = loop.run(poisoned(0, 2, std::numeric_limits<float>::infinity()), {.epochs = 1});
  EXPECT_TRUE(s.halted);
  // The last save was after the second batch, whose loss was finite.
  Checkpoint c = load_checkpoint(path);
  EXPECT_EQ(c.loop.train.step, 2);
  EXPECT_EQ(c.loop.total_iterations, 2);
  std::remove(path.c_str());
}

}  // namespace
}  // namespace glia
