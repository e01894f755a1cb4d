// Data-parallel training over MPI, run by mpirun with 2 processes (tests/dist/run_mpi.sh):
// the parameters stay bit-identical across ranks, equal one process training on the whole
// batch up to rounding, and a checkpointed run resumes on 2 ranks as if never stopped.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <sstream>

#include "dist_env.hpp"
#include "expect_error.hpp"
#include "optim/data_parallel_util.hpp"

namespace glia::testing {
namespace {

using dist::world;

const char* kBackends[] = {"interp", "cpu"};

// Rank r's share of rows [begin, begin + n): as Batches cuts it.
Tensor share(const Tensor& t, std::int64_t begin, std::int64_t n) {
  const int r = world().rank(), size = world().size();
  return t.rows(begin + n * r / size, begin + n * (r + 1) / size).clone();
}

// How many ranks hold other bytes than rank 0 for any tensor of the state.
std::int64_t ranks_differing(const TrainState& s) {
  std::int64_t differ = 0;
  auto compare = [&](const Tensor& t) {
    Tensor host = t.to_host();
    differ = std::max(differ, processes_differing(world(), host.raw_data(),
                                                  static_cast<std::int64_t>(host.nbytes())));
  };
  for (const auto* m : {&s.model.params, &s.model.state})
    for (const auto& [layer, tensors] : *m)
      for (const auto& [name, t] : tensors) compare(t);
  for (const auto& [name, t] : s.optimizer) compare(t);
  return differ;
}

TEST(Mpi, WorldHasTwoRanks) {
  EXPECT_EQ(world().size(), 2);
  EXPECT_EQ(world().name(), "mpi");
  EXPECT_TRUE(mpi::available());
  EXPECT_EQ(mpi::launched_rank(), world().rank());
  EXPECT_EQ(mpi::launched_size(), world().size());
  // Sums of every dtype, the same on each rank.
  std::array<float, 3> f{1.5f + float(world().rank()), -2, 0.25f};
  world().all_reduce_sum(f.data(), 3, DType::f32);
  EXPECT_EQ(f, (std::array<float, 3>{4.0f, -4, 0.5f}));
  std::array<std::int64_t, 2> i{world().rank() + 1, std::int64_t{1} << 40};
  world().all_reduce_sum(i.data(), 2, DType::i64);
  EXPECT_EQ(i, (std::array<std::int64_t, 2>{3, std::int64_t{1} << 41}));
}

// 20 Adam steps of global batch 64 with dropout (each rank its own masks): every rank
// ends with rank 0's parameters and optimizer state, bit for bit.
TEST(Mpi, RanksStayBitIdentical) {
  Dataset data = synthetic_classes(64 * 5, 7);
  for (const char* backend : kBackends) {
    SCOPED_TRACE(backend);
    TrainStep step(small_classifier(), cross_entropy, optimizers::adam(1e-2),
                   {.backend = backend, .communicator = dist::session().world()});
    TrainState s = step.init(std::uint64_t(world().rank()));  // rank 0's goes to all
    broadcast_state(s, world());
    for (int k = 0; k < 20; ++k)
      step(s, share(data.x, 64 * (k % 5), 64), share(data.y, 64 * (k % 5), 64));
    EXPECT_EQ(ranks_differing(s), 0);
    EXPECT_EQ(s.step, 20);
  }
}

// Without dropout, two ranks on halves of each batch train like one process on the whole
// batch (every rank checks its own copy), up to the summation order's rounding.
TEST(Mpi, MatchesOneProcessOnTheWholeBatch) {
  Dataset data = synthetic_classes(60 * 4, 8);
  Model model = dense(dense(input("features", {-1, 6}), 8, {.activation = "relu"}), 3,
                      {.activation = "softmax"});
  for (const char* backend : kBackends) {
    SCOPED_TRACE(backend);
    TrainStep one(model, cross_entropy, optimizers::sgd(0.1, 0.9), {.backend = backend});
    TrainStep two(model, cross_entropy, optimizers::sgd(0.1, 0.9),
                  {.backend = backend, .communicator = dist::session().world()});
    TrainState a = one.init(4), b = two.init(4);
    for (int k = 0; k < 12; ++k) {
      Tensor x = data.x.rows(60 * (k % 4), 60 * (k % 4) + 60);
      Tensor y = data.y.rows(60 * (k % 4), 60 * (k % 4) + 60);
      double la = one(a, x, y).loss;
      double lb = two(b, share(data.x, 60 * (k % 4), 60), share(data.y, 60 * (k % 4), 60)).loss;
      EXPECT_NEAR(la, lb, 1e-5) << "step " << k;
    }
    for (const auto& [layer, m] : a.model.params)
      for (const auto& [name, t] : m) {
        std::vector<float> u = t.to_vector<float>(),
                           v = b.model.params.at(layer).at(name).to_vector<float>();
        for (std::size_t i = 0; i < u.size(); ++i)
          EXPECT_NEAR(u[i], v[i], 1e-5) << layer << "/" << name;
      }
  }
}

// A folder every rank names: rank 0's, broadcast.
std::string shared_dir(const TempDir& mine) {
  std::array<char, 512> path{};
  std::strncpy(path.data(), mine.path().c_str(), path.size() - 1);
  world().broadcast(path.data(), path.size(), 0);
  return path.data();
}

Loop world_trainer(std::ostream& out) { return rank_trainer(dist::session().world(), out); }

Batches shard_batches(const Dataset& d) { return shards_of(d, world().rank(), world().size()); }

// Checkpoint after epoch 1 (rank 0 writes it), resume to epoch 3 on both ranks: the same
// state and history as an uninterrupted run; one rank printed; a one-process state or a
// one-process resume is refused.
TEST(Mpi, CheckpointAndResumeOnTwoRanks) {
  TempDir own;
  const std::string dir = shared_dir(own);
  Dataset data = synthetic_classes(100, 9);
  const std::string path = dir + "/epoch1.h5";
  std::ostringstream out;
  Loop whole_loop = world_trainer(out);
  whole_loop.checkpoint({.path = path, .filter = Filter::once(1)});
  whole_loop.checkpoint({.path = dir + "/rank" + std::to_string(world().rank()) + ".h5"});
  LoopState whole = whole_loop.run(shard_batches(data), {.epochs = 3});
  world().barrier();
  EXPECT_EQ(out.str().empty(), world().rank() != 0);
  EXPECT_EQ(std::filesystem::exists(dir + "/rank1.h5"), false);
  EXPECT_EQ(std::filesystem::exists(dir + "/rank0.h5"), true);
  Checkpoint c = load_checkpoint(path);
  EXPECT_EQ(c.loop.world_size, 2);
  std::ostringstream quiet;
  LoopState resumed = world_trainer(quiet).resume(shard_batches(data), {.epochs = 3}, c.loop);
  expect_same(whole.train, resumed.train);
  EXPECT_EQ(whole.history, resumed.history);
  EXPECT_EQ(ranks_differing(resumed.train), 0);
  LoopState single = c.loop;
  single.world_size = 1;
  expect_error([&] { world_trainer(quiet).resume(shard_batches(data), {.epochs = 3}, single); },
               "saved by a run on 1 process(es) and this one has 2");
  world().barrier();  // rank 0's folder outlives every rank's reads
}

}  // namespace
}  // namespace glia::testing
