// A Shared block (one set of parameters applied at several places) called for the first
// time from kThreads threads at once: exactly one of them builds the block, and every
// application shares its parameters, as when the calls come one after another.
#include <atomic>
#include <chrono>
#include <cmath>

#include "concurrency/concurrency_util.hpp"
#include "glia/layers.hpp"

namespace glia {
namespace {

using testing::kThreads;
using testing::run_together;

TEST(SharedBlockConcurrency, FirstCallsFromThreadsBuildTheBlockOnce) {
  std::atomic<int> built{0};
  Shared encoder([&built](const Model& x) {
    ++built;
    // Long enough for every other thread to reach the block while this one builds it.
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    return dense(x, 3, {.activation = "tanh"});
  });
  std::vector<Model> inputs, outputs(kThreads);
  for (int t = 0; t < kThreads; ++t) inputs.push_back(input(cat("x", t), {-1, 4}));
  run_together([&](int t) { outputs[std::size_t(t)] = encoder(inputs[std::size_t(t)]); });
  EXPECT_EQ(built.load(), 1);

  Model sum = add(outputs);
  const BuiltModel model = build(sum);
  const ModelState state = model.init(3);
  EXPECT_EQ(state.params.size(), 1u) << "one dense layer's parameters, shared by every call";
  // The same rows into every input: every application gives the first one's values (their
  // sum is rounded once per add).
  std::map<std::string, Tensor> feed;
  const Tensor x = testing::random_f32({2, 4}, 9);
  for (int t = 0; t < kThreads; ++t) feed[cat("x", t)] = x;
  const Tensor y = model.predict(state, feed);
  const BuiltModel one = build(outputs[0]);
  const Tensor first = one.predict(state, {{"x0", x}});
  for (std::int64_t i = 0; i < y.numel(); ++i)
    EXPECT_NEAR(y.element(i), kThreads * first.element(i), 1e-5 * (1 + std::abs(y.element(i))))
        << "element " << i;
}

}  // namespace
}  // namespace glia
