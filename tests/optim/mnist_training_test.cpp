// A small real training run: the MNIST MLP on 2,000 training images for one epoch. The
// loss falls and test accuracy is far above chance (10%). Skipped, with a message, when
// MNIST is not on this machine.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "glia/datasets.hpp"
#include "glia/layers.hpp"
#include "glia/optim.hpp"

namespace glia {
namespace {

std::string mnist_dir() {
  if (const char* env = std::getenv("GLIA_DATA_DIR")) return env;
  return std::string(GLIA_TESTS_DIR) + "/../data/mnist";
}

TEST(MnistTraining, LossFallsAndAccuracyBeatsChance) {
  std::string dir = mnist_dir();
  if (!std::filesystem::exists(dir + "/train-images-idx3-ubyte") &&
      !std::filesystem::exists(dir + "/train-images-idx3-ubyte.gz"))
    GTEST_SKIP() << "MNIST not found in " << dir << ": run ./apps/setup.sh (or set GLIA_DATA_DIR)";
  Mnist m = load_mnist(dir);
  Dataset train{normalize_pixels(m.train_images.rows(0, 2000)).reshape({2000, 784}),
                one_hot_labels(m.train_labels.rows(0, 2000), 10)};
  Dataset test{normalize_pixels(m.test_images.rows(0, 1000)).reshape({1000, 784}),
               one_hot_labels(m.test_labels.rows(0, 1000), 10)};

  Model x = input("pixels", {-1, 784});
  Model model = dense(dropout(dense(x, 128, {.activation = "relu"}), {.rate = 0.5}), 10,
                      {.activation = "softmax"});
  // The README's form: the library's loss and metric as they stand.
  std::vector<double> batch_losses;
  Loop loop =
      trainer(model, losses::categorical_cross_entropy, optimizers::adam(1e-3),
              {.metrics = {{"accuracy", metrics::accuracy}}, .progress = ProgressMode::off});
  loop.handle(Event::iteration_completed, [&](LoopState& s) {
    batch_losses.push_back(s.batch.loss);
    return HandlerResult::continue_;
  });
  LoopState s = loop.run(Batches(train, {.batch_size = 32, .shuffle = true}), {.epochs = 1});
  ASSERT_EQ(batch_losses.size(), 63u);
  double first = (batch_losses[0] + batch_losses[1] + batch_losses[2]) / 3;
  double last = (batch_losses[60] + batch_losses[61] + batch_losses[62]) / 3;
  EXPECT_LT(last, first * 0.6) << "the loss should fall clearly within one epoch";

  Loop eval = evaluator(model, {.metrics = {{"accuracy", metrics::accuracy}},
                                .loss = losses::categorical_cross_entropy,
                                .progress = ProgressMode::off});
  LoopState e = eval.run(Batches(test, {.batch_size = 500}), {.epochs = 1}, s.train);
  EXPECT_GT(e.history.back().at("accuracy"), 0.75);  // chance is 0.1
}

}  // namespace
}  // namespace glia
