// Dropout layers: identity in inference mode; in train mode the dropped fraction, the
// scaling of kept values, reproducibility from the key, whole-channel masks, alpha
// dropout's mean and variance, and option errors.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "glia/layers.hpp"

namespace glia {
namespace {

using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

constexpr double kAlphaPrime = 1.7580993408473766;  // SELU's alpha * scale

Tensor normal_tensor(const Shape& shape, unsigned seed = 5) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0, 1);
  std::vector<float> v(static_cast<std::size_t>(shape.numel()));
  for (float& x : v) x = dist(rng);
  return Tensor::from<float>(v, shape);
}

DropoutOptions with_rate(double rate) {
  DropoutOptions o;
  o.rate = rate;
  return o;
}

Tensor train(const Model& m, const Tensor& x, std::uint64_t seed) {
  // No parameters: an empty state.
  return build(m).predict.train(ModelState{}, x, random::key(seed)).output;
}

TEST(Dropout, InferenceIsIdentity) {
  Tensor x = normal_tensor({8, 5});
  Model in = input("x", {-1, 5});
  for (auto layer_fn : {dropout, alpha_dropout, feature_alpha_dropout, spatial_dropout}) {
    Model m = layer_fn(in, with_rate(0.5));
    EXPECT_TRUE(m.node().stochastic);
    EXPECT_TRUE(equal(build(m).predict(ModelState{}, x), x)) << m.node().type;
  }
}

TEST(Dropout, TrainDropsAboutRateAndScalesTheRest) {
  Model m = dropout(input("x", {100, 100}), with_rate(0.3));
  EXPECT_EQ(resolve_layers(m).back().name, "dropout_0");
  std::vector<float> out = train(m, Tensor::ones({100, 100}), 1).to_vector<float>();
  int zeros = 0;
  for (float v : out) {
    if (v == 0) {
      ++zeros;
      continue;
    }
    EXPECT_FLOAT_EQ(v, static_cast<float>(1 / 0.7));
  }
  // Binomial(10000, 0.3): the standard deviation of the fraction is 0.0046.
  EXPECT_NEAR(zeros / 1e4, 0.3, 0.025);
}

TEST(Dropout, MaskFollowsTheKey) {
  Model m = dropout(input("x", {50, 40}), with_rate(0.5));
  Tensor x = normal_tensor({50, 40});
  Tensor a = train(m, x, 7), b = train(m, x, 7), c = train(m, x, 8);
  EXPECT_TRUE(equal(a, b));
  EXPECT_FALSE(equal(a, c));
  // Two dropout layers in one model draw different masks from the same key.
  Model in = input("x", {50, 40});
  Model both = layer("stack", {dropout(in), dropout(in)},
                     [](LayerContext& ctx) { return stack(ctx.inputs()); });
  std::vector<float> v = train(both, Tensor::ones({50, 40}), 7).to_vector<float>();
  int differ = 0;
  for (std::size_t i = 0; i < 2000; ++i) differ += (v[i] == 0) != (v[2000 + i] == 0);
  EXPECT_GT(differ, 500);  // about half of the positions for independent masks
}

TEST(Dropout, RateZeroIsIdentityInTrainMode) {
  Tensor x = normal_tensor({4, 6});
  for (auto layer_fn : {dropout, alpha_dropout, feature_alpha_dropout, spatial_dropout})
    EXPECT_TRUE(equal(train(layer_fn(input("x", {4, 6}), with_rate(0.0)), x, 3), x));
}

TEST(Dropout, SpatialDropoutDropsWholeChannels) {
  // [N=4, H=5, W=5, C=8]: 32 draws, each covering 25 positions.
  Tensor x = Tensor::ones({4, 5, 5, 8});
  std::vector<float> out =
      train(spatial_dropout(input("x", {4, 5, 5, 8}), with_rate(0.5)), x, 11).to_vector<float>();
  int dropped = 0;
  for (int n = 0; n < 4; ++n)
    for (int c = 0; c < 8; ++c) {
      float first = out[static_cast<std::size_t>(n * 200 + c)];
      EXPECT_TRUE(first == 0.0f || first == 2.0f) << first;
      for (int hw = 0; hw < 25; ++hw)
        EXPECT_EQ(out[static_cast<std::size_t>(n * 200 + hw * 8 + c)], first);
      dropped += first == 0.0f;
    }
  EXPECT_GT(dropped, 0);
  EXPECT_LT(dropped, 32);
}

// PyTorch's alpha dropout: y = a * (x kept, or -alpha' dropped) + alpha' * a * rate.
TEST(Dropout, AlphaDropoutKeepsMeanAndVariance) {
  const double rate = 0.2;
  const double a = 1 / std::sqrt((kAlphaPrime * kAlphaPrime * rate + 1) * (1 - rate));
  const double b = kAlphaPrime * a * rate;
  Tensor x = normal_tensor({100, 100});
  std::vector<float> in = x.to_vector<float>();
  std::vector<float> out =
      train(alpha_dropout(input("x", {100, 100}), with_rate(rate)), x, 21).to_vector<float>();
  double s = 0, s2 = 0;
  int dropped = 0;
  for (std::size_t i = 0; i < out.size(); ++i) {
    double kept = a * in[i] + b, gone = -a * kAlphaPrime + b;
    bool is_kept = std::abs(out[i] - kept) < 1e-5, is_gone = std::abs(out[i] - gone) < 1e-5;
    EXPECT_TRUE(is_kept || is_gone) << i << ": " << out[i];
    dropped += !is_kept;
    s += out[i];
    s2 += out[i] * out[i];
  }
  double mean = s / 1e4, var = s2 / 1e4 - mean * mean;
  EXPECT_NEAR(dropped / 1e4, rate, 0.02);
  EXPECT_NEAR(mean, 0.0, 0.05);
  EXPECT_NEAR(var, 1.0, 0.07);
}

TEST(Dropout, FeatureAlphaDropoutDropsWholeChannels) {
  const double rate = 0.5;
  const double a = 1 / std::sqrt((kAlphaPrime * kAlphaPrime * rate + 1) * (1 - rate));
  const double gone = -a * kAlphaPrime + kAlphaPrime * a * rate;
  Tensor x = normal_tensor({3, 10, 6});
  std::vector<float> in = x.to_vector<float>();
  std::vector<float> out =
      train(feature_alpha_dropout(input("x", {3, 10, 6}), with_rate(rate)), x, 4)
          .to_vector<float>();
  int dropped = 0;
  for (int n = 0; n < 3; ++n)
    for (int c = 0; c < 6; ++c) {
      bool first_gone = std::abs(out[static_cast<std::size_t>(n * 60 + c)] - gone) < 1e-5;
      dropped += first_gone;
      for (int l = 0; l < 10; ++l) {
        std::size_t i = static_cast<std::size_t>(n * 60 + l * 6 + c);
        double want = first_gone ? gone : a * in[i] + kAlphaPrime * a * rate;
        EXPECT_NEAR(out[i], want, 1e-5);
      }
    }
  EXPECT_GT(dropped, 0);
  EXPECT_LT(dropped, 18);
}

TEST(Dropout, OptionAndInputErrors) {
  Model x = input("x", {-1, 4});
  EXPECT_THAT([&] { dropout(x, with_rate(1.0)); },
              ThrowsMessage<Error>(HasSubstr("dropout: rate must be in [0, 1), got 1")));
  EXPECT_THAT([&] { spatial_dropout(x, with_rate(-0.1)); },
              ThrowsMessage<Error>(HasSubstr("spatial_dropout: rate must be in [0, 1)")));
  EXPECT_THAT([&] { alpha_dropout(x, with_rate(1.5)); },
              ThrowsMessage<Error>(HasSubstr("alpha_dropout: rate must be in [0, 1)")));
  EXPECT_THAT([&] { feature_alpha_dropout(x, with_rate(2)); },
              ThrowsMessage<Error>(HasSubstr("feature_alpha_dropout: rate must be in [0, 1)")));
  // Whole-channel dropout needs [N, ..., C].
  Model v = spatial_dropout(input("v", {5}), with_rate(0.5));
  EXPECT_THAT([&] { train(v, Tensor::ones({5}), 0); },
              ThrowsMessage<Error>(HasSubstr("expected an input of rank >= 2")));
}

}  // namespace
}  // namespace glia
