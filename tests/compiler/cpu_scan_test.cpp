// The cpu backend's loops: one ScanSpec kernel per loop however many of its results are
// used (the forward loop's stored carries, read by the gradient, join its kernel), the
// body compiled as a cpu executable of its own, results equal to the interpreter's, and
// loops through the optimization passes.
#include "compiler/cpu_test_util.hpp"
#include "glia/autograd/grad.hpp"
#include "glia/core/scan.hpp"

namespace glia::testing {
namespace {

using Vs = std::vector<Expr>;

// h' = tanh(h . w + x); outputs h' * 2; loss = sum(outputs^2) + sum(final h); returns the
// loss and its gradients.
Graph rnn_step_graph(std::int64_t batch, std::int64_t length, std::int64_t units) {
  return trace(
      [](const Vs& in) {
        ScanResult r = scan(
            [](const Vs& h, const Vs& x, const Vs& w) {
              Expr next = tanh(dot(h[0], w[0]) + x[0]);
              return ScanResult{{next}, {next * 2.0}};
            },
            {in[0]}, {in[1]}, {in[2]});
        Expr loss = sum(r.outputs[0] * r.outputs[0]) + sum(r.carries[0]);
        Vs out = gradients(loss, {in[0], in[1], in[2]});
        out.insert(out.begin(), loss);
        return out;
      },
      {{f32, {batch, units}}, {f32, {length, batch, units}}, {f32, {units, units}}}, "rnn_step");
}

TEST(CpuScan, OneKernelPerLoopAndResultsMatchTheInterpreter) {
  GLIA_REQUIRE_CPU_BACKEND();
  Graph g = rnn_step_graph(4, 7, 5);
  std::vector<Tensor> inputs = {seeded({4, 5}, f32, -1, 1, 3), seeded({7, 4, 5}, f32, -1, 1, 4),
                                seeded({5, 5}, f32, -0.5, 0.5, 5)};
  auto exe = expect_cpu_matches_interp(g, inputs, 1e-4, 1e-5);
  std::vector<const ScanSpec*> loops = exe->program().specs<ScanSpec>();
  ASSERT_EQ(loops.size(), 2u) << exe->describe();  // forward and reverse
  // The forward loop: final carry, outputs and stored carries in one kernel.
  EXPECT_EQ(loops[0]->results.size(), 3u) << exe->describe();
  EXPECT_EQ(count_text(exe->describe(), "loop over a cpu executable"), 2) << exe->describe();
  EXPECT_TRUE(exe->program().specs<ReferenceSpec>().empty()) << exe->describe();
}

TEST(CpuScan, OptimizedGraphsKeepTheirLoops) {
  GLIA_REQUIRE_CPU_BACKEND();
  Graph g = rnn_step_graph(3, 4, 6);
  std::vector<Tensor> inputs = {seeded({3, 6}, f32, -1, 1, 6), seeded({4, 3, 6}, f32, -1, 1, 7),
                                seeded({6, 6}, f32, -0.5, 0.5, 8)};
  auto exe = compile_graph(g, "cpu");
  std::vector<Tensor> got = exe->run(inputs);
  std::vector<Tensor> want = interpret(g, inputs);
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i)
    EXPECT_TRUE(allclose(got[i], want[i], 1e-4, 1e-5)) << i << "\n" << exe->describe();
  // Run twice: the loop's body executable and arena are reused.
  std::vector<Tensor> again = exe->run(inputs);
  for (std::size_t i = 0; i < got.size(); ++i) EXPECT_TRUE(allclose(again[i], got[i], 0, 0));
}

}  // namespace
}  // namespace glia::testing

namespace glia::testing {
namespace {

// Equal result nodes of one loop, as traced (no CSE): each gets the result's value.
TEST(CpuScan, EqualResultNodesEachGetTheValue) {
  GLIA_REQUIRE_CPU_BACKEND();
  Graph g = trace(
      [](const Vs& in) {
        ScanResult r = scan(
            [](const Vs& c, const Vs& x, const Vs&) {
              return ScanResult{{c[0] + x[0]}, {c[0] * x[0]}};
            },
            {in[0]}, {in[1]}, {});
        Expr again = scan_result({in[0], in[1]}, std::get<ScanAttrs>(r.outputs[0].node().attrs), 1);
        return Vs{r.carries[0], r.outputs[0], again * 2.0};
      },
      {{f32, {3}}, {f32, {4, 3}}});
  auto exe =
      expect_cpu_matches_interp(g, {seeded({3}, f32, -1, 1, 9), seeded({4, 3}, f32, -1, 1, 10)});
  EXPECT_EQ(exe->program().specs<ScanSpec>().size(), 1u) << exe->describe();
}

}  // namespace
}  // namespace glia::testing
