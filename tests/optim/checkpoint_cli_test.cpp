// `glia predict` gives the probabilities the training process computed: the MNIST MLP is
// trained here and saved by the loop's checkpoint handler, then the glia tool (built
// beside this suite) predicts a .npy batch of test images, which must equal predict in
// this process bit for bit, on each backend. Uses MNIST when present (else random images).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "checkpoint_test_util.hpp"
#include "glia/compiler/registry.hpp"

namespace glia {
namespace {

std::string mnist_dir() {
  if (const char* env = std::getenv("GLIA_DATA_DIR")) return env;
  return std::string(GLIA_TESTS_DIR) + "/../data/mnist";
}

Tensor first_rows(const Tensor& t, std::int64_t n) {
  std::vector<std::int64_t> dims = t.shape().dims();
  dims[0] = n;
  Tensor out(t.dtype(), Shape(dims));
  std::memcpy(out.raw_data(), t.raw_data(), out.nbytes());
  return out;
}

// u8 images [n][28][28] and labels [n]: MNIST's when present, else random.
std::pair<Dataset, Dataset> images() {
  std::string dir = mnist_dir();
  if (std::filesystem::exists(dir + "/t10k-images-idx3-ubyte") ||
      std::filesystem::exists(dir + "/t10k-images-idx3-ubyte.gz")) {
    Mnist m = load_mnist(dir);
    return {{first_rows(m.train_images, 256), first_rows(m.train_labels, 256)},
            {first_rows(m.test_images, 64), first_rows(m.test_labels, 64)}};
  }
  auto random_set = [](std::int64_t n, std::uint32_t seed) {
    std::vector<std::uint8_t> pixels, labels;
    std::uint32_t s = seed;
    for (std::int64_t i = 0; i < n * 784; ++i)
      pixels.push_back((s = s * 1664525u + 1013904223u) >> 24);
    for (std::int64_t i = 0; i < n; ++i) labels.push_back(static_cast<std::uint8_t>(i % 10));
    return Dataset{Tensor::from(pixels, Shape{n, 28, 28}), Tensor::from(labels, Shape{n})};
  };
  return {random_set(256, 1), random_set(64, 2)};
}

// The MNIST MLP trained for an epoch on 256 images, saved to dir/m.h5 by the loop's
// checkpoint handler; 64 test images written to dir/x.npy.
struct Trained {
  Model mlp;
  LoopState state;
  Tensor batch;
};
Trained train_mlp(testing::TempDir& dir) {
  auto [train_images, test_images] = images();
  Dataset train{normalize_pixels(train_images.x).reshape({256, 784}),
                one_hot_labels(train_images.y, 10)};
  Model x = input("pixels", {-1, 784});
  Model mlp = dense(dropout(dense(x, 128, {.activation = "relu"}), {.rate = 0.5}), 10,
                    {.activation = "softmax"});
  Loop loop =
      trainer(mlp, testing::cross_entropy, optimizers::adam(1e-3), {.progress = ProgressMode::off});
  loop.checkpoint({.path = dir.file("m.h5")});
  LoopState s = loop.run(Batches(train, {.batch_size = 32, .shuffle = true}), {.epochs = 1});
  Tensor batch = normalize_pixels(test_images.x).reshape({64, 784});
  write_npy(dir.file("x.npy"), batch);
  return {mlp, std::move(s), batch};
}

TEST(CheckpointCli, PredictGivesTheTrainingProcessProbabilities) {
#ifndef GLIA_CLI_PATH
  GTEST_SKIP() << "the glia tool is not built (GLIA_BUILD_APPS=OFF)";
#else
  testing::TempDir dir;
  auto [mlp, s, batch] = train_mlp(dir);

  for (const std::string& backend : backend_names()) {
    if (backend != "interp" && backend != "cpu") continue;
    SCOPED_TRACE(backend);
    Tensor want = build(mlp, {.backend = backend}).predict(s.train.model, batch);
    std::string command = cat(GLIA_CLI_PATH, " predict --checkpoint ", dir.file("m.h5"),
                              " --input ", dir.file("x.npy"), " --output ", dir.file("y.npy"),
                              " --backend ", backend, " > ", dir.file("log"), " 2>&1");
    ASSERT_EQ(std::system(command.c_str()), 0) << command;
    Tensor got = read_npy(dir.file("y.npy"));
    EXPECT_EQ(got.type().to_string(), "f32[64][10]");
    EXPECT_TRUE(equal(got, want));
  }
#endif
}

}  // namespace
}  // namespace glia

namespace glia {
namespace {

// `glia export` writes and builds the trained checkpoint's C predictor; `glia predict
// --exported` runs it on the batch (in calls of --batch rows, the last one padded) within
// 1e-5 of the JIT and with the same classes; `glia eval --exported`'s comparison is
// covered by the same library.
TEST(CheckpointCli, ExportedPredictorMatchesTheJit) {
#ifndef GLIA_CLI_PATH
  GTEST_SKIP() << "the glia tool is not built (GLIA_BUILD_APPS=OFF)";
#else
  if (aot::find_c_compiler().empty()) GTEST_SKIP() << "no C compiler (set CC)";
  testing::TempDir dir;
  auto [mlp, s, batch] = train_mlp(dir);
  Tensor want = build(mlp).predict(s.train.model, batch);
  for (const char* mode : {"", " --weights-file"}) {
    SCOPED_TRACE(mode);
    std::string out = dir.file(*mode ? "file" : "source");
    std::string command =
        cat(GLIA_CLI_PATH, " export --checkpoint ", dir.file("m.h5"),
            " --name mnist --batch 10 --output ", out, mode, " > ", dir.file("log"), " 2>&1");
    ASSERT_EQ(std::system(command.c_str()), 0) << command;
    command =
        cat(GLIA_CLI_PATH, " predict --exported ", out, "/libmnist.so --input ", dir.file("x.npy"),
            " --output ", dir.file("y.npy"), " > ", dir.file("log"), " 2>&1");
    ASSERT_EQ(std::system(command.c_str()), 0) << command;
    Tensor got = read_npy(dir.file("y.npy"));
    ASSERT_EQ(got.type().to_string(), "f32[64][10]");
    for (std::int64_t r = 0; r < 64; ++r) {
      const float* a = got.data<float>() + r * 10;
      const float* b = want.data<float>() + r * 10;
      EXPECT_EQ(std::max_element(a, a + 10) - a, std::max_element(b, b + 10) - b) << r;
      for (int j = 0; j < 10; ++j) EXPECT_NEAR(a[j], b[j], 1e-5) << r << "," << j;
    }
  }
  // Bad input: a name that is not a C identifier, --weights for a library without a file.
  std::string bad = cat(GLIA_CLI_PATH, " export --checkpoint ", dir.file("m.h5"),
                        " --name 1x --output ", dir.file("bad"), " > ", dir.file("log"), " 2>&1");
  EXPECT_NE(std::system(bad.c_str()), 0);
  bad = cat(GLIA_CLI_PATH, " predict --exported ", dir.file("source"), "/libmnist.so --weights ",
            dir.file("x.npy"), " --input ", dir.file("x.npy"), " --output ", dir.file("z.npy"),
            " > ", dir.file("log"), " 2>&1");
  EXPECT_NE(std::system(bad.c_str()), 0);
  EXPECT_FALSE(std::filesystem::exists(dir.file("z.npy")));
#endif
}

}  // namespace
}  // namespace glia
