// simplify's sums of select_and_scatter (passes/scatter_sums.hpp): max pooling's adjoint
// summed over its windows' axes is taken from the pooled source, masked by gt(x, c) or
// not; the rules hold where they should, leave the graph alone elsewhere, and take the
// scatter out of a convolution-like bias gradient.
#include <cmath>
#include <limits>

#include "core/test_util.hpp"
#include "glia/autograd.hpp"
#include "glia/compiler.hpp"

namespace {

using glia::Expr;
using glia::Graph;
using glia::Op;
using glia::Tensor;
using glia::testing::count_ops;
using glia::testing::f32s;

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

// One image of 4x4 pixels, one channel; its 2x2 windows' maxima are 3, -1, 0 and NaN.
const Tensor kX = f32s({3, -1, -1, -2,  //
                        0, 2, -3, -4,   //
                        0, 0, kNaN, 5,  //
                        0, 0, 1, 1},
                       {1, 4, 4, 1});
// One source value a window, powers of two: a sum says which windows it took.
const Tensor kSource = f32s({1, 2, 4, 8}, {1, 2, 2, 1});

Graph simplified(const Graph& g) {
  Graph out = glia::prune(glia::simplify(g));
  glia::verify(out);
  return out;
}

Graph two_inputs(const std::function<std::vector<Expr>(const Expr&, const Expr&)>& fn,
                 const Tensor& x, const Tensor& s) {
  return glia::trace([&](const std::vector<Expr>& in) { return fn(in[0], in[1]); },
                     {x.type(), s.type()});
}

Expr masked(const Expr& x, const Expr& scattered, double bound = 0, double otherwise = 0) {
  return glia::select(glia::greater(x, bound), scattered, otherwise);
}

void expect_same_bits(const Graph& before, const Graph& after, const std::vector<Tensor>& in) {
  std::vector<Tensor> a = glia::interpret(before, in), b = glia::interpret(after, in);
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i)
    EXPECT_TRUE(glia::equal(a[i], b[i])) << "output " << i << ": " << a[i] << " vs " << b[i];
}

}  // namespace

TEST(ScatterSums, SumsOverTheWindowsAxesComeFromTheSource) {
  Graph g = two_inputs(
      [](const Expr& x, const Expr& s) {
        Expr pooled = glia::window_max(x, {1, 2, 2, 1});  // the forward pass's, first
        Expr scattered = glia::select_and_scatter(x, s, {1, 2, 2, 1});
        return std::vector<Expr>{glia::sum(masked(x, scattered), {0, 1, 2}),
                                 glia::sum(scattered, {0, 1, 2}),
                                 glia::sum(masked(x, scattered, -1.5), {0, 1, 2}, true), pooled};
      },
      kX, kSource);
  Graph s = simplified(g);
  EXPECT_EQ(count_ops(s, Op::select_and_scatter), 0) << glia::to_text(s);
  std::vector<Tensor> out = glia::interpret(s, std::vector{kX, kSource});
  // Kept: windows whose maximum is over the bound; a NaN maximum is not.
  glia::testing::expect_tensor(out[0], glia::f32, {1}, {1});
  glia::testing::expect_tensor(out[1], glia::f32, {1}, {1 + 2 + 4 + 8});
  glia::testing::expect_tensor(out[2], glia::f32, {1, 1, 1, 1}, {1 + 2 + 4});
  expect_same_bits(g, s, {kX, kSource});
}

TEST(ScatterSums, OverlappingAndPaddedWindowsKeepTheMaskedSum) {
  // Windows of 3 with stride 2 over x padded by 1: each pixel may be picked twice, and the
  // unmasked sum would count a window over padding alone, so it keeps its scatter.
  glia::WindowOptions o{
      .strides = {1, 2, 2, 1}, .padding_low = {0, 1, 1, 0}, .padding_high = {0, 1, 1, 0}};
  Graph g = two_inputs(
      [&](const Expr& x, const Expr& s) {
        Expr pooled = glia::window_max(x, {1, 3, 3, 1}, o);
        Expr scattered = glia::select_and_scatter(x, s, {1, 3, 3, 1}, o);
        return std::vector<Expr>{glia::sum(masked(x, scattered), {0, 1, 2}), pooled};
      },
      kX, kSource);
  Graph s = simplified(g);
  EXPECT_EQ(count_ops(s, Op::select_and_scatter), 0) << glia::to_text(s);
  // Windows (rows, columns) -1..1 x -1..1: max 3; -1..1 x 1..3: 2; 1..3 x -1..1: 2;
  // 1..3 x 1..3: NaN.
  glia::testing::expect_tensor(glia::interpret(s, std::vector{kX, kSource})[0], glia::f32, {1},
                               {1 + 2 + 4});
  expect_same_bits(g, s, {kX, kSource});
  Graph plain = two_inputs(
      [&](const Expr& x, const Expr& s) {
        return std::vector<Expr>{glia::sum(glia::select_and_scatter(x, s, {1, 3, 3, 1}, o))};
      },
      kX, kSource);
  EXPECT_EQ(count_ops(simplified(plain), Op::select_and_scatter), 1);
}

TEST(ScatterSums, OtherPatternsKeepTheirScatter) {
  // Each with the forward pass's pool beside it, which the masked sum would take.
  auto kept = [](const std::function<Expr(const Expr&, const Expr&)>& fn) {
    Graph g = two_inputs(
        [&](const Expr& x, const Expr& s) {
          Expr pooled = glia::window_max(x, {1, 2, 2, 1});
          return std::vector<Expr>{fn(x, s), pooled};
        },
        kX, kSource);
    Graph s = simplified(g);
    EXPECT_EQ(count_ops(s, Op::select_and_scatter), 1) << glia::to_text(s);
    expect_same_bits(g, s, {kX, kSource});
  };
  auto scatter = [](const Expr& x, const Expr& s) {
    return glia::select_and_scatter(x, s, {1, 2, 2, 1});
  };
  // A window axis left out of the sum.
  kept([&](const Expr& x, const Expr& s) { return glia::sum(scatter(x, s), {0, 1}); });
  kept([&](const Expr& x, const Expr& s) { return glia::sum(masked(x, scatter(x, s)), {0, 2}); });
  // Masked where nothing was scattered by another value than 0.
  kept([&](const Expr& x, const Expr& s) {
    return glia::sum(masked(x, scatter(x, s), 0, 1), {0, 1, 2});
  });
  // Masked by another tensor than the one pooled.
  kept([&](const Expr& x, const Expr& s) {
    return glia::sum(masked(glia::neg(x), scatter(x, s)), {0, 1, 2});
  });
  // Masked, where x is pooled over other windows only: pooling anew would read x.
  Graph alone = two_inputs(
      [&](const Expr& x, const Expr& s) {
        Expr pooled = glia::window_max(x, {1, 4, 4, 1});
        return std::vector<Expr>{glia::sum(masked(x, scatter(x, s)), {0, 1, 2}), pooled};
      },
      kX, kSource);
  EXPECT_EQ(count_ops(simplified(alone), Op::select_and_scatter), 1);
  // Masked by ge, which a window of zeros passes at its chosen position only.
  kept([&](const Expr& x, const Expr& s) {
    return glia::sum(glia::select(glia::greater_equal(x, 0.0), scatter(x, s), 0.0), {0, 1, 2});
  });
}

namespace {

// relu as the layers write it (layers/src/activation.cpp): its gradient masked by the output.
Expr layer_relu(const Expr& x) {
  Expr y = glia::relu(x);
  return glia::custom_grad(y, {x}, [y](const Expr& cotangent) {
    return std::vector<Expr>{glia::select(glia::greater(y, 0.0), cotangent, 0.0)};
  });
}

}  // namespace

// A convolution's bias gradient under relu and a max pool, beside the loss as in a training
// step: optimize leaves no scatter where only the bias's gradient is asked for, and the
// gradient is the interpreter's on the original graph.
TEST(ScatterSums, BiasGradientUnderMaxPoolReadsThePooledGradient) {
  Tensor x = glia::testing::counting({2, 4, 6, 3});
  Tensor bias = f32s({-20, -70, 0}, {3});
  Tensor weight = glia::testing::counting({2, 2, 3, 3});
  Graph g = glia::trace(
      [](const std::vector<Expr>& in) {
        Expr y = layer_relu(in[0] + glia::broadcast(in[1], in[0].shape(), {3}));
        Expr pooled = glia::window_max(y, {1, 2, 2, 1});
        Expr loss = glia::sum(pooled * in[2]);
        return std::vector<Expr>{glia::gradients(loss, {in[1]})[0], loss};
      },
      {x.type(), bias.type(), weight.type()});
  Graph o = glia::optimize(g);
  EXPECT_EQ(count_ops(o, Op::select_and_scatter), 0) << glia::to_text(o);
  std::vector<Tensor> in{x, bias, weight};
  Tensor got = glia::interpret(o, in)[0];
  expect_same_bits(g, o, in);
  // By hand: channel c of pixel p is 3p + c (+ bias); each 2x2 window's maximum is its
  // last pixel, kept where over 0; the gradient sums the weights of the kept windows.
  std::vector<double> want(3, 0);
  for (int n = 0; n < 2; ++n)
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 3; ++j)
        for (int c = 0; c < 3; ++c) {
          int pixel = n * 24 + (2 * i + 1) * 6 + 2 * j + 1;
          if (3 * pixel + c + bias.element(c) > 0) want[c] += ((n * 2 + i) * 3 + j) * 3 + c;
        }
  glia::testing::expect_tensor(got, glia::f32, {3}, want);
}
