// Example 3: load a checkpoint (mnist_mlp's) and predict class labels for test images,
// without any of the training code: the checkpoint holds the architecture.
//
//   predict_labels CHECKPOINT [DATA_DIR] [IMAGES]
#include <cstdlib>
#include <iostream>
#include <string>

#include <glia/glia.hpp>

int main(int argc, char** argv) {
  using namespace glia;
  if (argc < 2) {
    std::cerr << "usage: predict_labels CHECKPOINT [DATA_DIR] [IMAGES]\n";
    return 2;
  }
  const char* env = std::getenv("GLIA_DATA_DIR");
  const std::string dir = argc > 2 ? argv[2] : env != nullptr ? env : "data/mnist";
  const std::int64_t count = argc > 3 ? std::atoll(argv[3]) : 20;
  try {
    Checkpoint c = load_checkpoint(argv[1]);
    Model model = c.model();  // rebuilt from the saved architecture
    // Only the weights are needed to predict (save_weights / load_weights store just them).
    ModelState weights = c.loop.train.model;
    BuiltModel built = build(model);

    Mnist m = load_mnist(dir);
    Tensor x = normalize_pixels(m.test_images.rows(0, count)).reshape({count, 784});
    Tensor probabilities = built.predict(weights, x);  // f32 [count, 10]
    Tensor predicted = probabilities.argmax(-1);       // i64 [count]: the classes
    std::vector<std::int64_t> labels = predicted.to_vector<std::int64_t>();
    std::vector<int> truth = m.test_labels.rows(0, count).to_vector<int>();
    int right = 0;
    for (std::int64_t i = 0; i < count; ++i) {
      right += labels[std::size_t(i)] == truth[std::size_t(i)];
      std::cout << "image " << i << ": predicted " << labels[std::size_t(i)] << ", label "
                << truth[std::size_t(i)] << "\n";
    }
    std::cout << right << " of " << count << " right\n";
    return 0;
  } catch (const Error& e) {
    std::cerr << "predict_labels: " << e.what() << "\n";
    return 1;
  }
}
