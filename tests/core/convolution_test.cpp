// convolution in the op table (XLA ConvGeneralDilated: strides, padding, dilations,
// feature and batch groups; inference, reference kernel, errors) and Expr conv.
#include <cstdint>

#include "core/test_util.hpp"

namespace glia {
namespace {

using namespace glia::testing;

// Strides and dilations 1, no padding, no groups.
ConvAttrs conv_attrs(std::size_t spatial) {
  Ints ones(spatial, 1), zeros(spatial, 0);
  return ConvAttrs{ones, zeros, zeros, ones, ones, 1, 1};
}

// ---- convolution ---------------------------------------------------------------------

TEST(Convolution, OneDimensionalByHand) {
  // out[i] = x[i] + 2 x[i+1] + 3 x[i+2] over x = 1..5.
  Tensor x = Tensor::from<float>({1, 2, 3, 4, 5}, Shape{1, 1, 5});
  Tensor w = Tensor::from<float>({1, 2, 3}, Shape{1, 1, 3});
  Tensor y = run_op(Op::convolution, {x, w}, conv_attrs(1));
  EXPECT_EQ(y.shape(), (Shape{1, 1, 3}));
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{14, 20, 26}));
}

// Cross-correlation with zero padding, written out directly.
std::vector<float> naive_conv2d(const std::vector<float>& x, const std::vector<float>& w, int n,
                                int c, int h, int wd, int o, int kh, int kw, int stride, int pad,
                                int oh, int ow) {
  std::vector<float> y;
  for (int b = 0; b < n; ++b)
    for (int f = 0; f < o; ++f)
      for (int p = 0; p < oh; ++p)
        for (int q = 0; q < ow; ++q) {
          double acc = 0;
          for (int ch = 0; ch < c; ++ch)
            for (int i = 0; i < kh; ++i)
              for (int j = 0; j < kw; ++j) {
                int r = p * stride + i - pad, s = q * stride + j - pad;
                if (r < 0 || r >= h || s < 0 || s >= wd) continue;
                acc += x[((b * c + ch) * h + r) * wd + s] * w[((f * c + ch) * kh + i) * kw + j];
              }
          y.push_back(static_cast<float>(acc));
        }
  return y;
}

TEST(Convolution, TwoDimensionalStride2Padding1AgainstANaiveFormula) {
  Tensor x = Tensor::from(pattern(2 * 3 * 5 * 4), Shape{2, 3, 5, 4});
  Tensor w = Tensor::from(pattern(4 * 3 * 3 * 3, 3), Shape{4, 3, 3, 3});
  ConvAttrs a{{2, 2}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, 1, 1};
  Tensor y = run_op(Op::convolution, {x, w}, a);
  // H: (5 + 2 - 3) / 2 + 1 = 3; W: floor((4 + 2 - 3) / 2) + 1 = 2.
  EXPECT_EQ(y.shape(), (Shape{2, 4, 3, 2}));
  EXPECT_EQ(y.to_vector<float>(), naive_conv2d(x.to_vector<float>(), w.to_vector<float>(), 2, 3, 5,
                                               4, 4, 3, 3, 2, 1, 3, 2));
}

TEST(Convolution, FeatureGroups) {
  // Channels c0..c3 = [1,2,3], [4,5,6], [7,8,9], [10,11,12]; two groups of two.
  Tensor x = Tensor::from<float>({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, Shape{1, 4, 3});
  Tensor w = Tensor::from<float>({1, 10, 1, -1}, Shape{2, 2, 1});
  ConvAttrs a = conv_attrs(1);
  a.feature_groups = 2;
  Tensor y = run_op(Op::convolution, {x, w}, a);
  EXPECT_EQ(y.shape(), (Shape{1, 2, 3}));
  // out0 = c0 + 10 c1; out1 = c2 - c3.
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{41, 52, 63, -3, -3, -3}));
}

TEST(Convolution, BatchGroups) {
  // Batches b0..b3 = [1,2], [3,4], [5,6], [7,8]; two batch groups, kernels 2 and 3.
  Tensor x = Tensor::from<float>({1, 2, 3, 4, 5, 6, 7, 8}, Shape{4, 1, 2});
  Tensor w = Tensor::from<float>({2, 3}, Shape{2, 1, 1});
  ConvAttrs a = conv_attrs(1);
  a.batch_groups = 2;
  Tensor y = run_op(Op::convolution, {x, w}, a);
  EXPECT_EQ(y.shape(), (Shape{2, 2, 2}));
  // out[n][0] = 2 * b[n]; out[n][1] = 3 * b[2 + n].
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{2, 4, 15, 18, 6, 8, 21, 24}));
}

TEST(Convolution, BatchGroupsGiveTheDepthwiseKernelGradient) {
  // Depthwise forward: x [1, 2, 3], w [2, 1, 2], feature_groups 2, dy [1, 2, 2].
  // dw[c][0][k] = sum_s dy[0][c][s] x[0][c][s + k]:
  //   c0: x = [1,2,3], dy = [1,1]  -> k0: 1+2 = 3,  k1: 2+3 = 5
  //   c1: x = [4,5,6], dy = [1,-1] -> k0: 4-5 = -1, k1: 5-6 = -1
  // As a convolution: lhs = x as [C, N, S], rhs = dy as [C, N, S'], batch_groups = C.
  Tensor x = Tensor::from<float>({1, 2, 3, 4, 5, 6}, Shape{2, 1, 3});
  Tensor dy = Tensor::from<float>({1, 1, 1, -1}, Shape{2, 1, 2});
  ConvAttrs a = conv_attrs(1);
  a.batch_groups = 2;
  Tensor dw = run_op(Op::convolution, {x, dy}, a);
  EXPECT_EQ(dw.shape(), (Shape{1, 2, 2}));
  EXPECT_EQ(dw.to_vector<float>(), (std::vector<float>{3, 5, -1, -1}));
}

TEST(Convolution, InputDilationIsTransposedConvolution) {
  // Transposed conv, stride 2, kernel [a, b] = [1, 10] over x = [1, 2]:
  // y[2 i + k] += x[i] * kernel[k]  ->  [1, 10, 2, 20].
  // As a convolution: dilate x by 2, pad by K - 1 = 1, and flip the kernel.
  Tensor x = Tensor::from<float>({1, 2}, Shape{1, 1, 2});
  Tensor flipped = Tensor::from<float>({10, 1}, Shape{1, 1, 2});
  ConvAttrs a{{1}, {1}, {1}, {2}, {1}, 1, 1};
  Tensor y = run_op(Op::convolution, {x, flipped}, a);
  EXPECT_EQ(y.shape(), (Shape{1, 1, 4}));
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{1, 10, 2, 20}));
}

TEST(Convolution, KernelDilationAndNegativePadding) {
  Tensor x = Tensor::from<float>({1, 2, 3, 4, 5}, Shape{1, 1, 5});
  // Taps at i and i + 2: [1+3, 2+4, 3+5].
  ConvAttrs dil{{1}, {0}, {0}, {1}, {2}, 1, 1};
  Tensor w = Tensor::from<float>({1, 1}, Shape{1, 1, 2});
  EXPECT_EQ(run_op(Op::convolution, {x, w}, dil).to_vector<float>(), (std::vector<float>{4, 6, 8}));
  // Padding -1 low and -2 high crops x to [2, 3].
  ConvAttrs crop{{1}, {-1}, {-2}, {1}, {1}, 1, 1};
  Tensor one = Tensor::from<float>({1}, Shape{1, 1, 1});
  EXPECT_EQ(run_op(Op::convolution, {x, one}, crop).to_vector<float>(), (std::vector<float>{2, 3}));
  // Stride 2 with high padding 1: windows of 2 over [1,2,3,4,5,0] -> [3, 7, 5].
  ConvAttrs strided{{2}, {0}, {1}, {1}, {1}, 1, 1};
  EXPECT_EQ(run_op(Op::convolution, {x, w}, strided).to_vector<float>(),
            (std::vector<float>{3, 7, 5}));
}

TEST(Convolution, ZeroSizeDims) {
  ConvAttrs a = conv_attrs(1);
  Tensor y0 =
      run_op(Op::convolution, {Tensor(f32, Shape{0, 2, 4}), Tensor(f32, Shape{3, 2, 2})}, a);
  EXPECT_EQ(y0.shape(), (Shape{0, 3, 3}));
  Tensor yc =
      run_op(Op::convolution, {Tensor(f32, Shape{1, 0, 4}), Tensor(f32, Shape{2, 0, 2})}, a);
  EXPECT_EQ(yc.shape(), (Shape{1, 2, 3}));
  EXPECT_EQ(yc.to_vector<float>(), std::vector<float>(6, 0));
  // A kernel wider than the input gives no windows, as in XLA.
  EXPECT_EQ(infer_op(Op::convolution, {{f32, {1, 1, 2}}, {f32, {1, 1, 3}}}, a),
            (TensorType{f32, {1, 1, 0}}));
}

TEST(Convolution, Dtypes) {
  Tensor x = Tensor::from<float>({1, 2, 3, 4, 5}, Shape{1, 1, 5});
  Tensor w = Tensor::from<float>({1, 2, 3}, Shape{1, 1, 3});
  for (DType t : {i32, i64, f16, bf16, f64}) {
    Tensor y = run_op(Op::convolution, {x.cast(t), w.cast(t)}, conv_attrs(1));
    EXPECT_EQ(y.dtype(), t);
    EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{14, 20, 26})) << dtype_name(t);
  }
  // u8 wraps: 100 * 3 = 300 = 44 (mod 256).
  Tensor xu = Tensor::from<std::uint8_t>({100}, Shape{1, 1, 1});
  Tensor wu = Tensor::from<std::uint8_t>({3}, Shape{1, 1, 1});
  EXPECT_EQ(run_op(Op::convolution, {xu, wu}, conv_attrs(1)).item<int>(), 44);
  Tensor xi = Tensor::from<std::int32_t>({-2, 5}, Shape{1, 1, 2});
  Tensor wi = Tensor::from<std::int32_t>({3, -1}, Shape{1, 1, 2});
  EXPECT_EQ(run_op(Op::convolution, {xi, wi}, conv_attrs(1)).item<int>(), -11);
}

TEST(Convolution, BadInputAtTheGraphLevel) {
  TensorType x{f32, {2, 4, 5, 5}}, w{f32, {6, 4, 3, 3}};
  auto infer = [](const ConvAttrs& a, const TensorType& in, const TensorType& k) {
    return infer_op(Op::convolution, {in, k}, a);
  };
  ConvAttrs ok = conv_attrs(2);
  EXPECT_EQ(infer(ok, x, w), (TensorType{f32, {2, 6, 3, 3}}));
  EXPECT_GLIA_ERROR(infer(ok, {f32, {2, 4}}, {f32, {6, 4}}), "must have one rank of at least 3");
  EXPECT_GLIA_ERROR(infer(ok, x, {f32, {6, 4, 3}}), "must have one rank of at least 3");
  EXPECT_GLIA_ERROR(infer(ok, x, {f64, {6, 4, 3, 3}}), "operands must have one dtype");
  EXPECT_GLIA_ERROR(infer(ok, {boolean, {2, 4, 5, 5}}, {boolean, {6, 4, 3, 3}}),
                    "expected a numeric dtype");
  ConvAttrs a = ok;
  a.strides = {1};
  EXPECT_GLIA_ERROR(infer(a, x, w),
                    "convolution of f32[2][4][5][5], f32[6][4][3][3]: strides has 1 entries, "
                    "expected 2 (one per spatial axis)");
  a = ok;
  a.padding_high = {0, 0, 0};
  EXPECT_GLIA_ERROR(infer(a, x, w), "padding_high has 3 entries");
  a = ok;
  a.kernel_dilation = {};
  EXPECT_GLIA_ERROR(infer(a, x, w), "kernel_dilation has 0 entries");
  a = ok;
  a.strides = {1, 0};
  EXPECT_GLIA_ERROR(infer(a, x, w), "strides must be >= 1, got 0");
  a = ok;
  a.input_dilation = {0, 1};
  EXPECT_GLIA_ERROR(infer(a, x, w), "input_dilation must be >= 1");
  a = ok;
  a.feature_groups = 3;
  EXPECT_GLIA_ERROR(infer(a, x, {f32, {6, 1, 3, 3}}),
                    "input channels (4) are not divisible by feature_groups (3)");
  a.feature_groups = 4;
  EXPECT_GLIA_ERROR(infer(a, x, {f32, {6, 1, 3, 3}}),
                    "output channels (6) are not divisible by feature_groups (4)");
  a.feature_groups = 2;
  EXPECT_GLIA_ERROR(infer(a, x, w),
                    "the kernel has 4 input channels, expected 2 (input channels 4 / "
                    "feature_groups 2)");
  a.feature_groups = 0;
  EXPECT_GLIA_ERROR(infer(a, x, w), "must be >= 1, got 0 and 1");
  a = ok;
  a.batch_groups = 4;
  EXPECT_GLIA_ERROR(infer(a, x, w), "batch (2) is not divisible by batch_groups (4)");
  a.batch_groups = 2;
  EXPECT_GLIA_ERROR(infer(a, x, {f32, {5, 4, 3, 3}}),
                    "output channels (5) are not divisible by batch_groups (2)");
  a.feature_groups = 2;
  EXPECT_GLIA_ERROR(infer(a, x, {f32, {6, 2, 3, 3}}), "cannot both exceed 1");
  a = ok;
  a.padding_low = {-3, 0};
  a.padding_high = {-3, 0};
  EXPECT_GLIA_ERROR(infer(a, x, w), "spatial axis 0 has negative size -1 after dilation");
}

// ---- The Expr API --------------------------------------------------------------------

TEST(ConvExpr, WithDefaultsAndOptions) {
  Tensor x = Tensor::from<float>({1, 2, 3, 4, 5}, Shape{1, 1, 5});
  Tensor w = Tensor::from<float>({1, 2, 3}, Shape{1, 1, 3});
  EXPECT_EQ(run_expr([](auto& in) { return conv(in[0], in[1]); }, {x, w}).to_vector<float>(),
            (std::vector<float>{14, 20, 26}));
  // Padding 1 on both sides, stride 2: windows over [0,1,2,3,4,5,0] at 0, 2, 4.
  ConvOptions o;
  o.strides = {2};
  o.padding_low = {1};
  o.padding_high = {1};
  EXPECT_EQ(run_expr([&](auto& in) { return conv(in[0], in[1], o); }, {x, w}).to_vector<float>(),
            (std::vector<float>{0 + 2 + 6, 2 + 6 + 12, 4 + 10 + 0}));
  Tensor xi = x.cast(i32);
  Tensor p = run_expr([](auto& in) { return conv(in[0], in[1]); }, {xi, w});
  EXPECT_EQ(p.dtype(), f32);
  EXPECT_EQ(p.to_vector<float>(), (std::vector<float>{14, 20, 26}));
}

TEST(ConvExpr, BadInput) {
  EXPECT_GLIA_ERROR(
      trace_expr([](auto& in) { return conv(in[0], in[1]); }, {{f32, {1, 1, 5}}, {f32, {1, 5}}}),
      "conv: input [N, C, spatial...] and kernel");
  EXPECT_GLIA_ERROR(trace_expr(
                        [](auto& in) {
                          ConvOptions o;
                          o.strides = {1, 1};
                          return conv(in[0], in[1], o);
                        },
                        {{f32, {1, 1, 5}}, {f32, {1, 1, 3}}}),
                    "strides has 2 entries, expected 1");
  EXPECT_GLIA_ERROR(trace_expr(
                        [](auto& in) {
                          ConvOptions o;
                          o.feature_groups = 3;
                          return conv(in[0], in[1], o);
                        },
                        {{f32, {1, 3, 5}}, {f32, {2, 3, 3}}}),
                    "output channels (2) are not divisible");
}

}  // namespace
}  // namespace glia
