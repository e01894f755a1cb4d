// Example 2: the small MNIST CNN, channels-last ([N, 28, 28, 1]), trained for one epoch
// with a learning-rate schedule, then evaluated with an evaluator Loop.
//
//   mnist_cnn [DATA_DIR] [TRAIN_EXAMPLES]
#include <cstdlib>
#include <iostream>
#include <string>

#include <glia/glia.hpp>

int main(int argc, char** argv) {
  using namespace glia;
  const char* env = std::getenv("GLIA_DATA_DIR");
  const std::string dir = argc > 1 ? argv[1] : env != nullptr ? env : "data/mnist";
  const std::int64_t n = argc > 2 ? std::atoll(argv[2]) : 60000;
  try {
    Mnist m = load_mnist(dir);
    Dataset train{normalize_pixels(m.train_images.rows(0, n)).reshape({n, 28, 28, 1}),
                  one_hot_labels(m.train_labels.rows(0, n), 10)};
    const std::int64_t t = m.test_images.shape()[0];
    Dataset test{normalize_pixels(m.test_images).reshape({t, 28, 28, 1}),
                 one_hot_labels(m.test_labels, 10)};

    Model image = input("image", {-1, 28, 28, 1});
    Model y = conv(image, 32, {.kernel_size = {3, 3}, .activation = "relu"});
    y = max_pool(y, {.kernel_size = {2, 2}});
    y = conv(y, 64, {.kernel_size = {3, 3}, .activation = "relu"});
    y = max_pool(y, {.kernel_size = {2, 2}});
    y = dense(flatten(y), 128, {.activation = "relu"});
    // Logits out, so the loss takes logits: the probability loss would refuse them.
    Model cnn = dense(y, 10);
    LossFn loss = losses::categorical_cross_entropy.with({.from_logits = true});

    // Adam whose learning rate decays along a cosine over the epoch's steps.
    const std::int64_t steps = (n + 127) / 128;
    Loop loop = trainer(cnn, loss, optimizers::adam(schedules::cosine_decay(2e-3, steps)),
                        {.metrics = {{"accuracy", metrics::accuracy}}});
    LoopState s = loop.run(Batches(train, {.batch_size = 128, .shuffle = true}), {.epochs = 1});

    Loop eval = evaluator(cnn, {.metrics = {{"accuracy", metrics::accuracy}}, .loss = loss});
    LoopState e = eval.run(Batches(test, {.batch_size = 1000}), {.epochs = 1}, s.train);
    std::cout << "test accuracy " << e.history.back().at("accuracy") << "\n";
    return 0;
  } catch (const Error& e) {
    std::cerr << "mnist_cnn: " << e.what() << "\n";
    return 1;
  }
}
