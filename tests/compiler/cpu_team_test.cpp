// The cpu backend's spinning team (backends/cpu/spin_team.hpp): an executable whose
// kernels all stay off OpenMP (glia's small matmul, fused sweeps compiled or on the tile
// executor) splits its parallel loops between the calling thread and glia's helper
// threads; one with a oneDNN kernel keeps OpenMP. Parts are fixed ranges whichever thread
// takes them, so repeated runs give the same bits, whole-array sums included.
#include <chrono>
#include <cstring>
#include <thread>

#include "compiler/cpu_test_util.hpp"

namespace glia::testing {
namespace {

constexpr const char* kOnTeam = "parallel loops on glia's spinning team";

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.type() == b.type() && std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) == 0;
}

// A row product wide enough to split its columns (784 x 256 multiply-adds), a sum over
// 2^18 exponentials (a whole-array reduction: each part's partial sums merged in part
// order) and an element-wise sweep as large.
Graph team_graph() {
  return trace(
      [](const std::vector<Expr>& in) {
        Expr product = relu(dot_general(in[0], in[1], {1}, {0}, {}, {}));
        Expr sum = glia::sum(exp(in[2] * 0.5), {0});
        return std::vector<Expr>{product, sum, in[2] * 3.0 + 1.0};
      },
      {{f32, {1, 784}}, {f32, {784, 256}}, {f32, {1 << 18}}}, "team");
}

std::unique_ptr<Executable> compile_on_threads(const Graph& g, int threads,
                                               CompileOptions::Cpu::Fused fused) {
  CompileOptions options;
  options.cpu.threads = threads;
  options.cpu.fused = fused;
  return compile_graph(g, "cpu", options);
}

void expect_team_runs_match_interp(CompileOptions::Cpu::Fused fused) {
  Graph g = team_graph();
  std::vector<Tensor> inputs = seeded_inputs(g, 3);
  // Four parts on this 2-core machine: three helpers, more threads than cores.
  auto exe = compile_on_threads(g, 4, fused);
  EXPECT_NE(exe->describe().find(kOnTeam), std::string::npos) << exe->describe();
  EXPECT_NE(exe->describe().find("columns split between threads"), std::string::npos)
      << exe->describe();
  std::vector<Tensor> want = compile_graph(g, "interp")->run(inputs);
  std::vector<Tensor> first = exe->run(inputs);
  ASSERT_EQ(first.size(), want.size());
  for (std::size_t i = 0; i < want.size(); ++i)
    EXPECT_TRUE(allclose(first[i], want[i], 1e-5, 1e-5)) << "output " << i;
  // Back to back (helpers spinning) and after pauses long enough for them to sleep.
  for (int r = 0; r < 40; ++r) {
    if (r % 10 == 9) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    std::vector<Tensor> again = exe->run(inputs);
    for (std::size_t i = 0; i < first.size(); ++i)
      ASSERT_TRUE(same_bits(again[i], first[i])) << "run " << r << ", output " << i;
  }
  // One thread: the same products and element-wise values (the sum adds in another order).
  std::vector<Tensor> alone = compile_on_threads(g, 1, fused)->run(inputs);
  EXPECT_TRUE(same_bits(alone[0], first[0]));
  EXPECT_TRUE(same_bits(alone[2], first[2]));
  EXPECT_TRUE(allclose(alone[1], first[1], 1e-6, 0));
}

TEST(CpuTeam, CompiledSweepsAndSmallProductsSplitOnTheTeam) {
  GLIA_REQUIRE_CPU_BACKEND();
  expect_team_runs_match_interp(CompileOptions::Cpu::Fused::automatic);
}

TEST(CpuTeam, TheTileExecutorSplitsItsSweepsOnTheTeam) {
  GLIA_REQUIRE_CPU_BACKEND();
  expect_team_runs_match_interp(CompileOptions::Cpu::Fused::tile);
}

TEST(CpuTeam, ExecutablesWithOneDnnKernelsKeepOpenMP) {
  GLIA_REQUIRE_CPU_BACKEND();
  Graph g = trace(
      [](const std::vector<Expr>& in) {
        return std::vector<Expr>{relu(dot_general(in[0], in[1], {1}, {0}, {}, {}))};
      },
      {{f32, {256, 784}}, {f32, {784, 128}}}, "onednn");
  auto exe = compile_on_threads(g, 2, CompileOptions::Cpu::Fused::automatic);
  EXPECT_EQ(exe->describe().find("-> glia small matmul"), std::string::npos) << exe->describe();
  EXPECT_EQ(exe->describe().find(kOnTeam), std::string::npos) << exe->describe();
  expect_cpu_matches_interp(g, seeded_inputs(g, 5), 1e-4, 1e-4);
}

}  // namespace
}  // namespace glia::testing
