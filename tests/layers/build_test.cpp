// build -> {init, predict}: naming, parameters, shapes, modes and errors.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "glia/layers.hpp"

namespace glia {
namespace {

TEST(Build, DenseModelInitAndPredict) {
  Model x = input("data", {-1, 3});
  Model y = dense(dense(x, 4, {.activation = "relu"}), 2);
  auto [init, predict] = build(y);
  ModelState s = init(0);
  ASSERT_EQ(s.params.size(), 2u);
  EXPECT_EQ(s.params.at("dense_0").at("kernel").shape(), (Shape{3, 4}));
  EXPECT_EQ(s.params.at("dense_1").at("bias").shape(), (Shape{2}));
  Tensor in = Tensor::from<float>({1, 2, 3, -1, 0, 1}, Shape{2, 3});
  Tensor out = predict(s, in);
  EXPECT_EQ(out.shape(), (Shape{2, 2}));
  // Reference: the same computation written out with the drawn parameters.
  auto k0 = s.params.at("dense_0").at("kernel").to_vector<float>();
  auto k1 = s.params.at("dense_1").at("kernel").to_vector<float>();
  auto v = in.to_vector<float>();
  for (int r = 0; r < 2; ++r)
    for (int o = 0; o < 2; ++o) {
      double acc = 0;
      for (int h = 0; h < 4; ++h) {
        double z = 0;
        for (int i = 0; i < 3; ++i) z += v[r * 3 + i] * k0[i * 4 + h];
        acc += std::max(z, 0.0) * k1[h * 2 + o];
      }
      EXPECT_NEAR(out.to_vector<float>()[r * 2 + o], acc, 1e-5);
    }
  // Same seed, same parameters; another seed, others.
  EXPECT_TRUE(
      equal(init(0).params.at("dense_0").at("kernel"), s.params.at("dense_0").at("kernel")));
  EXPECT_FALSE(
      equal(init(1).params.at("dense_0").at("kernel"), s.params.at("dense_0").at("kernel")));
}

TEST(Build, ShapeMismatchNamesTheLayer) {
  Model x = input("data", {-1, 3});
  Model y = dense(x, 4);
  auto [init, predict] = build(y);
  ModelState s = init(0);
  EXPECT_THAT(
      [&] {
        predict(s, Tensor::zeros({2, 5}));
      },
      ::testing::ThrowsMessage<Error>(
          ::testing::HasSubstr("input 'data' expects f32[?][3], got f32[2][5]")));
  ModelState other = build(dense(input("data", {-1, 5}), 4)).init(0);
  EXPECT_THAT(
      [&] {
        predict(other, Tensor::zeros({2, 3}));
      },
      ::testing::ThrowsMessage<Error>(
          ::testing::HasSubstr("layer 'dense_0' (dense) with input(s) f32[2][3]: parameter "
                               "'kernel' is f32[5][4], expected f32[3][4]")));
}

}  // namespace
}  // namespace glia
