// Example 5: a model with two inputs, two outputs and one encoder shared by both inputs.
// Each example is a pair of MNIST images. The model reads both through the same encoder
// (one set of weights, trained through both inputs, like a module called twice) and
// answers two questions: the sum of the two digits (19 classes) and the left digit (10
// classes), each with its own loss; the left digit's weighs half. Inputs and targets go
// in by name.
//
//   two_digits [DATA_DIR] [PAIRS]
//     PAIRS  training pairs, from the first 2 x PAIRS training images (default: 30,000)
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include <glia/glia.hpp>

// Pairs from images [2n][28][28] and labels [2n]: image i beside image n + i.
glia::Dataset pairs(const glia::Tensor& images, const glia::Tensor& labels, std::int64_t n) {
  using namespace glia;
  Tensor left = labels.rows(0, n), right = labels.rows(n, 2 * n);
  std::vector<std::uint8_t> sums;
  for (std::int64_t i = 0; i < n; ++i)
    sums.push_back(
        static_cast<std::uint8_t>(left.data<std::uint8_t>()[i] + right.data<std::uint8_t>()[i]));
  return Dataset{.inputs = {{"left", normalize_pixels(images.rows(0, n)).reshape({n, 784})},
                            {"right", normalize_pixels(images.rows(n, 2 * n)).reshape({n, 784})}},
                 .targets = {{"sum", one_hot_labels(Tensor::from(sums, Shape{n}), 19)},
                             {"left", one_hot_labels(left, 10)}}};
}

int main(int argc, char** argv) {
  using namespace glia;
  const char* env = std::getenv("GLIA_DATA_DIR");
  const std::string dir = argc > 1 ? argv[1] : env != nullptr ? env : "data/mnist";
  const std::int64_t n = argc > 2 ? std::atoll(argv[2]) : 30000;
  try {
    Mnist m = load_mnist(dir);
    check(n >= 1 && 2 * n <= m.train_images.shape()[0], "two_digits: PAIRS must be in 1..",
          m.train_images.shape()[0] / 2, ", got ", n);
    Dataset train = pairs(m.train_images, m.train_labels, n);
    Dataset test = pairs(m.test_images, m.test_labels, m.test_images.shape()[0] / 2);

    // Two inputs; the encoder is built once and applied to both (Shared): its dense layer
    // holds one kernel, whose gradient sums what both applications contribute.
    Model left = input("left", {-1, 784}), right = input("right", {-1, 784});
    Shared encoder([](const Model& x) { return dense(x, 128, {.activation = "relu"}); });
    Model a = encoder(left), b = encoder(right);
    Model sum = concatenate({a, b})
                    .then(dense, 128, DenseOptions{.activation = "relu"})
                    .then(dense, 19, DenseOptions{.activation = "softmax"});
    Model digit = dense(a, 10, {.activation = "softmax"});
    Model model = outputs({{"sum", sum}, {"left", digit}});  // two heads, by name
    std::cout << summary(model);

    // A loss per head with its weight; the loop reports each head's loss and metrics as
    // "<head>_<name>" beside the weighted total.
    Loop loop = trainer(model,
                        OutputLosses{{"sum", {losses::categorical_cross_entropy}},
                                     {"left", {losses::categorical_cross_entropy, 0.5}}},
                        optimizers::adam(1e-3));
    loop.metric("sum", "accuracy", metrics::accuracy).metric("left", "accuracy", metrics::accuracy);
    loop.validate(Batches(test, {.batch_size = 1000}));
    LoopState s = loop.run(Batches(train, {.batch_size = 32, .shuffle = true}), {.epochs = 3});
    const auto& last = s.history.back();
    std::cout << "test accuracy: sum " << last.at("validation_sum_accuracy") << ", left digit "
              << last.at("validation_left_accuracy") << "\n";

    // Predicting gives every head by name.
    auto [init, predict] = build(model);
    std::map<std::string, Tensor> x{{"left", test.inputs.at("left").rows(0, 5)},
                                    {"right", test.inputs.at("right").rows(0, 5)}};
    std::map<std::string, Tensor> y = predict.outputs(s.train.model, x);
    Tensor sums = y.at("sum").argmax(), lefts = y.at("left").argmax();
    for (std::int64_t i = 0; i < 5; ++i)
      std::cout << "pair " << i << ": " << int(m.test_labels.data<std::uint8_t>()[i]) << " + "
                << int(m.test_labels.data<std::uint8_t>()[5000 + i]) << ", predicted sum "
                << sums.data<std::int64_t>()[i] << ", left digit " << lefts.data<std::int64_t>()[i]
                << "\n";
    return 0;
  } catch (const Error& e) {
    std::cerr << "two_digits: " << e.what() << "\n";
    return 1;
  }
}
