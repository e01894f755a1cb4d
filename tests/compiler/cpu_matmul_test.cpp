// The `cpu` backend's oneDNN matmuls against the interpreter: odd sizes, transposed and
// batched operands, folded axes, the cases left to the reference kernel, and an MLP's
// forward and backward pass; then compile options, input checks, describe() and
// concurrent runs of one executable.
#include <string>
#include <thread>
#include <tuple>

#include "compiler/cpu_test_util.hpp"
#include "glia/autograd/grad.hpp"

namespace glia::testing {
namespace {

using ::testing::HasSubstr;

// Matmul kernels of the program (oneDNN's, or glia's small one for tiny products).
int matmul_steps(const Executable& exe) { return count_kernels(exe, "matmul"); }

// One dot_general of a and b (seeded f32 in [-1, 1)) with these attributes.
Graph dot_graph(const Shape& a, const Shape& b, const Ints& ca, const Ints& cb, const Ints& ba = {},
                const Ints& bb = {}) {
  return trace(
      [&](const std::vector<Expr>& in) {
        return std::vector<Expr>{dot_general(in[0], in[1], ca, cb, ba, bb)};
      },
      {{f32, a}, {f32, b}}, "dot");
}

// The graph on its parameters' types filled with seeded values; checks cpu == interp.
std::unique_ptr<Executable> check_graph(const Graph& g, unsigned seed = 1) {
  std::vector<Tensor> inputs;
  for (ValueId p : g.parameters())
    inputs.push_back(seeded(g.type(p).shape, g.type(p).dtype, -1, 1, seed++));
  return expect_cpu_matches_interp(g, inputs, 1e-5, 1e-5);
}

class CpuMatmulSizes
    : public ::testing::TestWithParam<std::tuple<std::int64_t, std::int64_t, std::int64_t>> {};

TEST_P(CpuMatmulSizes, MatchesInterp) {
  GLIA_REQUIRE_CPU_BACKEND();
  auto [m, k, n] = GetParam();
  auto exe = check_graph(dot_graph({m, k}, {k, n}, {1}, {0}));
  EXPECT_EQ(matmul_steps(*exe), 1);
  EXPECT_EQ(matmul_dims(only_matmul(*exe)), cat(m, "x", k, "x", n));
}

INSTANTIATE_TEST_SUITE_P(OddSizes, CpuMatmulSizes,
                         ::testing::Combine(::testing::Values(1, 3, 17, 33),
                                            ::testing::Values(1, 3, 17, 33),
                                            ::testing::Values(1, 3, 17, 33)));

TEST(CpuMatmul, TransposedOperands) {
  GLIA_REQUIRE_CPU_BACKEND();
  const std::int64_t m = 17, k = 33, n = 3;
  for (bool lhs_t : {false, true})
    for (bool rhs_t : {false, true}) {
      SCOPED_TRACE(cat("lhs transposed ", lhs_t, ", rhs transposed ", rhs_t));
      Shape a = lhs_t ? Shape{k, m} : Shape{m, k};
      Shape b = rhs_t ? Shape{n, k} : Shape{k, n};
      auto exe = check_graph(dot_graph(a, b, {lhs_t ? 0 : 1}, {rhs_t ? 1 : 0}));
      EXPECT_EQ(matmul_steps(*exe), 1);
    }
}

TEST(CpuMatmul, Batched) {
  GLIA_REQUIRE_CPU_BACKEND();
  // Two leading batch axes.
  EXPECT_EQ(
      matmul_steps(*check_graph(dot_graph({2, 3, 17, 5}, {2, 3, 5, 33}, {3}, {2}, {0, 1}, {0, 1}))),
      1);
  // Batch axes in the middle and transposed matrices: strides express them.
  EXPECT_EQ(matmul_steps(*check_graph(dot_graph({5, 4, 3}, {4, 6, 5}, {0}, {2}, {1}, {0}))), 1);
  EXPECT_EQ(matmul_steps(*check_graph(dot_graph({4, 5, 3}, {6, 4, 5}, {1}, {2}, {0}, {1}))), 1);
  // numpy matmul broadcasting its batch axes: broadcast nodes, then a batched dot.
  Graph g =
      trace([](const std::vector<Expr>& in) { return std::vector<Expr>{matmul(in[0], in[1])}; },
            {{f32, {4, 1, 3, 7}}, {f32, {5, 7, 2}}}, "matmul");
  auto exe = check_graph(g);
  EXPECT_EQ(matmul_steps(*exe), 1);
  EXPECT_EQ(matmul_dims(only_matmul(*exe)), "4 x 5 x 3x7x2");
}

TEST(CpuMatmul, FoldsFreeAndContractingAxes) {
  GLIA_REQUIRE_CPU_BACKEND();
  // lhs free axes (2, 5) fold into M = 10, rhs free axes (3, 2) into N = 6.
  auto exe = check_graph(dot_graph({2, 5, 6}, {6, 3, 2}, {2}, {0}));
  EXPECT_EQ(matmul_dims(only_matmul(*exe)), "10x6x6");
  EXPECT_EQ(only_matmul(*exe).lhs_strides, (std::vector<std::int64_t>{6, 1}));
  EXPECT_EQ(only_matmul(*exe).rhs_strides, (std::vector<std::int64_t>{6, 1}));
  // Two contracting axes in memory order fold into K = 6.
  exe = check_graph(dot_graph({4, 3, 2}, {3, 2, 5}, {1, 2}, {0, 1}));
  EXPECT_EQ(matmul_dims(only_matmul(*exe)), "4x6x5");
  // Vectors: M = N = 1.
  exe = check_graph(dot_graph({5}, {5}, {0}, {0}));
  EXPECT_EQ(matmul_dims(only_matmul(*exe)), "1x5x1");
  exe = check_graph(dot_graph({3, 5}, {5}, {1}, {0}));
  EXPECT_EQ(matmul_dims(only_matmul(*exe)), "3x5x1");
  // A transposed rhs is read through its strides: [n, k] as [k, n] with strides (1, k).
  exe = check_graph(dot_graph({3, 5}, {4, 5}, {1}, {1}));
  EXPECT_EQ(only_matmul(*exe).rhs_strides, (std::vector<std::int64_t>{1, 5}));
}

TEST(CpuMatmul, OtherCasesRunTheReferenceKernel) {
  GLIA_REQUIRE_CPU_BACKEND();
  // Contracting axes against memory order on the lhs: no single stride for K.
  auto exe = check_graph(dot_graph({4, 3, 2}, {2, 3, 5}, {2, 1}, {0, 1}));
  EXPECT_EQ(matmul_steps(*exe), 0);
  EXPECT_TRUE(on_reference(*exe, Op::dot_general));
  // Other dtypes.
  for (DType t : {f64, i32, bf16}) {
    Graph g =
        trace([](const std::vector<Expr>& in) { return std::vector<Expr>{dot(in[0], in[1])}; },
              {{t, {3, 4}}, {t, {4, 2}}}, "typed");
    exe = check_graph(g);
    EXPECT_EQ(matmul_steps(*exe), 0) << dtype_name(t);
  }
  // Zero sizes: an empty result, and an empty contraction that sums to zeros.
  exe = check_graph(dot_graph({0, 3}, {3, 4}, {1}, {0}));
  EXPECT_EQ(matmul_steps(*exe), 0);
  exe = compile_graph(dot_graph({2, 0}, {0, 3}, {1}, {0}), "cpu");
  std::vector<Tensor> empty{Tensor(f32, {2, 0}), Tensor(f32, {0, 3})};
  expect_tensor(exe->run(empty)[0], f32, {2, 3}, V(6, 0.0));
}

// A two-layer MLP's loss and its gradients: every dot_general, forward and backward,
// runs on oneDNN.
TEST(CpuMatmul, MlpForwardAndBackward) {
  GLIA_REQUIRE_CPU_BACKEND();
  Graph g = trace(
      [](const std::vector<Expr>& in) {
        const Expr &x = in[0], &y = in[1], &w1 = in[2], &b1 = in[3], &w2 = in[4], &b2 = in[5];
        Expr h = relu(dot(x, w1) + b1);
        Expr logits = dot(h, w2) + b2;
        Expr loss = -mean(sum(y * log_softmax(logits), {1}));
        std::vector<Expr> out{loss};
        for (const Expr& d : gradients(loss, {w1, b1, w2, b2})) out.push_back(d);
        return out;
      },
      {{f32, {17, 20}},
       {f32, {17, 10}},
       {f32, {20, 33}},
       {f32, {33}},
       {f32, {33, 10}},
       {f32, {10}}},
      "mlp");
  std::vector<Tensor> inputs{seeded({17, 20}, f32, -1, 1, 1),     seeded({17, 10}, f32, 0, 1, 2),
                             seeded({20, 33}, f32, -0.3, 0.3, 3), seeded({33}, f32, -0.1, 0.1, 4),
                             seeded({33, 10}, f32, -0.3, 0.3, 5), seeded({10}, f32, -0.1, 0.1, 6)};
  auto exe = expect_cpu_matches_interp(g, inputs, 1e-5, 1e-6);
  int dots = count_ops(g, Op::dot_general);
  EXPECT_GE(dots, 5);  // 2 forward; dW2, dh, dW1 backward
  EXPECT_EQ(matmul_steps(*exe), dots);
  EXPECT_FALSE(on_reference(*exe, Op::dot_general));
  // The arena reuses the bytes of values that are dead: smaller than all the values the
  // kernels pass each other, laid end to end.
  const MemoryPlan& plan = exe->memory_plan();
  std::int64_t intermediates = 0;
  for (std::int64_t v = 0; v < g.size(); ++v)
    if (plan.offsets[static_cast<std::size_t>(v)] >= 0)
      intermediates += g.type(static_cast<ValueId>(v)).shape.numel() * 4;
  EXPECT_GE(plan.value_count, 3);
  EXPECT_GT(plan.arena_bytes, 0);
  EXPECT_LT(plan.arena_bytes, intermediates);
}

// ---- The executable around the steps -------------------------------------------------

Graph add_dot_graph() {
  return trace(
      // subtract: no epilogue takes it, so the product stays a value of the arena.
      [](const std::vector<Expr>& in) { return std::vector<Expr>{dot(in[0], in[1]) - 1.0}; },
      {{f32, {33, 33}}, {f32, {33, 33}}}, "add_dot");
}

TEST(CpuBackend, IsRegisteredAndSupportsEveryOp) {
  GLIA_REQUIRE_CPU_BACKEND();
  const Backend& cpu = backend("cpu");
  EXPECT_EQ(cpu.name(), "cpu");
  EXPECT_EQ(&cpu, &backend("cpu"));
  for (int op = 0; op < kOpCount; ++op) EXPECT_TRUE(cpu.supports(static_cast<Op>(op)));
}

TEST(CpuBackend, VerifiesWhenAsked) {
  GLIA_REQUIRE_CPU_BACKEND();
  Graph broken("broken");
  auto x = broken.add_parameter({f32, {3}});
  broken.set_outputs({broken.append(Node{Op::exp, {x}, NoAttrs{}, {f64, {3}}})});
  EXPECT_GLIA_ERROR(compile_graph(broken, "cpu"), "verify");
  EXPECT_GLIA_ERROR(backend("cpu").compile(broken, {}), "verify");
  EXPECT_NE(backend("cpu").compile(broken, {.verify = false}), nullptr);
  EXPECT_GLIA_ERROR(compile_graph(add_dot_graph(), "cpu", {.cpu = {.threads = -1}}),
                    "threads must be >= 0");
}

TEST(CpuBackend, ThreadsOption) {
  GLIA_REQUIRE_CPU_BACKEND();
  Graph g = add_dot_graph();
  std::vector<Tensor> in{seeded({33, 33}, f32, -1, 1, 1), seeded({33, 33}, f32, -1, 1, 2)};
  Tensor want = compile_graph(g, "interp")->run(in)[0];
  for (int threads : {0, 1, 2}) {
    auto exe = compile_graph(g, "cpu", {.cpu = {.threads = threads}});
    EXPECT_TRUE(allclose(exe->run(in)[0], want, 1e-5, 1e-5)) << threads;
    EXPECT_THAT(exe->describe(),
                HasSubstr(threads == 0 ? "threads: default" : cat("threads: ", threads)));
  }
}

TEST(CpuBackend, RunChecksInputs) {
  GLIA_REQUIRE_CPU_BACKEND();
  auto exe = compile_graph(add_dot_graph(), "cpu");
  EXPECT_GLIA_ERROR(exe->run(std::vector<Tensor>{Tensor(f32, {33, 33})}),
                    "takes 2 input(s), got 1");
  EXPECT_GLIA_ERROR(exe->run(std::vector<Tensor>{Tensor(f32, {33, 33}), Tensor(f64, {33, 33})}),
                    "input 1 expected f32[33][33], got f64[33][33]");
  EXPECT_GLIA_ERROR(exe->run(std::vector<Tensor>{Tensor(f32, {33, 33}), Tensor()}), "undefined");
}

TEST(CpuBackend, DescribeListsStepsAndMemoryPlan) {
  GLIA_REQUIRE_CPU_BACKEND();
  Graph g = add_dot_graph();
  auto exe = compile_graph(g, "cpu");
  std::string text = exe->describe();
  EXPECT_THAT(text, HasSubstr("cpu executable"));
  EXPECT_THAT(text, HasSubstr("program 'add_dot'"));
  EXPECT_THAT(text, HasSubstr("1 matmul"));
  EXPECT_THAT(text, HasSubstr("%0 = input 0 : f32[33][33]"));
  EXPECT_THAT(text, HasSubstr("%2 = matmul [33x33]·[33x33] : f32[33][33] @arena+0 -> onednn ("));
  // Only the product lives in the arena (the sum is the output): 33 * 33 * 4 = 4356 B,
  // rounded up to the 64-byte alignment.
  EXPECT_EQ(exe->memory_plan().arena_bytes, 4416);
  EXPECT_EQ(exe->memory_plan().offsets.at(2), 0);
  EXPECT_THAT(text, HasSubstr("arena: 4416 B for 1 values"));
  EXPECT_THAT(text, HasSubstr("graph add_dot("));
}

TEST(CpuBackend, ParameterOutputsAreTheInputs) {
  GLIA_REQUIRE_CPU_BACKEND();
  Graph g("pass");
  auto x = g.add_parameter({f32, {2}});
  g.set_outputs({x, g.add(Op::neg, {x})});
  Tensor in = Tensor::from<float>({1, -2});
  auto out = compile_graph(g, "cpu")->run(std::vector<Tensor>{in});
  EXPECT_TRUE(out[0].shares_storage_with(in));
  expect_tensor(out[1], f32, {2}, {-1, 2});
}

// Runs share no scratch memory: concurrent runs of one executable all get the result
// of a lone run.
TEST(CpuBackend, ConcurrentRuns) {
  GLIA_REQUIRE_CPU_BACKEND();
  auto exe = compile_graph(add_dot_graph(), "cpu");
  std::vector<Tensor> in{seeded({33, 33}, f32, -1, 1, 1), seeded({33, 33}, f32, -1, 1, 2)};
  Tensor want = exe->run(in)[0];
  std::vector<int> mismatches(4, 0);
  std::vector<std::thread> workers;
  for (std::size_t t = 0; t < mismatches.size(); ++t)
    workers.emplace_back([&, t] {
      for (int i = 0; i < 20; ++i) mismatches[t] += !equal(exe->run(in)[0], want);
    });
  for (auto& w : workers) w.join();
  EXPECT_EQ(mismatches, std::vector<int>(4, 0));
}

}  // namespace
}  // namespace glia::testing
