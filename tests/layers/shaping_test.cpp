// Shape layers: flatten, reshape, transpose, pad and resize (nearest and bilinear, as
// PyTorch computes them), against hand-computed values; option and shape errors.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "autograd/gradcheck.hpp"
#include "glia/layers.hpp"

namespace glia {
namespace {

using ::testing::ElementsAreArray;
using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

// The model (whose input is "x", declared with x's own shape and a run-time batch) on x.
Tensor run(const Model& m, const Tensor& x) {
  auto [init, predict] = build(m);
  ModelState s = init(InputTypes{{"x", x.type()}}, 0);
  return predict(s, x);
}

Model input_like(const Tensor& x) {
  std::vector<std::int64_t> dims = x.shape().dims();
  dims[0] = -1;
  return input("x", dims, x.dtype());
}

std::vector<float> values(const Tensor& t) { return t.to_vector<float>(); }

Tensor counting(const Shape& shape, DType dtype = DType::f32) {
  return Tensor::iota(shape, std::nullopt, dtype);
}

TEST(Shaping, FlattenKeepsTheBatch) {
  Tensor x = counting({2, 2, 3});
  Tensor y = run(flatten(input_like(x)), x);
  EXPECT_EQ(y.shape(), (Shape{2, 6}));
  EXPECT_THAT(values(y), ElementsAreArray({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}));
  // A rank-1 input becomes one feature per example.
  Tensor v = counting({3}, DType::i32);
  Tensor w = run(flatten(input_like(v)), v);
  EXPECT_EQ(w.type(), (TensorType{DType::i32, {3, 1}}));
}

TEST(Shaping, Reshape) {
  Tensor x = counting({2, 6});
  Tensor y = run(reshape(input_like(x), {3, -1}), x);
  EXPECT_EQ(y.shape(), (Shape{2, 3, 2}));
  EXPECT_THAT(values(y), ElementsAreArray({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}));
  EXPECT_EQ(run(reshape(input_like(x), {2, 1, 3}), x).shape(), (Shape{2, 2, 1, 3}));
}

TEST(Shaping, ReshapeErrors) {
  Model x = input("x", {-1, 6});
  EXPECT_THAT(
      [&] {
        reshape(x, {-1, -1});
      },
      ThrowsMessage<Error>(HasSubstr("reshape: at most one -1 is allowed in [-1, -1]")));
  EXPECT_THAT(
      [&] {
        reshape(x, {-2, 3});
      },
      ThrowsMessage<Error>(HasSubstr("reshape: dimension -2")));
  for (std::vector<std::int64_t> bad : {std::vector<std::int64_t>{4}, {4, -1}}) {
    auto [init, predict] = build(reshape(x, bad));
    EXPECT_THAT([&] { init(0); },
                ThrowsMessage<Error>(
                    HasSubstr("layer 'reshape_0' (reshape) with input(s) f32[1][6]: reshape: "
                              "cannot reshape [6] (6 elements per example) to")));
  }
}

TEST(Shaping, Transpose) {
  // x has shape [1][2][3][2] and x[0][i][j][k] = 6 i + 2 j + k.
  Tensor x = counting({1, 2, 3, 2});
  Tensor y = run(transpose(input_like(x), {2, 0, 1}), x);  // [1][2][2][3]: y[k][i][j]
  ASSERT_EQ(y.shape(), (Shape{1, 2, 2, 3}));
  std::vector<float> want;
  for (int k = 0; k < 2; ++k)
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 3; ++j) want.push_back(static_cast<float>(6 * i + 2 * j + k));
  EXPECT_THAT(values(y), ElementsAreArray(want));
  // An empty permutation reverses the non-batch axes: [2][3] -> [3][2], a matrix transpose.
  Tensor m = counting({1, 2, 3});
  Tensor t = run(transpose(input_like(m), {}), m);
  EXPECT_EQ(t.shape(), (Shape{1, 3, 2}));
  EXPECT_THAT(values(t), ElementsAreArray({0, 3, 1, 4, 2, 5}));
}

TEST(Shaping, TransposeErrors) {
  Model x = input("x", {-1, 2, 3});
  EXPECT_THAT(
      [&] {
        transpose(x, {0, 0});
      },
      ThrowsMessage<Error>(HasSubstr("transpose: [0, 0] is not a permutation")));
  EXPECT_THAT(
      [&] {
        transpose(x, {1, 2});
      },
      ThrowsMessage<Error>(HasSubstr("transpose: [1, 2] is not a permutation")));
  auto [init, predict] = build(transpose(x, {2, 1, 0}));
  EXPECT_THAT([&] { init(0); },
              ThrowsMessage<Error>(HasSubstr("layer 'transpose_0' (transpose) with input(s) "
                                             "f32[1][2][3]: transpose: the permutation [2, 1, 0] "
                                             "has 3 axes, the input has 2 non-batch axes")));
}

TEST(Shaping, Pad) {
  Tensor x = Tensor::from<float>({1, 2, 3, 4}, Shape{2, 2});
  Tensor y = run(pad(input_like(x), {{1, 2}}, 9.0), x);
  EXPECT_EQ(y.shape(), (Shape{2, 5}));
  EXPECT_THAT(values(y), ElementsAreArray({9, 1, 2, 9, 9, 9, 3, 4, 9, 9}));
  Tensor img = Tensor::from<float>({1, 2, 3, 4}, Shape{1, 2, 2});
  Tensor z = run(pad(input_like(img), {{0, 1}, {1, 0}}), img);  // zeros by default
  EXPECT_EQ(z.shape(), (Shape{1, 3, 3}));
  EXPECT_THAT(values(z), ElementsAreArray({0, 1, 2, 0, 3, 4, 0, 0, 0}));
}

TEST(Shaping, PadErrors) {
  Model x = input("x", {-1, 2});
  EXPECT_THAT(
      [&] {
        pad(x, {{-1, 0}});
      },
      ThrowsMessage<Error>(HasSubstr("pad: padding must be non-negative, got (-1, 0)")));
  auto [init, predict] = build(pad(x, {{1, 1}, {1, 1}}));
  EXPECT_THAT([&] { init(0); },
              ThrowsMessage<Error>(
                  HasSubstr("pad: expected 1 (low, high) pairs, one per non-batch axis, got 2")));
}

TEST(Shaping, ResizeNearest) {
  // [N, H, W, C] = [1][2][2][1] -> [1][4][4][1]: each pixel becomes a 2x2 block.
  Tensor x = Tensor::from<float>({1, 2, 3, 4}, Shape{1, 2, 2, 1});
  Tensor y = run(resize(input_like(x), {4, 4}), x);
  EXPECT_EQ(y.shape(), (Shape{1, 4, 4, 1}));
  EXPECT_THAT(values(y), ElementsAreArray({1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4}));
  // Half-pixel centres: source floor((dst + 0.5) * in / out).
  // 1-D, 3 -> 2: floor(0.75) = 0, floor(2.25) = 2;  2 -> 3: floor(1/3), floor(1), floor(5/3).
  Tensor v = Tensor::from<float>({10, 20, 30}, Shape{1, 3, 1});
  EXPECT_THAT(values(run(resize(input_like(v), {2}), v)), ElementsAreArray({10, 30}));
  Tensor u = Tensor::from<float>({10, 20}, Shape{1, 2, 1});
  EXPECT_THAT(values(run(resize(input_like(u), {3}), u)), ElementsAreArray({10, 20, 20}));
  // 5 -> 3: floor(5/6) = 0, floor(2.5) = 2, floor(25/6) = 4. Integers resize too.
  Tensor w = Tensor::from<std::int32_t>({0, 1, 2, 3, 4}, Shape{1, 5, 1});
  Tensor r = run(resize(input_like(w), {3}), w);
  EXPECT_EQ(r.dtype(), DType::i32);
  EXPECT_THAT(values(r), ElementsAreArray({0, 2, 4}));
}

TEST(Shaping, ResizeNearestChannelsFirstKeepsChannels) {
  // [N, C, W] = [1][2][2]: channel 0 = {1, 2}, channel 1 = {5, 6}; W 2 -> 4.
  Tensor x = Tensor::from<float>({1, 2, 5, 6}, Shape{1, 2, 2});
  Tensor y = run(resize(input_like(x), {4}, {.channels = Channels::first}), x);
  EXPECT_EQ(y.shape(), (Shape{1, 2, 4}));
  EXPECT_THAT(values(y), ElementsAreArray({1, 1, 2, 2, 5, 5, 6, 6}));
}

TEST(Shaping, ResizeBilinear) {
  // 2 -> 4 with half-pixel centres: src = (dst + 0.5) / 2 - 0.5 = -0.25 (clamped to 0),
  // 0.25, 0.75, 1.25 (upper neighbour clamped to the edge): weights of the right pixel
  // 0, 0.25, 0.75, 1.
  Tensor v = Tensor::from<float>({0, 8}, Shape{1, 2, 1});
  EXPECT_THAT(values(run(resize(input_like(v), {4}, {.method = "bilinear"}), v)),
              ElementsAreArray({0, 2, 6, 8}));
  // 2-D: value(fy, fx) = 1 + 2 fy + fx with f in {0, 0.25, 0.75, 1}.
  Tensor x = Tensor::from<float>({1, 2, 3, 4}, Shape{1, 2, 2, 1});
  Tensor y = run(resize(input_like(x), {4, 4}, {.method = "bilinear"}), x);
  ASSERT_EQ(y.shape(), (Shape{1, 4, 4, 1}));
  const double f[] = {0, 0.25, 0.75, 1};
  std::vector<float> want;
  for (double fy : f)
    for (double fx : f) want.push_back(static_cast<float>(1 + 2 * fy + fx));
  EXPECT_THAT(values(y), ElementsAreArray(want));
  // 4 -> 2: src = 2 (dst + 0.5) - 0.5 = 0.5, 2.5: the means of neighbouring pairs.
  Tensor d = Tensor::from<float>({0, 1, 2, 3}, Shape{1, 4, 1});
  EXPECT_THAT(values(run(resize(input_like(d), {2}, {.method = "bilinear"}), d)),
              ElementsAreArray({0.5, 2.5}));
  // 3 -> 2 in f64: src = 1.5 (dst + 0.5) - 0.5 = 0.25, 1.75.
  Tensor e = Tensor::from<double>({0, 4, 8}, Shape{1, 3, 1});
  Tensor r = run(resize(input_like(e), {2}, {.method = "bilinear"}), e);
  EXPECT_EQ(r.dtype(), DType::f64);
  EXPECT_NEAR(r.element(0), 1.0, 1e-6);
  EXPECT_NEAR(r.element(1), 7.0, 1e-6);
}

TEST(Shaping, ResizeBilinearChannelsFirst) {
  // [1][2][1][2] (N, C, H, W): W 2 -> 4 per channel, H 1 -> 1.
  Tensor x = Tensor::from<float>({0, 4, 10, 14}, Shape{1, 2, 1, 2});
  Tensor y =
      run(resize(input_like(x), {1, 4}, {.method = "bilinear", .channels = Channels::first}), x);
  EXPECT_EQ(y.shape(), (Shape{1, 2, 1, 4}));
  EXPECT_THAT(values(y), ElementsAreArray({0, 1, 3, 4, 10, 11, 13, 14}));
}

TEST(Shaping, ResizeErrors) {
  Model x = input("x", {-1, 4, 4, 1});
  EXPECT_THAT(
      [&] {
        resize(x, {2, 2}, {.method = "bicubic"});
      },
      ThrowsMessage<Error>(HasSubstr("resize: unknown method 'bicubic'")));
  EXPECT_THAT(
      [&] {
        resize(x, {0, 2});
      },
      ThrowsMessage<Error>(HasSubstr("resize: output sizes must be positive")));
  auto [init, predict] = build(resize(x, {2}));
  EXPECT_THAT([&] { init(0); }, ThrowsMessage<Error>(HasSubstr(
                                    "layer 'resize_0' (resize) with input(s) "
                                    "f32[1][4][4][1]: resize: expected an input of rank 3")));
  Model ints = input("x", {-1, 4, 1}, DType::i32);
  EXPECT_THAT([&] { build(resize(ints, {2}, {.method = "bilinear"})).init(0); },
              ThrowsMessage<Error>(HasSubstr("bilinear needs a floating-point input, got i32")));
}

TEST(Shaping, GradientsFlowThroughResizeAndPad) {
  Model x = input("x", {-1, 3, 2, 1}, DType::f64);
  Model m = pad(resize(x, {5, 3}, {.method = "bilinear"}), {{1, 0}, {0, 1}, {0, 0}});
  Tensor weights = testing::random_tensor({2, 6, 4, 1}, -1, 1, 3);
  testing::expect_gradients_match(
      [&](const std::vector<Expr>& in) {
        Expr y = apply(m, {}, {}, {{"x", in[0]}}).output;
        return sum(y * Expr(weights));
      },
      {testing::random_tensor({2, 3, 2, 1})});
}

}  // namespace
}  // namespace glia
