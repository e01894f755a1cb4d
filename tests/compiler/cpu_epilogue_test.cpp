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
    std::string text;
    std::function<Expr(const Expr&)> activation;
  };
  for (const Case& c :
       std::vector<Case>{{"+ bias, relu", [](const Expr& v) { return relu(v); }},
                         {"+ bias, tanh", [](const Expr& v) { return tanh(v); }},
                         {"+ bias, logistic", [](const Expr& v) { return logistic(v); }},
                         {"+ bias", [](const Expr& v) { return v; }}}) {
    SCOPED_TRACE(c.text);
    Graph g = dense_graph(
        [&](const Expr& pre, const Expr&) { return std::vector<Expr>{c.activation(pre)}; });
    auto exe = expect_cpu_matches_interp(g, seeded_inputs(g), 1e-5, 1e-6);
    std::string text = exe->describe();
    EXPECT_THAT(text, HasSubstr("small matmul [7x12]·[12x5] +"));
    EXPECT_THAT(text, HasSubstr("] " + c.text + " :"));
    EXPECT_THAT(text, HasSubstr("kernel(s): 1 small"));
  }
}

TEST(CpuEpilogue, ResidualAdd) {
  GLIA_REQUIRE_CPU_BACKEND();
  Graph g =
      dense_graph([](const Expr& pre, const Expr& r) { return std::vector<Expr>{relu(pre + r)}; });
  auto exe = expect_cpu_matches_interp(g, seeded_inputs(g), 1e-5, 1e-6);
  EXPECT_THAT(exe->describe(), HasSubstr("+ bias, residual, relu :"));
  EXPECT_THAT(exe->describe(), HasSubstr("kernel(s): 1 small"));
}

TEST(CpuEpilogue, StopsAtAValueWithAnotherReader) {
  GLIA_REQUIRE_CPU_BACKEND();
  // The pre-activation is an output too: the bias fuses, relu does not.
  Graph g = dense_graph([](const Expr& pre, const Expr&) {
    return std::vector<Expr>{relu(pre), pre};
  });
  auto exe = expect_cpu_matches_interp(g, seeded_inputs(g), 1e-5, 1e-6);
  std::string text = exe->describe();
  EXPECT_THAT(text, HasSubstr("[12x5] + bias :"));
  EXPECT_THAT(text, Not(HasSubstr("relu")));
  EXPECT_THAT(text, HasSubstr("fused[broadcast max]"));
  // The product itself read twice: no epilogue at all.
  Graph twice = trace(
      [](const std::vector<Expr>& in) {
        Expr y = dot(in[0], in[1]);
        return std::vector<Expr>{y + broadcast(in[2], {7, 5}, {1}), exp(y)};
      },
      {{f32, {7, 12}}, {f32, {12, 5}}, {f32, {5}}}, "twice");
  exe = expect_cpu_matches_interp(twice, seeded_inputs(twice), 1e-5, 1e-6);
  EXPECT_THAT(exe->describe(), Not(HasSubstr("bias")));
  EXPECT_THAT(exe->describe(), HasSubstr("fused[broadcast add]"));
  // With gradients: relu's derivative reads the pre-activation, so only the bias fuses.
  Graph grad = trace(
      [](const std::vector<Expr>& in) {
        Expr h = relu(dot(in[0], in[1]) + broadcast(in[2], {7, 5}, {1}));
        Expr loss = sum(h * h);
        return gradients(loss, {in[1], in[2]});
      },
      {{f32, {7, 12}}, {f32, {12, 5}}, {f32, {5}}}, "grad");
  exe = expect_cpu_matches_interp(grad, seeded_inputs(grad), 1e-4, 1e-5);
  EXPECT_THAT(exe->describe(), HasSubstr("[12x5] + bias :"));
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
  EXPECT_THAT(exe->describe(), HasSubstr("+ bias, residual, relu"));
  EXPECT_THAT(exe->describe(), HasSubstr("kernel(s): 1 onednn"));
}

}  // namespace
}  // namespace glia::testing
