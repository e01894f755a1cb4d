// The `cpu` backend's oneDNN convolutions against the interpreter: forward convolutions
// over strides, padding, dilations, groups, odd sizes and 1-3 spatial axes; the input
// and kernel gradients autograd builds, claimed as convolution_backward_data and
// convolution_backward_weights; channels-last operands read through their transposes;
// and the cases left to other kernels.
#include <map>
#include <string>

#include "compiler/conv_layer_graph.hpp"
#include "compiler/cpu_test_util.hpp"
#include "glia/autograd/grad.hpp"

namespace glia::testing {
namespace {

struct ConvCase {
  std::string name;
  Shape x, k;
  ConvOptions o;
};

std::vector<ConvCase> conv_cases() {
  return {
      {"plain", {2, 3, 9, 9}, {4, 3, 3, 3}, {}},
      {"batch1", {1, 1, 5, 7}, {1, 1, 3, 2}, {}},
      {"strided", {3, 2, 11, 10}, {5, 2, 3, 3}, {.strides = {2, 3}}},
      {"padded", {2, 3, 8, 8}, {4, 3, 3, 3}, {.padding_low = {1, 2}, .padding_high = {1, 0}}},
      {"strided_padded_uneven",
       {2, 3, 10, 9},
       {4, 3, 3, 2},
       {.strides = {2, 2}, .padding_low = {1, 0}, .padding_high = {0, 1}}},
      {"dilated", {2, 3, 12, 12}, {4, 3, 3, 3}, {.kernel_dilation = {2, 3}}},
      {"grouped", {2, 6, 7, 7}, {9, 2, 3, 3}, {.feature_groups = 3}},
      {"depthwise", {2, 4, 6, 6}, {4, 1, 3, 3}, {.feature_groups = 4}},
      {"conv1d", {3, 5, 17}, {7, 5, 4}, {.strides = {2}, .padding_low = {1}, .padding_high = {2}}},
      {"conv3d", {2, 2, 5, 6, 4}, {3, 2, 2, 3, 2}, {.padding_low = {1, 0, 1}}},
      {"odd", {5, 7, 13, 3}, {11, 7, 5, 1}, {.padding_high = {2, 0}}},
  };
}

Graph conv_graph(const ConvCase& c) {
  return trace(
      [&](const std::vector<Expr>& in) { return std::vector<Expr>{conv(in[0], in[1], c.o)}; },
      {{f32, c.x}, {f32, c.k}}, c.name);
}

TEST(CpuConv, ForwardMatchesInterp) {
  GLIA_REQUIRE_CPU_BACKEND();
  for (const ConvCase& c : conv_cases()) {
    SCOPED_TRACE(c.name);
    Graph g = conv_graph(c);
    auto exe = expect_cpu_matches_interp(g, seeded_inputs(g), 1e-5, 1e-5);
    auto convs = exe->program().specs<ConvSpec>();
    ASSERT_EQ(convs.size(), 1u) << exe->describe();
    EXPECT_EQ(convs[0]->pass, ConvSpec::Pass::forward);
    EXPECT_EQ(convs[0]->groups, c.o.feature_groups);
  }
}

// The loss sum(conv(x, k) * w): its gradients are exactly the two backward convolutions.
TEST(CpuConv, BackwardPassesMatchInterp) {
  GLIA_REQUIRE_CPU_BACKEND();
  for (const ConvCase& c : conv_cases()) {
    if (c.o.feature_groups != 1) continue;  // grouped gradients reshape the kernel
    SCOPED_TRACE(c.name);
    Graph forward = conv_graph(c);
    Shape y = forward.type(forward.outputs()[0]).shape;
    Graph g = trace(
        [&](const std::vector<Expr>& in) {
          Expr loss = sum(conv(in[0], in[1], c.o) * in[2]);
          std::vector<Expr> out{loss};
          for (const Expr& d : gradients(loss, {in[0], in[1]})) out.push_back(d);
          return out;
        },
        {{f32, c.x}, {f32, c.k}, {f32, y}}, c.name);
    auto exe = expect_cpu_matches_interp(g, seeded_inputs(g), 1e-4, 1e-4);
    std::map<ConvSpec::Pass, int> passes;
    for (const ConvSpec* s : exe->program().specs<ConvSpec>()) ++passes[s->pass];
    EXPECT_EQ(passes[ConvSpec::Pass::forward], 1) << exe->describe();
    EXPECT_EQ(passes[ConvSpec::Pass::backward_data], 1) << exe->describe();
    EXPECT_EQ(passes[ConvSpec::Pass::backward_weights], 1) << exe->describe();
    EXPECT_FALSE(on_reference(*exe, Op::convolution));
  }
}

// Channels-last data and an HWIO kernel, as the conv layer traces them: the transposes
// become strides, and the bias and relu run as post-ops.
TEST(CpuConv, ChannelsLastWithBiasAndRelu) {
  GLIA_REQUIRE_CPU_BACKEND();
  Graph g = trace(
      [](const std::vector<Expr>& in) {
        return std::vector<Expr>{conv_layer_nhwc(in[0], in[1], in[2])};
      },
      {{f32, {3, 10, 9, 5}}, {f32, {3, 3, 5, 8}}, {f32, {8}}}, "nhwc");
  auto exe = expect_cpu_matches_interp(g, seeded_inputs(g), 1e-5, 1e-5);
  // One kernel: the transposes, the broadcast, the add and the max are all in it.
  ASSERT_EQ(exe->program().kernels.size(), 1u);
  const auto& c = std::get<ConvSpec>(exe->program().kernels[0].spec);
  // NCHW views of the NHWC input and output, and OIHW of the HWIO kernel: strides only.
  EXPECT_EQ(c.src.value, 0);
  EXPECT_EQ(c.src.dims, (std::vector<std::int64_t>{3, 5, 10, 9}));
  EXPECT_EQ(c.src.strides, (std::vector<std::int64_t>{450, 1, 45, 5}));
  EXPECT_EQ(c.weights.value, 1);
  EXPECT_EQ(c.weights.dims, (std::vector<std::int64_t>{8, 5, 3, 3}));
  EXPECT_EQ(c.weights.strides, (std::vector<std::int64_t>{1, 8, 120, 40}));
  EXPECT_EQ(c.dst.dims, (std::vector<std::int64_t>{3, 8, 10, 9}));
  EXPECT_EQ(c.dst.strides, (std::vector<std::int64_t>{720, 1, 72, 8}));
  EXPECT_EQ(c.epilogue.text(), " + bias, relu");
  EXPECT_EQ(c.padding_low, (std::vector<std::int64_t>{1, 1}));
  EXPECT_EQ(c.padding_high, (std::vector<std::int64_t>{1, 1}));
}

bool has_avx512_core() {
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
}

// A channels-last 3x3 layer with 16 channels in and out over 8 x 46 x 46 (39M multiply-adds):
// on AVX-512 its forward pass (bias as Winograd's bias argument, a relu as a post-op) and its
// kernel gradient run Winograd on reordered blocked operands; the input gradient stays direct.
// Winograd rounds differently from a direct sum, within the tolerance of the other passes.
// AVX2 machines run channels-last passes on glia's own Winograd F(2x2, 3x3)
// (cpu_winograd_test.cpp).
TEST(CpuConv, LargeThreeByThreeLayersRunWinograd) {
  GLIA_REQUIRE_CPU_BACKEND();
  const Shape x{8, 46, 46, 16}, k{3, 3, 16, 16}, b{16};
  Graph forward = trace(
      [](const std::vector<Expr>& in) {
        return std::vector<Expr>{conv_layer_nhwc(in[0], in[1], in[2])};
      },
      {{f32, x}, {f32, k}, {f32, b}}, "layer");
  const Shape y = forward.type(forward.outputs()[0]).shape;
  Graph g = trace(
      [](const std::vector<Expr>& in) {
        Expr out = conv_layer_nhwc(in[0], in[1], in[2]);
        std::vector<Expr> outs{out};
        for (const Expr& d : gradients(sum(out * in[3]), {in[0], in[1]})) outs.push_back(d);
        return outs;
      },
      {{f32, x}, {f32, k}, {f32, b}, {f32, y}}, "layer_grads");
  auto exe = expect_cpu_matches_interp(g, seeded_inputs(g), 1e-4, 1e-4);
  const std::string fwd = kernel_line(*exe, "convolution src");
  const std::string data = kernel_line(*exe, "convolution_backward_data");
  const std::string weights = kernel_line(*exe, "convolution_backward_weights");
  ASSERT_FALSE(fwd.empty() || data.empty() || weights.empty()) << exe->describe();
  EXPECT_NE(fwd.find("+ bias"), std::string::npos) << fwd;
  EXPECT_EQ(data.find("wino"), std::string::npos) << data;
  // Alone, the layer's relu joins its bias in the forward pass's epilogue.
  auto alone = expect_cpu_matches_interp(forward, seeded_inputs(forward), 1e-4, 1e-4);
  const std::string fused = kernel_line(*alone, "convolution src");
  EXPECT_NE(fused.find("+ bias, relu"), std::string::npos) << fused;
  if (!has_avx512_core()) {
    if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma"))
      GTEST_SKIP() << "neither AVX-512 nor AVX2: every pass direct";
    // The gradients read the traced graph's NCHW transposes here, which glia's Winograd
    // does not take; optimized, they are channels-last and run on it too.
    for (const std::string& pass : {fused, fwd})
      EXPECT_NE(pass.find("glia winograd F(2x2, 3x3)"), std::string::npos) << pass;
    GTEST_SKIP() << "no AVX-512: the forward passes on glia's Winograd";
  }
  EXPECT_NE(fused.find("jit_wino_4x3"), std::string::npos) << fused;
  EXPECT_NE(fwd.find("jit_wino_4x3"), std::string::npos) << fwd;
  EXPECT_NE(fwd.find("src, weights, dst reordered"), std::string::npos) << fwd;
  EXPECT_NE(weights.find("jit_wino_4x3"), std::string::npos) << weights;
}

// Winograd only where it pays: less work than ~33M multiply-adds, or channels that are not
// multiples of 16, keep the direct algorithm, on the graph's own activation layout where
// blocked ones do not pay either (less work, or one channel in); a 5x5 kernel with 24
// channels out (no Winograd) blocks the activations on AVX2 (8-channel blocks), not on
// AVX-512.
TEST(CpuConv, SmallOrNarrowConvolutionsStayDirect) {
  GLIA_REQUIRE_CPU_BACKEND();
  for (const auto& [x, k] : std::vector<std::pair<Shape, Shape>>{
           {{2, 20, 20, 16}, {3, 3, 16, 16}},     // 2.9M multiply-adds
           {{32, 46, 46, 1}, {3, 3, 1, 32}},      // a first layer: one channel in
           {{4, 46, 46, 16}, {5, 5, 16, 24}}}) {  // 5x5, 24 channels out: 74M
    SCOPED_TRACE(x.to_string() + " " + k.to_string());
    const Shape b{k[3]};
    Graph g = trace(
        [](const std::vector<Expr>& in) {
          return std::vector<Expr>{conv_layer_nhwc(in[0], in[1], in[2])};
        },
        {{f32, x}, {f32, k}, {f32, b}}, "layer");
    auto exe = expect_cpu_matches_interp(g, seeded_inputs(g), 1e-5, 1e-5);
    const std::string fwd = kernel_line(*exe, "convolution src");
    ASSERT_FALSE(fwd.empty()) << exe->describe();
    EXPECT_EQ(fwd.find("wino"), std::string::npos) << fwd;
    const bool blocked = k[3] == 24 && !has_avx512_core() && __builtin_cpu_supports("avx2");
    EXPECT_EQ(fwd.find("src, weights, dst reordered") != std::string::npos, blocked) << fwd;
    EXPECT_EQ(fwd.find("src, weights") != std::string::npos, blocked) << fwd;
  }
}

TEST(CpuConv, OtherCasesAreLeftToOtherKernels) {
  GLIA_REQUIRE_CPU_BACKEND();
  // f64, and a forward convolution with input dilation (a transposed convolution whose
  // kernel is not a reversed parameter) or batch groups.
  std::vector<std::pair<Graph, std::string>> graphs;
  graphs.emplace_back(
      trace([](const std::vector<Expr>& in) { return std::vector<Expr>{conv(in[0], in[1])}; },
            {{f64, {1, 2, 5, 5}}, {f64, {3, 2, 3, 3}}}, "f64"),
      "f64");
  graphs.emplace_back(
      trace(
          [](const std::vector<Expr>& in) {
            return std::vector<Expr>{conv(in[0], in[1], {.input_dilation = {2, 2}})};
          },
          {{f32, {1, 2, 5, 5}}, {f32, {3, 2, 3, 3}}}, "lhs_dilated"),
      "input dilation");
  graphs.emplace_back(trace(
                          [](const std::vector<Expr>& in) {
                            return std::vector<Expr>{conv(in[0], in[1], {.batch_groups = 2})};
                          },
                          {{f32, {4, 2, 5, 5}}, {f32, {4, 2, 3, 3}}}, "batch_groups"),
                      "batch groups");
  for (const auto& [g, what] : graphs) {
    SCOPED_TRACE(what);
    auto exe = expect_cpu_matches_interp(g, seeded_inputs(g), 1e-5, 1e-5);
    EXPECT_TRUE(on_reference(*exe, Op::convolution));
    EXPECT_EQ(count_kernels(*exe, "convolution"), 0);
  }
}

}  // namespace
}  // namespace glia::testing
