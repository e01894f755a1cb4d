// Data parallelism inside the training step, over a communicator of threads (no MPI):
// each rank steps on its shard of a batch; the gradients are summed in the step graph.
// The figures are checked against an SGD step computed by hand, against one process on
// the whole batch, and across ranks bit for bit.
#include <gtest/gtest.h>

#include <cstring>

#include "expect_error.hpp"
#include "glia/layers/dropout.hpp"
#include "glia/optim/distributed.hpp"
#include "glia/optim/losses.hpp"
#include "glia/optim/optimizers.hpp"
#include "optim/step_test_util.hpp"
#include "optim/thread_group.hpp"

namespace glia::testing {
namespace {

const char* kBackends[] = {"interp", "cpu"};

// Rows [begin, end) of t.
Tensor shard(const Tensor& t, std::int64_t begin, std::int64_t end) {
  return t.rows(begin, end).clone();
}

// The batch split as Batches splits it: shard r of `shards` takes rows
// [n r / shards, n (r + 1) / shards).
std::pair<std::int64_t, std::int64_t> share(std::int64_t n, int r, int shards) {
  return {n * r / shards, n * (r + 1) / shards};
}

bool same_bits(const ParamMap& a, const ParamMap& b) {
  for (const auto& [layer, m] : a)
    for (const auto& [name, t] : m) {
      const Tensor& u = b.at(layer).at(name);
      if (t.nbytes() != u.nbytes() || std::memcmp(t.raw_data(), u.raw_data(), t.nbytes()) != 0)
        return false;
    }
  return true;
}

double max_abs_diff(const ParamMap& a, const ParamMap& b) {
  double d = 0;
  for (const auto& [layer, m] : a)
    for (const auto& [name, t] : m) {
      std::vector<double> u = values(t), v = values(b.at(layer).at(name));
      for (std::size_t i = 0; i < u.size(); ++i) d = std::max(d, std::abs(u[i] - v[i]));
    }
  return d;
}

// dense(2 -> 1), MSE, SGD: one step on 5 examples split 3 + 2 over two ranks must move the
// parameters by -lr times the whole batch's mean gradient, written out here.
TEST(DataParallel, StepIsTheWholeBatchsSgdStep) {
  const std::vector<double> xs = {0.5, -1, 2, 0.25, -1.5, 1, 0.75, 0.5, -0.25, 2};
  const std::vector<double> ys = {1, -2, 0.5, 3, -1};
  Tensor x =
      Tensor::from<float>({0.5f, -1, 2, 0.25f, -1.5f, 1, 0.75f, 0.5f, -0.25f, 2}, Shape{5, 2});
  Tensor y = Tensor::from<float>({1, -2, 0.5f, 3, -1}, Shape{5, 1});
  Model model = dense(input("x", {-1, 2}), 1);
  const double lr = 0.1;
  for (const char* backend : kBackends) {
    SCOPED_TRACE(backend);
    std::vector<ParamMap> before(2), after(2);
    std::vector<double> losses(2);
    run_ranks(2, [&](int rank, std::shared_ptr<Communicator> comm) {
      TrainStep step(model, mse, optimizers::sgd(lr), {.backend = backend, .communicator = comm});
      TrainState s = step.init(3);
      before[std::size_t(rank)] = s.model.params;
      for (auto& [l, m] : before[std::size_t(rank)])
        for (auto& [n, t] : m) t = t.clone();
      auto [b, e] = share(5, rank, 2);
      losses[std::size_t(rank)] = step(s, shard(x, b, e), shard(y, b, e)).loss;
      after[std::size_t(rank)] = s.model.params;
    });
    const ParamMap& p = before[0];
    std::vector<double> w = values(p.at("dense_0").at("kernel"));
    double bias = values(p.at("dense_0").at("bias"))[0];
    double gw0 = 0, gw1 = 0, gb = 0, loss = 0;
    for (int i = 0; i < 5; ++i) {
      double r = xs[2 * i] * w[0] + xs[2 * i + 1] * w[1] + bias - ys[std::size_t(i)];
      loss += r * r / 5;
      gw0 += 2 * r * xs[2 * i] / 5, gw1 += 2 * r * xs[2 * i + 1] / 5, gb += 2 * r / 5;
    }
    for (int rank = 0; rank < 2; ++rank) {
      std::vector<double> w1 = values(after[std::size_t(rank)].at("dense_0").at("kernel"));
      EXPECT_NEAR(w1[0], w[0] - lr * gw0, 1e-6);
      EXPECT_NEAR(w1[1], w[1] - lr * gw1, 1e-6);
      EXPECT_NEAR(values(after[std::size_t(rank)].at("dense_0").at("bias"))[0], bias - lr * gb,
                  1e-6);
      EXPECT_NEAR(losses[std::size_t(rank)], loss, 1e-5);  // the whole batch's loss
    }
  }
}

struct Mlp {
  Model model;
  Tensor x, y;
  explicit Mlp(bool with_dropout, std::int64_t n = 48) {
    Model h = dense(input("x", {-1, 6}), 16, {.activation = "relu"});
    if (with_dropout) h = dropout(h, {.rate = 0.25});
    model = dense(h, 3, {.activation = "softmax"});
    x = seeded_normal({n, 6}, 11);
    std::vector<float> labels;
    std::vector<double> xv = values(x);
    for (std::int64_t i = 0; i < n; ++i) {
      int c = xv[std::size_t(6 * i)] + xv[std::size_t(6 * i + 1)] > 0
                  ? 0
                  : (xv[std::size_t(6 * i + 2)] > 0 ? 1 : 2);
      for (int k = 0; k < 3; ++k) labels.push_back(k == c ? 1.0f : 0.0f);
    }
    y = Tensor::from<float>(labels, Shape{n, 3});
  }
  static Tensor seeded_normal(const Shape& s, unsigned seed) {
    std::vector<float> v(std::size_t(s.numel()));
    unsigned state = seed;
    for (float& f : v) {
      state = state * 1664525u + 1013904223u;
      f = float(int(state >> 9) % 2001 - 1000) / 500.0f;
    }
    return Tensor::from<float>(v, s);
  }
};

Expr xent(const Expr& y, const Expr& p) { return losses::categorical_cross_entropy(y, p); }

// Adam with dropout (each rank its own masks) on 3 ranks: after 8 steps every rank holds
// the same parameters and optimizer state, bit for bit.
TEST(DataParallel, RanksStayBitIdentical) {
  Mlp mlp(/*with_dropout=*/true, 45);
  for (const char* backend : kBackends) {
    SCOPED_TRACE(backend);
    std::vector<TrainState> states(3);
    std::vector<int> collectives(3);
    run_ranks(3, [&](int rank, std::shared_ptr<Communicator> comm) {
      TrainStep step(mlp.model, xent, optimizers::adam(1e-2),
                     {.backend = backend, .communicator = comm});
      TrainState s = step.init(std::uint64_t(rank));  // different on purpose: broadcast fixes it
      broadcast_state(s, *comm);
      for (int k = 0; k < 8; ++k) {
        auto [b, e] = share(15, rank, 3);
        step(s, shard(mlp.x.rows(15 * (k % 3), 15 * (k % 3) + 15), b, e),
             shard(mlp.y.rows(15 * (k % 3), 15 * (k % 3) + 15), b, e));
      }
      states[std::size_t(rank)] = s;
      collectives[std::size_t(rank)] = static_cast<ThreadGroupCommunicator&>(*comm).collectives;
    });
    for (int r = 1; r < 3; ++r) {
      EXPECT_TRUE(same_bits(states[0].model.params, states[std::size_t(r)].model.params)) << r;
      for (const auto& [name, t] : states[0].optimizer)
        EXPECT_EQ(0, std::memcmp(t.raw_data(), states[std::size_t(r)].optimizer.at(name).raw_data(),
                                 t.nbytes()))
            << name;
    }
    // The broadcast's check and bytes aside: two collectives a step (statistics, one
    // gradient bucket of 16 x 6 + 16 + 16 x 3 + 3 floats).
    EXPECT_EQ(collectives[0], 1 + 8 * 2);
  }
}

// Without dropout, 2 ranks on halves of each batch train like one process on the whole
// batch, up to the rounding of the summation's order.
TEST(DataParallel, MatchesOneProcessOnTheWholeBatch) {
  Mlp mlp(/*with_dropout=*/false);
  for (const char* backend : kBackends) {
    SCOPED_TRACE(backend);
    TrainStep single(mlp.model, xent, optimizers::adam(1e-2), {.backend = backend});
    TrainState one = single.init(5);
    std::vector<double> one_losses;
    for (int k = 0; k < 10; ++k)
      one_losses.push_back(single(one, mlp.x.rows(16 * (k % 3), 16 * (k % 3) + 16),
                                  mlp.y.rows(16 * (k % 3), 16 * (k % 3) + 16))
                               .loss);
    std::vector<TrainState> states(2);
    std::vector<std::vector<double>> losses(2);
    run_ranks(2, [&](int rank, std::shared_ptr<Communicator> comm) {
      TrainStep step(mlp.model, xent, optimizers::adam(1e-2),
                     {.backend = backend, .communicator = comm, .bucket_bytes = 256});
      TrainState s = step.init(5);
      for (int k = 0; k < 10; ++k) {
        auto [b, e] = share(16, rank, 2);
        Tensor xb = mlp.x.rows(16 * (k % 3), 16 * (k % 3) + 16);
        Tensor yb = mlp.y.rows(16 * (k % 3), 16 * (k % 3) + 16);
        losses[std::size_t(rank)].push_back(step(s, shard(xb, b, e), shard(yb, b, e)).loss);
      }
      states[std::size_t(rank)] = s;
    });
    EXPECT_LT(max_abs_diff(one.model.params, states[0].model.params), 2e-5);
    EXPECT_TRUE(same_bits(states[0].model.params, states[1].model.params));
    for (int k = 0; k < 10; ++k) {
      EXPECT_NEAR(losses[0][std::size_t(k)], one_losses[std::size_t(k)], 1e-5) << k;
      EXPECT_EQ(losses[0][std::size_t(k)], losses[1][std::size_t(k)]) << k;
    }
  }
}

// Metrics: a mean is weighted by each shard's examples (uneven shards: 7 = 4 + 3), a count
// aggregated as a running sum is summed.
TEST(DataParallel, MetricsAreGlobal) {
  Tensor x = Tensor::from<float>({1, 2, 3, 4, 5, 6, 7}, Shape{7, 1});
  Tensor y = Tensor::from<float>({0, 1, 2, 3, 4, 5, 6}, Shape{7, 1});
  Model model = dense(input("x", {-1, 1}), 1);
  std::vector<StepOutput> out(2);
  run_ranks(2, [&](int rank, std::shared_ptr<Communicator> comm) {
    StepOptions o{.backend = "cpu", .communicator = comm, .summed_metrics = {"rows"}};
    o.metrics = {{"mean_y", [](const Expr& t, const Expr&) { return mean(t); }},
                 {"rows", [](const Expr& t, const Expr&) { return sum(t * 0.0 + 1.0); }}};
    TrainStep step(model, mse, optimizers::sgd(0.0), o);
    TrainState s = step.init(0);
    auto [b, e] = share(7, rank, 2);
    out[std::size_t(rank)] = step(s, shard(x, b, e), shard(y, b, e));
  });
  for (const StepOutput& o : out) {
    EXPECT_DOUBLE_EQ(o.metrics.at("mean_y"), 3.0);  // (0 + ... + 6) / 7
    EXPECT_DOUBLE_EQ(o.metrics.at("rows"), 7.0);
  }
}

TEST(DataParallel, BroadcastStateRefusesDifferentModels) {
  expect_error(
      [] {
        run_ranks(2, [](int rank, std::shared_ptr<Communicator> comm) {
          Model m = dense(input("x", {-1, 2}), rank == 0 ? 3 : 4);
          TrainStep step(m, mse, optimizers::sgd(0.1));
          TrainState s = step.init(0);
          broadcast_state(s, *comm);
        });
      },
      "differ from rank 0");
}

TEST(DataParallel, AllReduceOfAnUnregisteredCommunicatorFails) {
  Graph g("unregistered");
  Expr x(&g, g.add_parameter(TensorType{DType::f32, Shape{2}}, "x"));
  expect_error([&] { (void)all_reduce(x, 0, 0); }, "communicator ids start at 1");
  std::int64_t id = 0;
  {
    auto comm = std::make_shared<LocalCommunicator>();
    id = register_communicator(comm);
    EXPECT_EQ(registered_communicator(id).get(), comm.get());
  }
  expect_error([&] { (void)registered_communicator(id); }, "is not registered");
}

}  // namespace
}  // namespace glia::testing
