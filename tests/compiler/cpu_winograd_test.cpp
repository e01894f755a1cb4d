// glia's own Winograd F(2x2, 3x3) convolution (backends/cpu/winograd_conv.cpp), which the
// cpu backend runs on AVX2 machines (GLIA_CPU_ISA=avx2 here, so on any machine with AVX2)
// for 3x3, unit-stride, ungrouped convolutions over channels-last activations with enough
// work: forward with its epilogue, input gradient and kernel gradient against the
// interpreter, over odd sizes (tiles past the output's edge), uneven padding, more tiles
// than one block holds, a residual add in the epilogue; and the convolutions it leaves to
// oneDNN.
#include <string>
#include <vector>

#include "compiler/cpu_test_util.hpp"
#include "glia/autograd/grad.hpp"
#include "scoped_env.hpp"

namespace glia::testing {
namespace {

#define GLIA_REQUIRE_AVX2()                                              \
  GLIA_REQUIRE_CPU_BACKEND();                                            \
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) \
  GTEST_SKIP() << "no AVX2 and FMA: oneDNN runs every convolution"

// The data gradient's line names it after the zero-skipping kernel that wraps it ("->
// glia zero-skipping data gradient ... else glia winograd ...": dense output gradients
// here, it runs).
constexpr const char* kWinograd = "glia winograd F(2x2, 3x3)";

struct Layer {
  std::string name;
  Shape x, k;  // NHWC, HWIO
  ConvOptions o;
  bool residual = false;  // relu(conv + r) where r has the output's shape, else relu(conv + b)
};

Expr layer_output(const Layer& l, const std::vector<Expr>& in) {
  Expr y = transpose(conv(transpose(in[0], {0, 3, 1, 2}), transpose(in[1], {3, 2, 0, 1}), l.o),
                     {0, 2, 3, 1});
  return relu(l.residual ? y + in[2] : y + broadcast(in[2], y.shape(), {3}));
}

// The layer's output and the gradients of sum(output * in[3]) with respect to x and k.
Graph layer_grads(const Layer& l) {
  Graph fwd = trace(
      [&](const std::vector<Expr>& in) { return std::vector<Expr>{conv(in[0], in[1], l.o)}; },
      {{f32, {l.x[0], l.x[3], l.x[1], l.x[2]}}, {f32, {l.k[3], l.k[2], l.k[0], l.k[1]}}}, "shape");
  const Shape nchw = fwd.type(fwd.outputs()[0]).shape;
  const Shape y{nchw[0], nchw[2], nchw[3], nchw[1]};
  const Shape third = l.residual ? y : Shape{l.k[3]};
  return trace(
      [&](const std::vector<Expr>& in) {
        Expr out = layer_output(l, in);
        std::vector<Expr> outs{out};
        for (const Expr& d : gradients(sum(out * in[3]), {in[0], in[1]})) outs.push_back(d);
        return outs;
      },
      {{f32, l.x}, {f32, l.k}, {f32, third}, {f32, y}}, l.name);
}

TEST(CpuWinograd, EveryPassMatchesInterp) {
  GLIA_REQUIRE_AVX2();
  ScopedEnv isa("GLIA_CPU_ISA", "avx2");
  const std::vector<Layer> layers = {
      // The MNIST CNN's second layer at batch 16: 11 x 11 outputs, the last tiles half out.
      {"cnn_second", {16, 13, 13, 32}, {3, 3, 32, 64}, {}},
      // Uneven padding, a non-square image, 24 channels in (one 16 and one 8 wide column
      // of the products), 40 out.
      {"uneven", {12, 21, 17, 24}, {3, 3, 24, 40}, {.padding_low = {2, 0}, .padding_high = {0, 1}}},
      // Same padding and a residual add: the epilogue reads an operand at every output.
      {"residual",
       {5, 30, 30, 32},
       {3, 3, 32, 32},
       {.padding_low = {1, 1}, .padding_high = {1, 1}},
       true},
  };
  for (const Layer& l : layers) {
    SCOPED_TRACE(l.name);
    Graph g = layer_grads(l);
    auto exe = expect_optimized_matches_interp(g, seeded_inputs(g), 1e-4);
    for (const char* pass :
         {"convolution src", "convolution_backward_data", "convolution_backward_weights"}) {
      const std::string line = kernel_line(*exe, pass);
      EXPECT_NE(line.find(kWinograd), std::string::npos) << pass << "\n" << exe->describe();
    }
    EXPECT_NE(kernel_line(*exe, "convolution src").find(l.residual ? " + " : " + bias"),
              std::string::npos);
  }
}

// Large values with a relu that must keep a NaN (the interpreter's max propagates it).
TEST(CpuWinograd, ReluKeepsNaN) {
  GLIA_REQUIRE_AVX2();
  ScopedEnv isa("GLIA_CPU_ISA", "avx2");
  const Layer l{"nan", {16, 13, 13, 32}, {3, 3, 32, 64}, {}};
  Graph g =
      trace([&](const std::vector<Expr>& in) { return std::vector<Expr>{layer_output(l, in)}; },
            {{f32, l.x}, {f32, l.k}, {f32, {64}}}, "nan");
  std::vector<Tensor> in = seeded_inputs(g);
  std::vector<float> x = in[0].to_vector<float>();
  x[5 * 13 * 32 + 7 * 32 + 3] = std::nanf("");  // image 0, row 5, column 7, channel 3
  in[0] = Tensor::from(x, l.x);
  auto exe = expect_optimized_matches_interp(g, in, 1e-4);
  EXPECT_NE(kernel_line(*exe, "convolution src").find(kWinograd), std::string::npos);
  std::vector<float> y = exe->run(in)[0].to_vector<float>();
  // Outputs (4..5, 5..7) read that pixel: NaN in all 64 channels of each.
  for (int oy = 3; oy <= 5; ++oy)
    for (int ox = 5; ox <= 7; ++ox)
      for (int k = 0; k < 64; ++k) EXPECT_TRUE(std::isnan(y[(oy * 11 + ox) * 64 + k])) << oy << ox;
  EXPECT_FALSE(std::isnan(y[(2 * 11 + 5) * 64]));
}

TEST(CpuWinograd, OtherConvolutionsStayOnOneDnn) {
  GLIA_REQUIRE_AVX2();
  ScopedEnv isa("GLIA_CPU_ISA", "avx2");
  const std::vector<Layer> layers = {
      {"small", {2, 13, 13, 32}, {3, 3, 32, 64}, {}},  // 4.5M multiply-adds
      {"strided", {32, 27, 27, 32}, {3, 3, 32, 64}, {.strides = {2, 2}}},
      {"dilated", {16, 17, 17, 32}, {3, 3, 32, 64}, {.kernel_dilation = {2, 2}}},
      {"five_by_five", {16, 15, 15, 32}, {5, 5, 32, 64}, {}},
      {"channels_not_8", {16, 13, 13, 30}, {3, 3, 30, 64}, {}},
  };
  for (const Layer& l : layers) {
    SCOPED_TRACE(l.name);
    Graph g =
        trace([&](const std::vector<Expr>& in) { return std::vector<Expr>{layer_output(l, in)}; },
              {{f32, l.x}, {f32, l.k}, {f32, {l.k[3]}}}, l.name);
    auto exe = expect_cpu_matches_interp(g, seeded_inputs(g), 1e-4, 1e-4);  // 800-term sums
    const std::string fwd = kernel_line(*exe, "convolution src");
    ASSERT_FALSE(fwd.empty()) << exe->describe();
    EXPECT_NE(fwd.find("onednn"), std::string::npos) << fwd;
  }
}

}  // namespace
}  // namespace glia::testing
