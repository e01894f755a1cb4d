// The cpu backend's spinning team under concurrent runs: kThreads threads run one
// executable whose parallel loops go to glia's helper threads (a split row product, a
// whole-array sum, an element-wise sweep). One run holds the team at a time; the others
// take all their parts themselves. Every result equals one thread's bit for bit: a part
// is the same range of the work whichever thread takes it, and a sum's partials are
// merged in part order.
#include "concurrency/concurrency_util.hpp"
#include "glia/compiler.hpp"

namespace glia {
namespace {

using testing::kThreads;

TEST(TeamConcurrency, RunsSharingTheTeamMatchOneThread) {
  if (!testing::have_backend("cpu")) GTEST_SKIP() << "glia was built without oneDNN";
  Graph g = trace(
      [](const std::vector<Expr>& in) {
        Expr product = relu(dot_general(in[0], in[1], {1}, {0}, {}, {}));
        return std::vector<Expr>{product, sum(exp(in[2] * 0.5), {0}), in[2] * 3.0 + 1.0};
      },
      {{f32, {1, 784}}, {f32, {784, 256}}, {f32, {1 << 17}}}, "team");
  CompileOptions options;
  options.cpu.threads = 2;  // the team's helpers even where OMP_NUM_THREADS=1 (TSan's build)
  auto exe = compile_graph(g, "cpu", options);
  ASSERT_NE(exe->describe().find("glia's spinning team"), std::string::npos) << exe->describe();
  constexpr int kRuns = 40;
  std::vector<std::vector<Tensor>> inputs;
  for (int t = 0; t < kThreads; ++t)
    inputs.push_back({testing::random_f32({1, 784}, 3 * t),
                      testing::random_f32({784, 256}, 3 * t + 1),
                      testing::random_f32({1 << 17}, 3 * t + 2)});
  testing::ThreadedRun run =
      testing::run_rounds(1, kRuns, [&](int t, int) { return exe->run(inputs[std::size_t(t)]); });
  auto alone = compile_graph(g, "cpu", options);
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_EQ(run.changed[std::size_t(t)], 0) << "thread " << t;
    testing::expect_same_bits(run.first[std::size_t(t)][0], alone->run(inputs[std::size_t(t)]),
                              cat("thread ", t));
  }
}

}  // namespace
}  // namespace glia
