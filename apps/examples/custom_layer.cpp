// Example 4: a layer of your own. `glia::layer` takes a forward function over Exprs and the
// parameters it declares (shape from the input shapes, initializer); gradients, the
// optimizer, checkpoints and every backend then handle it like a built-in layer.
// Here: a learned per-feature gate, y = x * sigmoid(g), between two dense layers.
//
//   custom_layer [DATA_DIR] [TRAIN_EXAMPLES]
#include <cstdlib>
#include <iostream>
#include <string>

#include <glia/glia.hpp>

// x * sigmoid(gate), the gate one value per feature (the input's last axis), starting at 2
// (sigmoid(2) = 0.88: nearly open).
glia::Model feature_gate(const glia::Model& x) {
  using namespace glia;
  return layer("feature_gate", {x},
               [](LayerContext& c) { return c.input() * sigmoid(c.param("gate")); },
               {{"gate", [](const InputShapes& in) { return Shape{in[0][in[0].rank() - 1]}; },
                 initializers::full(2.0)}});
}

int main(int argc, char** argv) {
  using namespace glia;
  const char* env = std::getenv("GLIA_DATA_DIR");
  const std::string dir = argc > 1 ? argv[1] : env != nullptr ? env : "data/mnist";
  const std::int64_t n = argc > 2 ? std::atoll(argv[2]) : 60000;
  try {
    Mnist m = load_mnist(dir);
    Dataset train{normalize_pixels(m.train_images.rows(0, n)).reshape({n, 784}),
                  one_hot_labels(m.train_labels.rows(0, n), 10)};

    Model model = input("pixels", {-1, 784})
                      .then(dense, 64, DenseOptions{.activation = "relu"})
                      .then(feature_gate)
                      .then(dense, 10, DenseOptions{.activation = "softmax"});
    Loop loop = trainer(model, losses::categorical_cross_entropy, optimizers::adam(1e-3),
                        {.metrics = {{"accuracy", metrics::accuracy}}});
    LoopState s = loop.run(Batches(train, {.batch_size = 32, .shuffle = true}), {.epochs = 1});

    // The gate trained like any parameter: it is in the state under the layer's name.
    Tensor gate = s.train.model.params.at("feature_gate_0").at("gate");
    std::vector<float> g = gate.to_vector<float>();
    float lo = g[0], hi = g[0];
    for (float v : g) lo = std::min(lo, v), hi = std::max(hi, v);
    std::cout << "train accuracy " << s.history.back().at("accuracy") << ", gate values from " << lo
              << " to " << hi << " (all 2 before training)\n";
    return 0;
  } catch (const Error& e) {
    std::cerr << "custom_layer: " << e.what() << "\n";
    return 1;
  }
}
