// The `cuda` backend as users meet it: registered wherever its code is built, a clear
// "no CUDA device" where there is none, and — on a machine with a GPU — runs that match
// the interpreter with outputs on the device, host or device inputs, parameters donated
// in place from step to step with the step replayed as a CUDA graph, dropout bits equal
// to the cpu backend's, an index out of range reported, and concurrent runs. Tests that
// need a device skip with the driver's reason where there is none.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <thread>

#include "compiler/conv_layer_graph.hpp"
#include "core/test_util.hpp"
#include "glia/autograd/grad.hpp"
#include "glia/compiler.hpp"
#include "glia/compiler/cuda.hpp"
#include "glia/core/buffer.hpp"
#include "glia/core/expr.hpp"
#include "glia/core/interpreter.hpp"
#include "scoped_env.hpp"

namespace glia {
namespace {

bool registered() {
  auto names = backend_names();
  return std::find(names.begin(), names.end(), "cuda") != names.end();
}

#define REQUIRE_DEVICE()                                                               \
  if (!registered()) GTEST_SKIP() << "glia was built without the cuda backend's code"; \
  if (cuda::device_count() == 0) GTEST_SKIP() << cuda::unavailable()

Graph traced(const std::vector<TensorType>& types,
             const std::function<std::vector<Expr>(const std::vector<Expr>&)>& fn,
             const std::string& name) {
  return trace(fn, types, name);
}

Tensor random_tensor(const Shape& shape, std::uint64_t seed) {
  // A deterministic spread of values in [-1, 1) from a small LCG.
  std::vector<float> v(static_cast<std::size_t>(shape.numel()));
  std::uint64_t s = seed * 6364136223846793005ull + 1442695040888963407ull;
  for (float& x : v) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    x = float((s >> 40) % 2000) / 1000.0f - 1.0f;
  }
  return Tensor::from(v, shape);
}

TEST(CudaBackend, IsRegisteredWhereItsCodeIsBuilt) {
  EXPECT_EQ(registered(), cuda::built());
  EXPECT_EQ(default_backend() == "cuda", false) << "cuda is never the default: users ask for it";
}

TEST(CudaBackend, WithoutADeviceSaysSoClearly) {
  if (!registered()) GTEST_SKIP() << "glia was built without the cuda backend's code";
  if (cuda::device_count() > 0) GTEST_SKIP() << "this machine has a CUDA device";
  const std::string why = backend("cuda").unavailable();
  EXPECT_EQ(why.rfind("no CUDA device: ", 0), 0u) << why;
  EXPECT_EQ(why, cuda::unavailable());
  Graph g = traced(
      {{f32, {4}}}, [](const auto& x) { return std::vector<Expr>{x[0] * 2.0}; }, "double");
  EXPECT_GLIA_ERROR(compile_graph(g, "cuda"), "no CUDA device: ");
  // No allocator for the device is registered, so tensors cannot be moved there either.
  EXPECT_GLIA_ERROR(Tensor::zeros({4}).to(Device::cuda(0)), "cuda:0");
}

TEST(CudaBackend, DenseSoftmaxMatchesTheInterpreterWithOutputsOnTheDevice) {
  REQUIRE_DEVICE();
  Graph g = traced(
      {{f32, {64, 784}}, {f32, {784, 128}}, {f32, {128}}},
      [](const std::vector<Expr>& x) {
        Expr h = max(add(dot(x[0], x[1]), x[2]), 0.0);
        Expr e = exp(h - reduce_max(h, {1}, true));
        return std::vector<Expr>{e / sum(e, {1}, true)};
      },
      "dense_softmax");
  std::vector<Tensor> in = {random_tensor({64, 784}, 1), random_tensor({784, 128}, 2),
                            random_tensor({128}, 3)};
  auto exe = compile_graph(g, "cuda");
  std::vector<Tensor> got = exe->run(in);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].device(), Device::cuda(0));
  std::vector<Tensor> want = interpret(g, in);
  EXPECT_TRUE(allclose(got[0].to_host(), want[0], 1e-4, 1e-6)) << exe->describe();
  EXPECT_NE(exe->describe().find("cuBLASLt"), std::string::npos) << exe->describe();
  // Device inputs give the same result as host inputs.
  std::vector<Tensor> on_device;
  for (const Tensor& t : in) on_device.push_back(t.to(Device::cuda(0)));
  EXPECT_TRUE(equal(exe->run(on_device)[0].to_host(), got[0].to_host()));
}

TEST(CudaBackend, DonatedStateStaysInPlaceAndTheStepIsReplayedAsAGraph) {
  REQUIRE_DEVICE();
  // An optimizer-like step: p <- p - 0.5 * g, and the loss-like sum of p * p.
  Graph g = traced(
      {{f32, {1000}}, {f32, {1000}}},
      [](const std::vector<Expr>& x) {
        Expr p = x[0] - x[1] * 0.5;
        return std::vector<Expr>{p, sum(p * p)};
      },
      "step");
  auto exe = compile_graph(g, "cuda");
  Tensor grad = random_tensor({1000}, 7);
  std::vector<float> want = random_tensor({1000}, 8).to_vector<float>();
  Tensor p = Tensor::from(want, Shape{1000}).to(Device::cuda(0));
  const void* address = p.data_ptr();
  const std::vector<float> gv = grad.to_vector<float>();
  for (int step = 0; step < 6; ++step) {
    // Built by moves: a braced list would copy p, and a tensor held twice is not donated.
    std::vector<Tensor> in;
    in.push_back(std::move(p));
    in.push_back(grad);
    std::vector<Tensor> out = exe->run_donated(std::move(in));
    p = out[0];
    EXPECT_EQ(p.data_ptr(), address) << "step " << step << ": the parameter moved";
    double loss = 0;
    for (std::size_t i = 0; i < want.size(); ++i) {
      want[i] -= gv[i] * 0.5f;
      loss += double(want[i]) * want[i];
    }
    EXPECT_NEAR(out[1].to_host().item<float>(), loss, 1e-3 * loss);
  }
  EXPECT_TRUE(allclose(p.to_host(), Tensor::from(want, Shape{1000}), 1e-6, 1e-6));
  EXPECT_NE(exe->describe().find("CUDA graphs: on"), std::string::npos) << exe->describe();
}

TEST(CudaBackend, DropoutBitsEqualTheCpuBackendsBitForBit) {
  REQUIRE_DEVICE();
  Graph g = traced(
      {{u32, {2}}, {f32, {256, 100}}},
      [](const std::vector<Expr>& x) {
        return std::vector<Expr>{
            select(less(random::uniform(x[0], {256, 100}), 0.3), 0.0, x[1] / 0.7)};
      },
      "dropout");
  std::vector<Tensor> in = {random::key(42), random_tensor({256, 100}, 9)};
  Tensor got = compile_graph(g, "cuda")->run(in)[0].to_host();
  EXPECT_TRUE(equal(got, interpret(g, in)[0]));
}

TEST(CudaBackend, AnIndexOutOfRangeIsAnError) {
  REQUIRE_DEVICE();
  Graph g = traced(
      {{f32, {10, 4}}, {i64, {3}}},
      [](const std::vector<Expr>& x) { return std::vector<Expr>{take(x[0], x[1])}; }, "take");
  auto exe = compile_graph(g, "cuda");
  const std::vector<Tensor> good = {random_tensor({10, 4}, 5),
                                    Tensor::from<std::int64_t>({0, 9, 3})};
  const std::vector<Tensor> bad = {good[0], Tensor::from<std::int64_t>({0, 10, 3})};
  Tensor ok = exe->run(good)[0].to_host();
  EXPECT_TRUE(equal(ok, interpret(g, good)[0]));
  EXPECT_GLIA_ERROR(exe->run(bad), "out of range");
  // The executable still runs after the error.
  EXPECT_TRUE(equal(exe->run(good)[0].to_host(), ok));
}

TEST(CudaBackend, ConcurrentRunsGiveTheResultsOfOne) {
  REQUIRE_DEVICE();
  Graph g = traced(
      {{f32, {128, 256}}, {f32, {256, 64}}},
      [](const std::vector<Expr>& x) { return std::vector<Expr>{tanh(dot(x[0], x[1]))}; },
      "tanh_dense");
  auto exe = compile_graph(g, "cuda");
  std::vector<Tensor> in = {random_tensor({128, 256}, 11), random_tensor({256, 64}, 12)};
  Tensor want = exe->run(in)[0].to_host();
  std::vector<std::thread> threads;
  std::vector<int> same(8, 0);
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      bool all = true;
      for (int r = 0; r < 10; ++r) all = all && equal(exe->run(in)[0].to_host(), want);
      same[std::size_t(t)] = all;
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(std::count(same.begin(), same.end(), 1), 8);
}

TEST(CudaBackend, FewLongReductionsSplitOverBlocksMatchTheInterpreter) {
  REQUIRE_DEVICE();
  // Softmax over one row of 1,000,000 (max and sum split over 489 blocks), the bias
  // gradient of a channels-last convolution (32 columns of 86,528), an f64 sum and a max
  // whose 8,193 elements end in a short last chunk, with a NaN in one column.
  Graph g = traced(
      {{f32, {1000000}}, {f32, {86528, 32}}, {f64, {8193, 2}}, {f32, {20000, 3}}},
      [](const std::vector<Expr>& x) {
        Expr e = exp(x[0] - reduce_max(x[0], {0}, true));
        return std::vector<Expr>{e / sum(e, {0}, true), sum(x[1], {0}), sum(x[2] * x[2], {0}),
                                 reduce_max(x[3], {0})};
      },
      "split_reductions");
  auto exe = compile_graph(g, "cuda");
  EXPECT_NE(exe->describe().find("split: 1 x 1000000 over 489 blocks"), std::string::npos)
      << exe->describe();
  EXPECT_NE(exe->describe().find("split: 32 x 86528 over 32 blocks"), std::string::npos);
  std::vector<Tensor> in = {random_tensor({1000000}, 21), random_tensor({86528, 32}, 22),
                            random_tensor({8193, 2}, 23).cast(DType::f64),
                            random_tensor({20000, 3}, 24)};
  std::vector<float> m = in[3].to_vector<float>();
  m[3 * 12345 + 1] = std::numeric_limits<float>::quiet_NaN();  // column 1 is NaN
  m[3 * 19999 + 2] = 7;                                        // column 2's maximum, last
  in[3] = Tensor::from(m, Shape{20000, 3});
  std::vector<Tensor> want = interpret(g, in);
  std::vector<Tensor> got = exe->run(in);
  EXPECT_TRUE(allclose(got[0].to_host(), want[0], 1e-5, 1e-12));
  EXPECT_TRUE(allclose(got[1].to_host(), want[1], 1e-4, 1e-4));
  EXPECT_TRUE(allclose(got[2].to_host(), want[2], 1e-12, 1e-12));
  std::vector<float> max = got[3].to_host().to_vector<float>();
  EXPECT_EQ(max[0], want[3].to_vector<float>()[0]);
  EXPECT_TRUE(std::isnan(max[1]));
  EXPECT_EQ(max[2], 7.0f);
  // Fixed orders of combination: the same bits on every run.
  std::vector<Tensor> again = exe->run(in);
  for (std::size_t i = 0; i < got.size(); ++i)
    EXPECT_TRUE(equal(again[i].to_host(), got[i].to_host())) << "output " << i;
}

TEST(CudaBackend, ConvolutionsRunTheAlgorithmsCudnnMeasuresFastest) {
  REQUIRE_DEVICE();
  // A channels-last conv layer (32 images of 14 x 14, 16 -> 32 channels, 3 x 3) and its
  // three gradients: cuDNN's forward, backward-data and backward-filter passes.
  Graph g = trace(
      [](const std::vector<Expr>& in) {
        Expr loss = sum(testing::conv_layer_nhwc(in[0], in[1], in[2]) * in[3]);
        std::vector<Expr> out{loss};
        for (const Expr& d : gradients(loss, {in[0], in[1], in[2]})) out.push_back(d);
        return out;
      },
      {{f32, {32, 14, 14, 16}}, {f32, {3, 3, 16, 32}}, {f32, {32}}, {f32, {32, 14, 14, 32}}},
      "conv_layer");
  std::vector<Tensor> in = {random_tensor({32, 14, 14, 16}, 31), random_tensor({3, 3, 16, 32}, 32),
                            random_tensor({32}, 33), random_tensor({32, 14, 14, 32}, 34)};
  std::vector<Tensor> want = interpret(g, in);
  for (const char* mode : {"measured", "heuristic"}) {
    testing::ScopedEnv env("GLIA_CUDNN_ALGORITHMS", mode);
    auto exe = compile_graph(g, "cuda");
    const std::string text = exe->describe();
    std::size_t passes = 0;
    for (std::size_t at = text.find(cat("(", mode, ")")); at != std::string::npos;
         at = text.find(cat("(", mode, ")"), at + 1))
      ++passes;
    EXPECT_EQ(passes, 3u) << mode << ":\n" << text;
    std::vector<Tensor> got = exe->run(in);
    for (std::size_t i = 0; i < got.size(); ++i)
      EXPECT_TRUE(allclose(got[i].to_host(), want[i], 1e-4, 1e-3)) << mode << ", output " << i;
  }
}

TEST(CudaBackend, TensorsMoveToTheDeviceAndBack) {
  REQUIRE_DEVICE();
  Tensor x = random_tensor({3, 5}, 13);
  Tensor d = x.to(Device::cuda(0));
  EXPECT_EQ(d.device(), Device::cuda(0));
  EXPECT_GLIA_ERROR((void)d.to_vector<float>(), "cuda:0");
  EXPECT_TRUE(equal(d.to_host(), x));
  EXPECT_TRUE(equal(d.clone().to_host(), x));
}

}  // namespace
}  // namespace glia
