// The `cpu` backend's convolution fused with its max pooling (ConvPoolSpec) against the
// interpreter: predictors (the forward pass alone) and training graphs (the kernel
// gradient through pooling's adjoint and relu's mask), with and without bias and relu,
// padding, odd sizes whose pooling drops the last row and column, overlapping windows,
// several input channels, in each vector width; ties, and the cases left unfused.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <string>

#include "compiler/cpu_test_util.hpp"
#include "glia/autograd/grad.hpp"
#include "scoped_env.hpp"

namespace glia::testing {
namespace {

struct Case {
  std::string name;
  Shape x, k;  // NHWC, HWIO
  bool bias = true, relu = true;
  std::int64_t pad = 0;  // each side of both spatial axes
  Ints window = {1, 2, 2, 1};
  WindowOptions o = {};
  Ints conv_strides = {1, 1}, dilation = {1, 1};
};

std::vector<Case> fused_cases() {
  return {
      {"mnist_first_layer", {4, 28, 28, 1}, {3, 3, 1, 32}},
      {"same_padding_rgb_odd", {3, 9, 11, 3}, {3, 3, 3, 16}, true, true, 1},
      {"no_bias_2x2_kernel", {2, 8, 8, 2}, {2, 2, 2, 16}, false},
      {"no_relu", {2, 10, 10, 1}, {3, 3, 1, 16}, true, false},
      {"overlapping_3x3_stride2",
       {2, 13, 12, 1},
       {3, 3, 1, 16},
       true,
       true,
       0,
       {1, 3, 3, 1},
       {.strides = {1, 2, 2, 1}}},
      {"strided_dilated_conv",
       {2, 17, 16, 2},
       {3, 2, 2, 16},
       true,
       true,
       1,
       {1, 2, 2, 1},
       {},
       {2, 1},
       {1, 2}},
  };
}

// A conv layer as glia's layers trace it (NHWC data, HWIO kernel; relu's gradient masks
// the cotangent by the output's sign, layers/src/activation.cpp), then max pooling.
Expr pooled_layer(const Case& c, const std::vector<Expr>& in) {
  Expr z = transpose(conv(transpose(in[0], {0, 3, 1, 2}), transpose(in[1], {3, 2, 0, 1}),
                          {.strides = c.conv_strides,
                           .padding_low = {c.pad, c.pad},
                           .padding_high = {c.pad, c.pad},
                           .kernel_dilation = c.dilation}),
                     {0, 2, 3, 1});
  if (c.bias) z = z + broadcast(in[2], z.shape(), {3});
  if (c.relu) {
    Expr y = relu(z);
    z = custom_grad(
        y, {z}, [y](const Expr& g) { return std::vector<Expr>{select(greater(y, 0.0), g, 0.0)}; });
  }
  return window_max(z, c.window, c.o);
}

std::vector<TensorType> layer_types(const Case& c) {
  std::vector<TensorType> types{{f32, c.x}, {f32, c.k}};
  if (c.bias) types.push_back({f32, Shape{c.k[3]}});
  return types;
}

Graph predict_graph(const Case& c) {
  return trace([&](const std::vector<Expr>& in) { return std::vector<Expr>{pooled_layer(c, in)}; },
               layer_types(c), c.name);
}

// The loss sum(pooled * w), and its gradients for the kernel (and the bias): a first
// layer's, whose input needs none.
Graph train_graph(const Case& c) {
  Graph shape = predict_graph(c);
  std::vector<TensorType> types = layer_types(c);
  types.push_back({f32, shape.type(shape.outputs()[0]).shape});
  return trace(
      [&](const std::vector<Expr>& in) {
        Expr loss = sum(pooled_layer(c, in) * in.back());
        std::vector<Expr> params{in[1]};
        if (c.bias) params.push_back(in[2]);
        std::vector<Expr> out{loss};
        for (const Expr& d : gradients(loss, params)) out.push_back(d);
        return out;
      },
      types, c.name + "_train");
}

std::map<std::string, int> kinds(const Executable& exe) {
  std::map<std::string, int> k;
  for (const Kernel& kernel : exe.program().kernels) ++k[kernel.kind()];
  return k;
}

const char* const kIsas[] = {"widest", "avx2", "baseline"};

// Each fused case's predictor or training graph in each vector width, against the
// interpreter (inputs in [-1, 1): about half the layer's outputs are negative, so relu's
// mask decides about half the windows); `check` then reads its kernels' kinds and the line
// of `kernel`.
template <class Check>
void each_fused_case(bool train, const std::string& kernel, const Check& check) {
  for (const char* isa : kIsas)
    for (const Case& c : fused_cases()) {
      ScopedEnv cap("GLIA_CPU_ISA", isa);
      SCOPED_TRACE(cat(c.name, " ", isa));
      Graph g = train ? train_graph(c) : predict_graph(c);
      auto exe = expect_optimized_matches_interp(g, seeded_inputs(g), train ? 1e-4 : 1e-5);
      auto k = kinds(*exe);
      EXPECT_EQ(k["convolution+pooling"], train ? 2 : 1) << exe->describe();
      EXPECT_EQ(k["convolution"] + k["pooling"], 0) << exe->describe();
      check(c, kernel_line(*exe, kernel));
    }
}

TEST(CpuConvPool, PredictorsMatchInterp) {
  GLIA_REQUIRE_CPU_BACKEND();
  each_fused_case(false, "convolution+max_pool", [](const Case& c, const std::string& line) {
    EXPECT_NE(line.find(c.bias ? (c.relu ? "+ bias, relu" : "+ bias") : "+ relu"),
              std::string::npos)
        << line;
    EXPECT_NE(line.find("glia convolution fused with max pooling, forward"), std::string::npos)
        << line;
  });
}

TEST(CpuConvPool, KernelGradientsThroughThePoolingMatchInterp) {
  GLIA_REQUIRE_CPU_BACKEND();
  each_fused_case(true, "convolution_backward_weights through max_pool",
                  [](const Case& c, const std::string& line) {
                    EXPECT_EQ(line.find("where > 0") != std::string::npos, c.relu) << line;
                    EXPECT_NE(line.find("glia convolution fused with max pooling, kernel gradient"),
                              std::string::npos)
                        << line;
                  });
}

// Windows of equal values (a kernel of zeros: every output is the bias) send the whole
// gradient to the first position, as the interpreter's select_and_scatter does: the
// kernel gradient is the windows' first patches times the pooled gradient, summed. 32
// channels: two vectors at a time in every width (the loop that takes them finds the
// maximum without comparing position by position).
TEST(CpuConvPool, TiesGoToTheFirstPosition) {
  GLIA_REQUIRE_CPU_BACKEND();
  for (const char* isa : kIsas) {
    ScopedEnv cap("GLIA_CPU_ISA", isa);
    SCOPED_TRACE(isa);
    Case c{"ties", {1, 5, 5, 1}, {2, 2, 1, 32}};  // 4x4 outputs, 2x2 pooled
    Graph g = train_graph(c);
    std::vector<float> x(25, 0.0f);
    x[0] = 1.0f;   // input (0, 0): tap (0, 0) of the first window's first patch
    x[12] = 2.0f;  // input (2, 2): tap (0, 0) of the last window's first patch
    std::vector<float> k(4 * 32, 0.0f), b(32, 0.5f), w(4 * 32, 1.0f);
    std::vector<Tensor> args{Tensor::from(x, Shape{1, 5, 5, 1}),
                             Tensor::from(k, Shape{2, 2, 1, 32}), Tensor::from(b, Shape{32}),
                             Tensor::from(w, Shape{1, 2, 2, 32})};
    auto exe = compile_graph(g, "cpu");
    ASSERT_EQ(kinds(*exe)["convolution+pooling"], 2) << exe->describe();
    std::vector<Tensor> out = exe->run(args);
    // Each window sends its 1 to its first position, whose tap (0, 0) reads the input at
    // the window's top-left: (0, 0), (0, 2), (2, 0), (2, 2).
    std::vector<double> dk(4 * 32, 0.0);
    for (int ch = 0; ch < 32; ++ch) dk[std::size_t(ch)] = 1.0 + 2.0;
    expect_tensor(out[1], f32, {2, 2, 1, 32}, dk);
    expect_tensor(out[2], f32, {32}, std::vector<double>(32, 4.0));
  }
}

// An infinity or NaN among an image's inputs: the reference's kernel gradient multiplies
// every output's adjoint, zeros included, by its patch (0 times an infinity is NaN), so
// NaN reaches every tap whose patches cross it, picked or not; the forward pass's
// windows over it pool to NaN or an infinity. Image 0 has a NaN, image 1 an infinity,
// image 2 only numbers.
TEST(CpuConvPool, InfinitiesAndNaNsReachTheGradientsAsInTheReference) {
  GLIA_REQUIRE_CPU_BACKEND();
  for (const char* isa : kIsas) {
    ScopedEnv cap("GLIA_CPU_ISA", isa);
    SCOPED_TRACE(isa);
    Case c{"non_finite", {3, 10, 10, 1}, {3, 3, 1, 16}};
    Graph g = train_graph(c);
    std::vector<Tensor> in = seeded_inputs(g);
    std::vector<float> x = in[0].to_vector<float>();
    x[4 * 10 + 5] = std::numeric_limits<float>::quiet_NaN();
    x[100 + 6 * 10 + 2] = std::numeric_limits<float>::infinity();
    in[0] = Tensor::from(x, c.x);
    auto exe = expect_optimized_matches_interp(g, in, 1e-4);
    EXPECT_EQ(kinds(*exe)["convolution+pooling"], 2) << exe->describe();
    std::vector<float> dk = exe->run(in)[1].to_vector<float>();
    EXPECT_TRUE(std::any_of(dk.begin(), dk.end(), [](float v) { return std::isnan(v); }));
  }
}

TEST(CpuConvPool, OtherCasesStayUnfused) {
  GLIA_REQUIRE_CPU_BACKEND();
  const std::vector<Case> cases = {
      // 72 taps a window: the gradient's second convolution would cost more than it saves.
      {"many_taps", {2, 8, 8, 8}, {3, 3, 8, 16}},
      // Output channels in no whole vector of any width.
      {"odd_channels", {2, 8, 8, 1}, {3, 3, 1, 6}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Graph g = train_graph(c);
    auto exe = expect_optimized_matches_interp(g, seeded_inputs(g), 1e-4);
    EXPECT_EQ(kinds(*exe)["convolution+pooling"], 0) << exe->describe();
    EXPECT_EQ(kinds(*exe)["pooling"], 2) << exe->describe();
  }
  // The input's gradient too: the adjoint has another reader, the input-gradient
  // convolution, so the layer's output must be stored.
  Case first = fused_cases()[0];
  Graph shape = predict_graph(first);
  std::vector<TensorType> types = layer_types(first);
  types.push_back({f32, shape.type(shape.outputs()[0]).shape});
  Graph g = trace(
      [&](const std::vector<Expr>& in) {
        return gradients(sum(pooled_layer(first, in) * in.back()), {in[0], in[1], in[2]});
      },
      types, "input_gradient");
  auto exe = expect_optimized_matches_interp(g, seeded_inputs(g), 1e-4);
  EXPECT_EQ(kinds(*exe)["convolution+pooling"], 0) << exe->describe();
  // And the environment switch.
  ScopedEnv off("GLIA_CPU_CONV_POOL", "0");
  Graph t = train_graph(first);
  exe = expect_optimized_matches_interp(t, seeded_inputs(t), 1e-4);
  EXPECT_EQ(kinds(*exe)["convolution+pooling"], 0) << exe->describe();
  EXPECT_EQ(kinds(*exe)["pooling"], 2) << exe->describe();
}

}  // namespace
}  // namespace glia::testing
