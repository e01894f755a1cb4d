// The training step on the `cpu` backend: buffer donation (parameters updated in place, a
// warm step allocates no tensor storage, a state someone still holds is never written)
// and training that ends where the interpreter's does.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <set>

#include "glia/compiler/registry.hpp"
#include "glia/layers/convolution.hpp"
#include "glia/layers/dropout.hpp"
#include "glia/layers/linear.hpp"
#include "glia/layers/pooling.hpp"
#include "glia/layers/shaping.hpp"
#include "glia/optim/losses.hpp"
#include "glia/optim/optimizers.hpp"
#include "glia/optim/step.hpp"

namespace glia {
namespace {

bool cpu_built() {
  auto names = backend_names();
  return std::find(names.begin(), names.end(), "cpu") != names.end();
}

Model mlp() {
  Model x = input("x", {-1, 20});
  Model h = dropout(dense(x, 16, {.activation = "relu"}), {.rate = 0.25});
  return dense(h, 3, {.activation = "softmax"});
}

Expr cross_entropy(const Expr& y, const Expr& p) { return losses::categorical_cross_entropy(y, p); }

// Three separable classes: class c has feature c raised by 2.
struct Data {
  Tensor x, y;
};
Data blobs(std::int64_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> noise(0.0f, 0.5f);
  std::vector<float> x(static_cast<std::size_t>(n * 20)), y(static_cast<std::size_t>(n * 3), 0.0f);
  for (std::int64_t i = 0; i < n; ++i) {
    int c = static_cast<int>(i % 3);
    for (int j = 0; j < 20; ++j) x[std::size_t(i * 20 + j)] = noise(rng) + (j == c ? 2.0f : 0.0f);
    y[std::size_t(i * 3 + c)] = 1.0f;
  }
  return {Tensor::from(x, Shape{n, 20}), Tensor::from(y, Shape{n, 3})};
}

double accuracy(const TrainStep& step, const TrainState& s, const Data& d) {
  Tensor p = build(step.model(), {.backend = "interp"}).predict(s.model, d.x);
  std::vector<float> pv = p.to_vector<float>(), yv = d.y.to_vector<float>();
  int right = 0;
  for (std::int64_t i = 0; i < d.x.shape()[0]; ++i) {
    auto row = pv.begin() + i * 3;
    auto truth = yv.begin() + i * 3;
    right += std::max_element(row, row + 3) - row == std::max_element(truth, truth + 3) - truth;
  }
  return double(right) / double(d.x.shape()[0]);
}

TEST(TrainStepCpu, AWarmStepAllocatesNothingAndUpdatesInPlace) {
  if (!cpu_built()) GTEST_SKIP() << "glia was built without oneDNN";
  TrainStep step(mlp(), cross_entropy, optimizers::adam(1e-3), {.backend = "cpu"});
  TrainState s = step.init(0);
  Data d = blobs(32, 1);
  for (int i = 0; i < 3; ++i) step(s, d.x, d.y);  // warm-up: compile, first buffers
  std::set<const void*> storages;
  AllocationStats before = allocation_stats();
  for (int i = 0; i < 5; ++i) {
    step(s, d.x, d.y);
    storages.insert(s.model.params.at("dense_0").at("kernel").raw_data());
  }
  AllocationStats after = allocation_stats();
  EXPECT_EQ(after.count - before.count, 0);
  EXPECT_EQ(after.bytes - before.bytes, 0);
  // Written in place of the donated kernel, or into one of two buffers used in turn.
  EXPECT_LE(storages.size(), 2u);
  // One signature, traced and compiled once.
  EXPECT_EQ(step.cache_stats().misses, 1);
  EXPECT_EQ(step.cache_stats().hits, 7);
  EXPECT_EQ(s.step, 8);
}

TEST(TrainStepCpu, AStateSomeoneHoldsIsNeverWritten) {
  if (!cpu_built()) GTEST_SKIP() << "glia was built without oneDNN";
  TrainStep step(mlp(), cross_entropy, optimizers::adam(1e-2), {.backend = "cpu"});
  TrainState s = step.init(0);
  Data d = blobs(32, 2);
  step(s, d.x, d.y);
  TrainState kept = s;  // shares every tensor: the next step may not donate them
  std::vector<float> before = kept.model.params.at("dense_0").at("kernel").to_vector<float>();
  step(s, d.x, d.y);
  EXPECT_EQ(kept.model.params.at("dense_0").at("kernel").to_vector<float>(), before);
  EXPECT_NE(s.model.params.at("dense_0").at("kernel").to_vector<float>(), before);
}

TEST(TrainStepCpu, ReachesTheInterpretersAccuracy) {
  if (!cpu_built()) GTEST_SKIP() << "glia was built without oneDNN";
  Data train = blobs(240, 3), test = blobs(300, 4);
  double acc[2];
  std::vector<float> final_bias[2];
  const char* backends[2] = {"interp", "cpu"};
  for (int b = 0; b < 2; ++b) {
    TrainStep step(mlp(), cross_entropy, optimizers::adam(1e-2), {.backend = backends[b]});
    TrainState s = step.init(7);
    std::vector<float> xs = train.x.to_vector<float>(), ys = train.y.to_vector<float>();
    for (int epoch = 0; epoch < 4; ++epoch)
      for (std::int64_t i = 0; i < 240; i += 24) {
        Tensor xb = Tensor::from(
            std::vector<float>(xs.begin() + i * 20, xs.begin() + (i + 24) * 20), Shape{24, 20});
        Tensor yb = Tensor::from(std::vector<float>(ys.begin() + i * 3, ys.begin() + (i + 24) * 3),
                                 Shape{24, 3});
        step(s, xb, yb);
      }
    acc[b] = accuracy(step, s, test);
    final_bias[b] = s.model.params.at("dense_1").at("bias").to_vector<float>();
  }
  EXPECT_GT(acc[0], 0.9);
  EXPECT_NEAR(acc[1], acc[0], 0.02);
  // Same seed, same batches, same dropout masks: the runs differ by rounding only.
  for (std::size_t i = 0; i < final_bias[0].size(); ++i)
    EXPECT_NEAR(final_bias[1][i], final_bias[0][i], 1e-3);
}

// A relu's adjoint reads the relu's output (Axon's and PyTorch's gradient), so the
// training step keeps neither the pre-activation nor a mask: the relu runs as the
// convolution's and the dense layer's epilogue, no kernel writes a mask or a tensor of
// zeros, and the pooling's adjoint and the bias gradients read the relu's output. Here
// the convolution (one channel in) runs fused with its pooling, and the adjoint with
// relu's mask inside the kernel gradient (cpu_conv_pool_test.cpp).
TEST(TrainStepCpu, ReluRunsAsTheEpilogueAndKeepsNoMask) {
  if (!cpu_built()) GTEST_SKIP() << "glia was built without oneDNN";
  Model x = input("x", {-1, 8, 8, 1});
  Model y = conv(x, 16, {.kernel_size = {3, 3}, .activation = "relu"});
  y = max_pool(y, {.kernel_size = {2, 2}});
  y = dense(flatten(y), 8, {.activation = "relu"});
  Model m = dense(y, 3, {.activation = "softmax"});
  TrainStep step(m, cross_entropy, optimizers::adam(1e-3), {.backend = "cpu"});
  TrainState s = step.init(1);
  std::vector<float> xs(4 * 64), ys(4 * 3, 0.0f);
  for (std::size_t i = 0; i < xs.size(); ++i) xs[i] = float(i % 13) / 13.0f - 0.4f;
  for (int i = 0; i < 4; ++i) ys[std::size_t(i * 3 + i % 3)] = 1.0f;
  Tensor xb = Tensor::from(xs, Shape{4, 8, 8, 1}), yb = Tensor::from(ys, Shape{4, 3});
  const std::string text = step.describe(s, xb, yb);
  const std::string kernels = text.substr(0, text.find("\ngraph "));
  EXPECT_NE(kernels.find("weights 16x1x3x3 + bias, relu, max_pool 2x2 -> 4x16x3x3"),
            std::string::npos)
      << kernels;
  EXPECT_NE(kernels.find("convolution_backward_weights through max_pool"), std::string::npos)
      << kernels;
  EXPECT_NE(kernels.find("+ bias, relu : f32[4][8]"), std::string::npos) << kernels;
  EXPECT_EQ(kernels.find("fused[broadcast max gt eq select]"), std::string::npos) << kernels;
  EXPECT_EQ(kernels.find("fused[broadcast] f32[4]"), std::string::npos) << kernels;
  // And it trains: the loss falls over a few steps on one batch.
  const double first = step(s, xb, yb).loss;
  double last = first;
  for (int i = 0; i < 20; ++i) last = step(s, xb, yb).loss;
  EXPECT_LT(last, first);
}

}  // namespace
}  // namespace glia
