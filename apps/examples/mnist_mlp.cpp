// Example 1: train the MNIST MLP, watch the validation loss, save the run, report the
// test accuracy. The whole workflow of glia in one program:
//   build the model -> train it with a Loop -> save a checkpoint -> evaluate.
//
//   mnist_mlp [DATA_DIR] [TRAIN_EXAMPLES] [CHECKPOINT]
//     DATA_DIR        the four MNIST IDX files (default: $GLIA_DATA_DIR, else data/mnist)
//     TRAIN_EXAMPLES  use the first N training images (default: all 60,000)
//     CHECKPOINT      where to save the trained run (default: mnist_mlp.h5)
#include <cstdlib>
#include <iostream>
#include <string>

#include <glia/glia.hpp>

int main(int argc, char** argv) {
  using namespace glia;
  const char* env = std::getenv("GLIA_DATA_DIR");
  const std::string dir = argc > 1 ? argv[1] : env != nullptr ? env : "data/mnist";
  const std::int64_t n = argc > 2 ? std::atoll(argv[2]) : 60000;
  const std::string checkpoint = argc > 3 ? argv[3] : "mnist_mlp.h5";
  try {
    // Data: u8 images [N][28][28] become floats in [0, 1], one row of 784 per image;
    // labels become one-hot rows of 10. rows() takes the first n without copying.
    Mnist m = load_mnist(dir);
    Dataset train{normalize_pixels(m.train_images.rows(0, n)).reshape({n, 784}),
                  one_hot_labels(m.train_labels.rows(0, n), 10)};
    const std::int64_t t = m.test_images.shape()[0];
    Dataset test{normalize_pixels(m.test_images).reshape({t, 784}),
                 one_hot_labels(m.test_labels, 10)};

    // The model: a functional graph of layers. -1 is the batch, given at run time.
    Model x = input("pixels", {-1, 784});
    Model h = dense(x, 128, {.activation = "relu"});
    h = dropout(h, {.rate = 0.5});
    Model model = dense(h, 10, {.activation = "softmax"});
    std::cout << summary(model);

    // Training: the loss and metrics go in as they are; the Loop validates on the test
    // split after each epoch and stops when the validation loss stops improving.
    Loop loop = trainer(model, losses::categorical_cross_entropy, optimizers::adam(1e-3),
                        {.metrics = {{"accuracy", metrics::accuracy}}});
    loop.validate(Batches(test, {.batch_size = 1000}))
        .early_stop({.monitor = "validation_loss", .patience = 2})
        .checkpoint({.path = checkpoint});  // the run after every epoch, written atomically
    LoopState s = loop.run(Batches(train, {.batch_size = 32, .shuffle = true}), {.epochs = 3});

    const auto& last = s.history.back();
    std::cout << "epochs " << s.epoch << ", validation accuracy " << last.at("validation_accuracy")
              << ", saved to " << checkpoint << "\n";
    return 0;
  } catch (const Error& e) {
    std::cerr << "mnist_mlp: " << e.what() << "\n";
    return 1;
  }
}
