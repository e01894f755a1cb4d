// The cpu backend's tier-up under concurrent runs: an executable whose sweeps were too
// small to compile when it was compiled builds them once it has run 1,000 times, while
// kThreads threads keep running it; every result, before, during and after the switch
// from the tile executor to the compiled sweeps, equals one thread's bit for bit.
#include <unistd.h>

#include <filesystem>

#include "concurrency/concurrency_util.hpp"
#include "glia/compiler.hpp"
#include "glia/compiler/aot.hpp"
#include "scoped_env.hpp"

namespace glia {
namespace {

using testing::kThreads;
using testing::run_together;

TEST(TierUpConcurrency, RunsAcrossTheSwitchToCompiledSweepsMatchOneThread) {
  if (!testing::have_backend("cpu")) GTEST_SKIP() << "glia was built without oneDNN";
  if (aot::find_c_compiler().empty()) GTEST_SKIP() << "no C compiler (set CC)";
  // Element-wise, and no product feeding a sum (the compiled loop may contract it into a
  // fused multiply-add), so that the tile executor and the compiled loop agree bit for bit.
  Graph g = trace(
      [](const std::vector<Expr>& in) {
        return std::vector<Expr>{in[0] * 3.0, in[0] - in[1], max(in[0], in[1]) * 0.5};
      },
      {{f32, {3, 7}}, {f32, {3, 7}}}, "tier_up");
  // A cache of its own, so that the tier-up builds its library while the threads run
  // rather than loading one a previous run left.
  const auto dir = std::filesystem::temp_directory_path() / cat("glia_tier_up_", ::getpid());
  std::filesystem::remove_all(dir);
  testing::ScopedEnv cache("GLIA_CPU_CACHE", dir.string());
  auto exe = compile_graph(g, "cpu");
  ASSERT_EQ(exe->describe().find("compiled C"), std::string::npos) << exe->describe();
  constexpr int kRuns = 300;  // kThreads x kRuns crosses the 1,000 runs of the tier-up
  std::vector<std::vector<Tensor>> inputs;
  for (int t = 0; t < kThreads; ++t)
    inputs.push_back({testing::random_f32({3, 7}, 2 * t + 1), testing::random_f32({3, 7}, 2 * t)});
  std::vector<int> mismatches(kThreads, 0);
  std::vector<std::vector<Tensor>> first(kThreads);
  run_together([&](int t) {
    const auto& in = inputs[std::size_t(t)];
    for (int r = 0; r < kRuns; ++r) {
      std::vector<Tensor> out = exe->run(in);
      if (r == 0) first[std::size_t(t)] = out;
      for (std::size_t i = 0; i < out.size(); ++i)
        mismatches[std::size_t(t)] += !testing::same_bits(out[i], first[std::size_t(t)][i]);
    }
  });
  EXPECT_NE(exe->describe().find("compiled C"), std::string::npos) << exe->describe();
  EXPECT_EQ(exe->describe().find("tile executor"), std::string::npos) << exe->describe();
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_EQ(mismatches[std::size_t(t)], 0) << "thread " << t;
    std::vector<Tensor> want = interpret(g, inputs[std::size_t(t)]);
    for (std::size_t i = 0; i < want.size(); ++i)
      EXPECT_TRUE(testing::same_bits(first[std::size_t(t)][i], want[i])) << t << " " << i;
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace glia
