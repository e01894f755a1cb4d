// The README's "Building models" examples (the MNIST MLP and the small CNN), kept here
// so they keep compiling and running; the checks below them are the test's own.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>

#include "glia/layers.hpp"
#include "glia/layers/convolution.hpp"
#include "glia/layers/dropout.hpp"
#include "glia/layers/pooling.hpp"

namespace {

using ::testing::HasSubstr;

TEST(ReadmeModels, MnistMlp) {
  std::ostringstream out;  // std::cout in the README
  using namespace glia;
  // ---- README: the MLP ----
  Model x = input("pixels", {-1, 784});
  Model h = dense(x, 128, {.activation = "relu"});
  h = dropout(h, {.rate = 0.5});
  Model mlp = dense(h, 10, {.activation = "softmax"});

  auto [init, predict] = build(mlp);
  ModelState state = init(/*seed=*/0);
  out << summary(mlp);

  Tensor images = Tensor::full({32, 784}, 0.5);
  Tensor probs = predict(state, images);                         // f32[32][10], dropout off
  TrainResult t = predict.train(state, images, random::key(1));  // dropout on
  // ---- end ----

  // 784 * 128 + 128 and 128 * 10 + 10 parameters.
  EXPECT_EQ(state.params.at("dense_0").at("kernel").shape(), (Shape{784, 128}));
  EXPECT_EQ(state.params.at("dense_1").at("bias").shape(), (Shape{10}));
  EXPECT_THAT(out.str(), HasSubstr("| dropout_0 (dropout) "));
  EXPECT_THAT(out.str(), HasSubstr("Total parameters: 101770\n"));
  for (const Tensor* p : {&probs, &t.output}) {
    ASSERT_EQ(p->shape(), (Shape{32, 10}));
    std::vector<float> v = p->to_vector<float>();
    for (int r = 0; r < 32; ++r) {
      double total = 0;
      for (int c = 0; c < 10; ++c) total += v[static_cast<std::size_t>(r * 10 + c)];
      EXPECT_NEAR(total, 1.0, 1e-5);
    }
  }
}

TEST(ReadmeModels, SmallCnn) {
  std::ostringstream out;  // std::cout in the README
  using namespace glia;
  // ---- README: the CNN ----
  Model image = input("image", {-1, 28, 28, 1});
  Model y = conv(image, 32, {.kernel_size = {3, 3}, .activation = "relu"});
  y = max_pool(y, {.kernel_size = {2, 2}});
  y = conv(y, 64, {.kernel_size = {3, 3}, .activation = "relu"});
  y = max_pool(y, {.kernel_size = {2, 2}});
  y = dense(flatten(y), 128, {.activation = "relu"});
  Model cnn = dense(y, 10);

  auto [init, predict] = build(cnn);
  ModelState state = init(/*seed=*/0);
  out << summary(cnn);
  Tensor logits = predict(state, Tensor::full({8, 28, 28, 1}, 0.5));  // f32[8][10]
  // ---- end ----

  // 28 -> conv 26 -> pool 13 -> conv 11 -> pool 5: 5 * 5 * 64 = 1600 features. Parameters:
  // 3*3*1*32 + 32 = 320, 3*3*32*64 + 64 = 18496, 1600*128 + 128 = 204928, 128*10 + 10 = 1290.
  std::string s = out.str();
  EXPECT_THAT(s, HasSubstr("| conv_0 (conv) "));
  EXPECT_THAT(s, HasSubstr("f32[1][26][26][32]"));
  EXPECT_THAT(s, HasSubstr("f32[1][13][13][32]"));
  EXPECT_THAT(s, HasSubstr("f32[1][11][11][64]"));
  EXPECT_THAT(s, HasSubstr("f32[1][5][5][64]"));
  EXPECT_THAT(s, HasSubstr("| flatten_0 (flatten) "));
  EXPECT_THAT(s, HasSubstr("f32[1][1600]"));
  EXPECT_THAT(s, HasSubstr("Total parameters: 225034\n"));
  EXPECT_EQ(state.params.at("conv_1").at("kernel").shape(), (Shape{3, 3, 32, 64}));
  EXPECT_EQ(state.params.at("dense_0").at("kernel").shape(), (Shape{1600, 128}));
  ASSERT_EQ(logits.shape(), (Shape{8, 10}));
  // Every image is the same, so every row of logits is too, within float rounding: a GEMM
  // may sum a batch's last rows in another order (oneDNN's AVX2 sgemm does, in its tail
  // block: those rows came out 6-24 ulps away from the first ones, ~2e-8).
  std::vector<float> v = logits.to_vector<float>();
  for (std::size_t i = 10; i < v.size(); ++i) {
    EXPECT_TRUE(std::isfinite(v[i]));
    EXPECT_NEAR(v[i], v[i % 10], 1e-6);
  }
}

}  // namespace
