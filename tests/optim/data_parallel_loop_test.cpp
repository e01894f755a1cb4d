// The training loop over a communicator of threads (no MPI): sharded batches, rank 0
// alone printing and writing checkpoints, global histories, and resume on as many ranks.
#include <gtest/gtest.h>

#include <sstream>

#include "expect_error.hpp"
#include "optim/data_parallel_util.hpp"
#include "optim/thread_group.hpp"

namespace glia::testing {
namespace {

struct RankRun {
  std::string progress, log;
  LoopState state;
};

TEST(DataParallelLoop, RankZeroPrintsAndSavesTheSameRun) {
  TempDir dir;
  Dataset data = synthetic_classes(90, 1);
  std::vector<RankRun> runs(2);
  run_ranks(2, [&](int rank, std::shared_ptr<Communicator> comm) {
    std::ostringstream out, log;
    Loop loop = rank_trainer(comm, out);
    loop.log(log, Filter::every(1));
    loop.checkpoint({.path = dir.file("run_" + std::to_string(rank) + ".h5")});
    runs[std::size_t(rank)].state = loop.run(shards_of(data, rank, 2), {.epochs = 2});
    runs[std::size_t(rank)].progress = out.str();
    runs[std::size_t(rank)].log = log.str();
  });
  EXPECT_NE(runs[0].progress, "");
  EXPECT_NE(runs[0].log.find("Epoch 2, iteration 6"), std::string::npos) << runs[0].log;
  EXPECT_EQ(runs[1].progress, "");
  EXPECT_EQ(runs[1].log, "");
  EXPECT_TRUE(std::filesystem::exists(dir.file("run_0.h5")));
  EXPECT_FALSE(std::filesystem::exists(dir.file("run_1.h5")));
  // 90 examples in batches of 16: 5 whole and one of 10, every example counted once.
  for (const RankRun& r : runs) {
    EXPECT_EQ(r.state.samples, 180);
    EXPECT_EQ(r.state.total_iterations, 12);
    EXPECT_EQ(r.state.world_size, 2);
  }
  EXPECT_EQ(runs[0].state.history, runs[1].state.history);
  expect_same(runs[0].state.train, runs[1].state.train);
  Checkpoint saved = load_checkpoint(dir.file("run_0.h5"));
  EXPECT_EQ(saved.loop.world_size, 2);
  EXPECT_EQ(saved.config.count("processes"), 0u);  // the CLI's config, not the loop's
  expect_same(saved.loop.train, runs[0].state.train);
}

TEST(DataParallelLoop, ResumesOnTwoRanksAsIfNeverStopped) {
  TempDir dir;
  Dataset data = synthetic_classes(90, 2);
  const std::string path = dir.file("epoch1.h5");
  std::vector<LoopState> whole(2), resumed(2);
  run_ranks(2, [&](int rank, std::shared_ptr<Communicator> comm) {
    std::ostringstream out;
    Loop loop = rank_trainer(comm, out);
    loop.checkpoint({.path = path, .filter = Filter::once(1)});
    whole[std::size_t(rank)] = loop.run(shards_of(data, rank, 2), {.epochs = 3});
  });
  run_ranks(2, [&](int rank, std::shared_ptr<Communicator> comm) {
    comm->barrier();  // rank 0 wrote the file in the run before
    std::ostringstream out;
    resumed[std::size_t(rank)] = rank_trainer(comm, out).resume(
        shards_of(data, rank, 2), {.epochs = 3}, load_checkpoint(path).loop);
  });
  for (int r = 0; r < 2; ++r) {
    expect_same(whole[std::size_t(r)].train, resumed[std::size_t(r)].train);
    EXPECT_EQ(whole[std::size_t(r)].history, resumed[std::size_t(r)].history);
  }
  // One process cannot continue a two-process run, nor two a one-process run.
  std::ostringstream out;
  expect_error_parts(
      [&] {
        rank_trainer(nullptr, out)
            .resume(Batches(data, {.batch_size = 16}), {.epochs = 3}, load_checkpoint(path).loop);
      },
      {"saved by a run on 2 process(es) and this one has 1", "mpirun -np 2"});
  LoopState single = load_checkpoint(path).loop;
  single.world_size = 1;
  expect_error(
      [&] {
        run_ranks(2, [&](int rank, std::shared_ptr<Communicator> comm) {
          std::ostringstream quiet;
          rank_trainer(comm, quiet).resume(shards_of(data, rank, 2), {.epochs = 3}, single);
        });
      },
      "saved by a run on 1 process(es) and this one has 2");
}

TEST(DataParallelLoop, ShardsMustMatchTheCommunicator) {
  Dataset data = synthetic_classes(40, 3);
  expect_error_parts(
      [&] {
        run_ranks(2, [&](int rank, std::shared_ptr<Communicator> comm) {
          std::ostringstream out;
          rank_trainer(comm, out).run(shards_of(data, rank, 3), {.epochs = 1});
        });
      },
      {"cut into 3 shard(s) but the communicator has 2", ".shards = 2"});
}

// A sharded evaluation gives the metrics of the whole data, batch by batch.
TEST(DataParallelLoop, ShardedEvaluationIsGlobal) {
  Dataset data = synthetic_classes(50, 4);
  Model model = small_classifier();
  ModelState state = build(model, {.backend = "cpu"}).init(9);
  auto eval = [&](const std::shared_ptr<Communicator>& comm) {
    return evaluator(model, {.backend = "cpu",
                             .metrics = {{"accuracy", accuracy}},
                             .loss = cross_entropy,
                             .progress = ProgressMode::off,
                             .communicator = comm});
  };
  LoopState one =
      eval(nullptr).run(Batches(data, {.batch_size = 20}), {}, TrainState{.model = state});
  std::vector<LoopState> ranks(2);
  run_ranks(2, [&](int rank, std::shared_ptr<Communicator> comm) {
    ranks[std::size_t(rank)] =
        eval(comm).run(Batches(data, {.batch_size = 20, .shard = rank, .shards = 2}), {},
                       TrainState{.model = state});
  });
  for (const LoopState& r : ranks) {
    EXPECT_NEAR(r.history.back().at("loss"), one.history.back().at("loss"), 1e-6);
    EXPECT_NEAR(r.history.back().at("accuracy"), one.history.back().at("accuracy"), 1e-6);
    EXPECT_EQ(r.samples, 50);
  }
}

}  // namespace
}  // namespace glia::testing
