// Tests of conv_lstm: 1-D predictions against the gate equations with the convolutions
// written out here in doubles ("same" and strided "valid" input convolutions), parameter
// shapes, 2-D scan against unrolled, gradients (f64, central differences) and bad input.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "autograd/gradcheck.hpp"
#include "glia/layers.hpp"
#include "layers/f64_params.hpp"

#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace glia {
namespace {

using ::testing::HasSubstr;
using ::testing::ThrowsMessage;
using Vec = std::vector<double>;

double sigmoid_d(double v) { return 1 / (1 + std::exp(-v)); }

struct Conv1d {
  std::int64_t kernel, stride, pad_low, out;  // window, step, zeros before, output width
};

// y[w][g] = sum_{k, c} in[w * stride + k - pad_low][c] * kernel[k][c][g], zeros outside.
Vec conv1d(const Vec& in, std::int64_t width, std::int64_t channels, const Vec& kernel,
           std::int64_t gates, const Conv1d& c) {
  Vec y(static_cast<std::size_t>(c.out * gates), 0.0);
  for (std::int64_t w = 0; w < c.out; ++w)
    for (std::int64_t k = 0; k < c.kernel; ++k) {
      std::int64_t at = w * c.stride + k - c.pad_low;
      if (at < 0 || at >= width) continue;
      for (std::int64_t ch = 0; ch < channels; ++ch)
        for (std::int64_t g = 0; g < gates; ++g)
          y[w * gates + g] += in[at * channels + ch] * kernel[(k * channels + ch) * gates + g];
    }
  return y;
}

// One example x [T, W, C] -> the hidden states [T, W', F].
Vec reference(const Vec& x, std::int64_t T, std::int64_t W, std::int64_t C, std::int64_t F,
              const Vec& k, const Vec& u, const Vec& b, const Conv1d& in_conv) {
  const std::int64_t G = 4 * F, Wo = in_conv.out;
  const Conv1d rec{in_conv.kernel, 1, (in_conv.kernel - 1) / 2, Wo};  // "same", moving by 1
  Vec h(static_cast<std::size_t>(Wo * F), 0.0), c = h, out;
  for (std::int64_t t = 0; t < T; ++t) {
    Vec frame(x.begin() + t * W * C, x.begin() + (t + 1) * W * C);
    Vec zx = conv1d(frame, W, C, k, G, in_conv), zh = conv1d(h, Wo, F, u, G, rec);
    for (std::int64_t w = 0; w < Wo; ++w)
      for (std::int64_t f = 0; f < F; ++f) {
        auto z = [&](int gate) {
          std::size_t j = static_cast<std::size_t>(w * G + gate * F + f);
          return zx[j] + zh[j] + b[static_cast<std::size_t>(gate * F + f)];
        };
        std::size_t at = static_cast<std::size_t>(w * F + f);
        c[at] = sigmoid_d(z(1)) * c[at] + sigmoid_d(z(0)) * std::tanh(z(2));
        h[at] = sigmoid_d(z(3)) * std::tanh(c[at]);
      }
    out.insert(out.end(), h.begin(), h.end());
  }
  return out;
}

void check_1d(const Padding& padding, std::int64_t stride, const Conv1d& want_conv) {
  SCOPED_TRACE(padding.mode + " stride " + std::to_string(stride));
  const std::int64_t N = 2, T = 3, W = 7, C = 2, F = 3;
  Model x = input("x", {-1, T, W, C});
  Model m = conv_lstm(x, F,
                      {.kernel_size = {3},
                       .strides = {stride},
                       .padding = padding,
                       .recurrent = {.bias_initializer = initializers::uniform(0.5), .name = "c"}});
  Tensor xs = testing::random_tensor({N, T, W, C}, -1, 1, 81).cast(DType::f32);
  ModelState s = build(m).init({{"x", xs.type()}}, 2);
  auto p = [&](const std::string& n) { return s.params.at("c").at(n).to_vector<double>(); };
  EXPECT_EQ(s.params.at("c").at("kernel").shape(), (Shape{3, C, 4 * F}));
  EXPECT_EQ(s.params.at("c").at("recurrent_kernel").shape(), (Shape{3, F, 4 * F}));
  Tensor got = build(m).predict(s, xs);
  ASSERT_EQ(got.shape(), (Shape{N, T, want_conv.out, F}));
  Vec all = xs.to_vector<double>(), g = got.to_vector<double>();
  const std::int64_t per_in = T * W * C, per_out = T * want_conv.out * F;
  for (std::int64_t n = 0; n < N; ++n) {
    Vec want = reference(Vec(all.begin() + n * per_in, all.begin() + (n + 1) * per_in), T, W, C, F,
                         p("kernel"), p("recurrent_kernel"), p("bias"), want_conv);
    for (std::int64_t i = 0; i < per_out; ++i)
      EXPECT_NEAR(g[static_cast<std::size_t>(n * per_out + i)], want[static_cast<std::size_t>(i)],
                  1e-5)
          << "example " << n << " element " << i;
  }
}

TEST(ConvLstm, OneSpatialAxisMatchesTheEquations) {
  check_1d("same", 1, {3, 1, 1, 7});
  check_1d("valid", 2, {3, 2, 0, 3});
}

TEST(ConvLstm, TwoSpatialAxesScanEqualsUnrolled) {
  Model x = input("x", {-1, 4, 5, 6, 2});
  auto make = [&](bool unroll, bool reverse, bool sequences) {
    return conv_lstm(
        x, 3,
        {.kernel_size = {3},
         .strides = {1, 2},
         .recurrent = {
             .return_sequences = sequences, .reverse = reverse, .unroll = unroll, .name = "c"}});
  };
  Tensor xs = testing::random_tensor({2, 4, 5, 6, 2}, -1, 1, 82).cast(DType::f32);
  ModelState s = build(make(false, false, true)).init({{"x", xs.type()}}, 3);
  EXPECT_EQ(s.params.at("c").at("kernel").shape(), (Shape{3, 3, 2, 12}));
  for (bool reverse : {false, true}) {
    Tensor a = build(make(false, reverse, true)).predict(s, xs);
    Tensor b = build(make(true, reverse, true)).predict(s, xs);
    ASSERT_EQ(a.shape(), (Shape{2, 4, 5, 3, 3}));
    EXPECT_TRUE(allclose(a, b, 1e-5, 1e-6)) << "reverse " << reverse;
    Tensor last = build(make(false, reverse, false)).predict(s, xs);
    Tensor want = reverse ? a.slice(1, 0, 1) : a.slice(1, 3, 4);
    EXPECT_TRUE(allclose(last, want.reshape({2, 5, 3, 3}), 1e-6, 1e-7)) << "last step";
  }
}

TEST(ConvLstmGradients, F64) {
  const std::int64_t T = 3, W = 4, C = 2, F = 2;
  Model x = input("x", {-1, T, W, C}, DType::f64);
  Model m = testing::with_f64_params(
      conv_lstm(x, F, {.kernel_size = {3}, .recurrent = {.reverse = true, .name = "c"}}));
  Tensor w = testing::random_tensor({2, T, W, F}, -1, 1, 91);
  testing::expect_gradients_match(
      [&](const std::vector<Expr>& in) {
        std::map<std::string, Expr> p{
            {"kernel", in[1]}, {"recurrent_kernel", in[2]}, {"bias", in[3]}};
        return sum(apply(m, {{"c", p}}, {}, {{"x", in[0]}}).output * Expr(w));
      },
      {testing::random_tensor({2, T, W, C}, -1, 1, 92),
       testing::random_tensor({3, C, 4 * F}, -0.7, 0.7, 93),
       testing::random_tensor({3, F, 4 * F}, -0.7, 0.7, 94),
       testing::random_tensor({4 * F}, -0.5, 0.5, 95)},
      {.tolerance = 1e-5});
}

TEST(ConvLstm, BadInputIsAnError) {
  EXPECT_THAT(
      [] {
        build(conv_lstm(input("x", {-1, 4, 3}), 2)).init(0);
      },
      ThrowsMessage<Error>(HasSubstr("conv_lstm: expected [batch, time, spatial..., "
                                     "channels] with 1 to 3 spatial axes")));
  EXPECT_THAT(
      [] {
        conv_lstm(input("x", {-1, 4, 3, 3, 1}), 2, {.kernel_size = {0}});
      },
      ThrowsMessage<Error>(HasSubstr("conv_lstm")));
  EXPECT_THAT(
      [] {
        conv_lstm(input("x", {-1, 4, 3, 3, 1}), 0);
      },
      ThrowsMessage<Error>(HasSubstr("conv_lstm: filters must be positive")));
  EXPECT_THAT(
      [] {
        build(conv_lstm(input("x", {-1, 4, 3, 3, 1}), 2, {.kernel_size = {3, 3, 3}})).init(0);
      },
      ThrowsMessage<Error>(HasSubstr("conv_lstm: kernel_size [3, 3, 3] for 2 spatial axes")));
}

}  // namespace
}  // namespace glia
