// Epilogue fusion on the `cpu` backend: a matmul's or convolution's bias add, activation
// and residual add run as oneDNN post-ops in the same kernel, and fusion stops at a value
// something else reads (autograd keeps the pre-activation for relu's gradient).
#include <string>

#include "compiler/cpu_test_util.hpp"
#include "glia/autograd/grad.hpp"

namespace glia::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using Step = EpilogueSpec::Step;

// dot(x, w) + b, then `tail`; x [7, 12], w [12, 5], b [5], r [7, 5].
Graph dense_graph(const std::function<std::vector<Expr>(const Expr& pre, const Expr& r)>& tail) {
  return trace(
      [&](const std::vector<Expr>& in) {
        Expr pre = dot(in[0], in[1]) + broadcast(in[2], {7, 5}, {1});
        return tail(pre, in[3]);
      },
      {{f32, {7, 12}}, {f32, {12, 5}}, {f32, {5}}, {f32, {7, 5}}}, "dense");
}

TEST(CpuEpilogue, MatmulBiasAndActivation) {
  GLIA_REQUIRE_CPU_BACKEND();
  struct Case {
    std::vector<Step> steps;
    std::function<Expr(const Expr&)> activation;
  };
  for (const Case& c :
       std::vector<Case>{{{Step::add, Step::relu}, [](const Expr& v) { return relu(v); }},
                         {{Step::add, Step::tanh}, [](const Expr& v) { return tanh(v); }},
                         {{Step::add, Step::logistic}, [](const Expr& v) { return logistic(v); }},
                         {{Step::add}, [](const Expr& v) { return v; }}}) {
    SCOPED_TRACE(c.steps.size());
    Graph g = dense_graph(
        [&](const Expr& pre, const Expr&) { return std::vector<Expr>{c.activation(pre)}; });
    auto exe = expect_cpu_matches_interp(g, seeded_inputs(g), 1e-5, 1e-6);
    const MatmulSpec& mm = only_matmul(*exe);
    EXPECT_EQ((std::vector<std::int64_t>{mm.m, mm.k, mm.n}), (std::vector<std::int64_t>{7, 12, 5}));
    EXPECT_EQ(mm.epilogue.steps, c.steps);
    ASSERT_EQ(mm.epilogue.operands.size(), 1u);
    EXPECT_TRUE(mm.epilogue.operands[0].bias);
    EXPECT_EQ(mm.epilogue.operands[0].value, 2);   // the bias parameter, not its broadcast
    EXPECT_EQ(exe->program().kernels.size(), 1u);  // everything in one kernel
    EXPECT_THAT(exe->describe(), HasSubstr("glia small matmul"));  // realised by the small kernel
  }
}

TEST(CpuEpilogue, ResidualAdd) {
  GLIA_REQUIRE_CPU_BACKEND();
  Graph g =
      dense_graph([](const Expr& pre, const Expr& r) { return std::vector<Expr>{relu(pre + r)}; });
  auto exe = expect_cpu_matches_interp(g, seeded_inputs(g), 1e-5, 1e-6);
  const MatmulSpec& mm = only_matmul(*exe);
  EXPECT_EQ(mm.epilogue.steps, (std::vector<Step>{Step::add, Step::add, Step::relu}));
  ASSERT_EQ(mm.epilogue.operands.size(), 2u);
  EXPECT_TRUE(mm.epilogue.operands[0].bias);
  EXPECT_FALSE(mm.epilogue.operands[1].bias);
  EXPECT_EQ(mm.epilogue.operands[1].value, 3);  // r, read as [7, 5] row-major
  EXPECT_EQ(mm.epilogue.operands[1].strides, (std::vector<std::int64_t>{5, 1}));
  EXPECT_EQ(exe->program().kernels.size(), 1u);
}

TEST(CpuEpilogue, StopsAtAValueWithAnotherReader) {
  GLIA_REQUIRE_CPU_BACKEND();
  // The pre-activation is an output too: the bias fuses, relu does not.
  Graph g = dense_graph([](const Expr& pre, const Expr&) {
    return std::vector<Expr>{relu(pre), pre};
  });
  auto exe = expect_cpu_matches_interp(g, seeded_inputs(g), 1e-5, 1e-6);
  EXPECT_EQ(only_matmul(*exe).epilogue.steps, (std::vector<Step>{Step::add}));
  EXPECT_EQ(count_kernels(*exe, "fused"), 1);  // relu (max with a broadcast zero)
  // The product itself read twice: no epilogue at all.
  Graph twice = trace(
      [](const std::vector<Expr>& in) {
        Expr y = dot(in[0], in[1]);
        return std::vector<Expr>{y + broadcast(in[2], {7, 5}, {1}), exp(y)};
      },
      {{f32, {7, 12}}, {f32, {12, 5}}, {f32, {5}}}, "twice");
  exe = expect_cpu_matches_interp(twice, seeded_inputs(twice), 1e-5, 1e-6);
  EXPECT_TRUE(only_matmul(*exe).epilogue.empty());
  EXPECT_EQ(count_kernels(*exe, "fused"), 2);  // the bias add, and exp
  // With gradients: relu's derivative reads the pre-activation, so only the bias fuses.
  Graph grad = trace(
      [](const std::vector<Expr>& in) {
        Expr h = relu(dot(in[0], in[1]) + broadcast(in[2], {7, 5}, {1}));
        Expr loss = sum(h * h);
        return gradients(loss, {in[1], in[2]});
      },
      {{f32, {7, 12}}, {f32, {12, 5}}, {f32, {5}}}, "grad");
  exe = expect_cpu_matches_interp(grad, seeded_inputs(grad), 1e-4, 1e-5);
  int with_bias = 0;
  for (const MatmulSpec* mm : exe->program().specs<MatmulSpec>()) {
    if (mm->epilogue.empty()) continue;
    EXPECT_EQ(mm->epilogue.steps, (std::vector<Step>{Step::add}));
    ++with_bias;
  }
  EXPECT_EQ(with_bias, 1);  // the forward product; its gradients' products have none
}

TEST(CpuEpilogue, ConvolutionBiasResidualRelu) {
  GLIA_REQUIRE_CPU_BACKEND();
  Graph g = trace(
      [](const std::vector<Expr>& in) {
        Expr y = conv(in[0], in[1], {.padding_low = {1, 1}, .padding_high = {1, 1}});
        return std::vector<Expr>{relu(y + broadcast(in[2], y.shape(), {1}) + in[3])};
      },
      {{f32, {2, 3, 6, 7}}, {f32, {4, 3, 3, 3}}, {f32, {4}}, {f32, {2, 4, 6, 7}}}, "conv");
  auto exe = expect_cpu_matches_interp(g, seeded_inputs(g), 1e-5, 1e-5);
  ASSERT_EQ(exe->program().kernels.size(), 1u);
  const auto* c = std::get_if<ConvSpec>(&exe->program().kernels[0].spec);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->pass, ConvSpec::Pass::forward);
  EXPECT_EQ(c->epilogue.steps, (std::vector<Step>{Step::add, Step::add, Step::relu}));
  EXPECT_THAT(exe->describe(), HasSubstr("onednn"));
}

}  // namespace
}  // namespace glia::testing
