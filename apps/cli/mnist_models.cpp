#include "mnist_models.hpp"

#include "glia/datasets.hpp"

namespace glia::cli {

Model mnist_model(const std::string& name) {
  if (name == "mlp") {
    Model x = input("pixels", {-1, 784});
    Model h = dense(x, 128, {.activation = "relu"});
    h = dropout(h, {.rate = 0.5});
    return dense(h, 10, {.activation = "softmax"});
  }
  if (name == "cnn") {
    Model x = input("image", {-1, 28, 28, 1});
    Model y = conv(x, 32, {.kernel_size = {3, 3}, .activation = "relu"});
    y = max_pool(y, {.kernel_size = {2, 2}});
    y = conv(y, 64, {.kernel_size = {3, 3}, .activation = "relu"});
    y = max_pool(y, {.kernel_size = {2, 2}});
    y = dense(flatten(y), 128, {.activation = "relu"});
    return dense(y, 10, {.activation = "softmax"});
  }
  throw Error(cat("unknown model '", name, "' (known: mlp, cnn)"));
}

Tensor mnist_inputs(const std::string& model, const Tensor& images) {
  Tensor x = normalize_pixels(images);
  std::int64_t n = images.shape()[0];
  return model == "cnn" ? x.reshape({n, 28, 28, 1}) : x.reshape({n, 784});
}

}  // namespace glia::cli
