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
  if (name == "lstm") {
    // The image read row by row: 28 steps of 28 pixels.
    Model x = input("rows", {-1, 28, 28});
    Model h = lstm(x, 128, {.return_sequences = false});
    return dense(h, 10, {.activation = "softmax"});
  }
  throw Error(cat("unknown model '", name, "' (known: mlp, cnn, lstm)"));
}

Tensor inputs_for(const Model& model, const Tensor& x) {
  InputTypes inputs = default_input_types(model);
  check(inputs.size() == 1, "the model takes ", inputs.size(), " inputs; the data feeds one");
  const auto& [name, type] = *inputs.begin();
  std::vector<std::int64_t> dims = type.shape.dims();
  check(x.rank() >= 1, "the examples are a scalar ", x.type());
  const std::int64_t n = x.shape()[0];
  const std::int64_t values = n > 0 ? x.numel() / n : 0;
  std::int64_t per_example = 1;
  for (std::size_t i = 1; i < dims.size(); ++i) per_example *= dims[i];
  check(!dims.empty() && per_example == values, "the model's input '", name, "' takes ",
        type.to_string(), " (", per_example, " values an example; the batch axis first), but ",
        "the examples have ", values, " values each (", x.type(), ")");
  dims[0] = n;
  Tensor cast = x.dtype() == type.dtype ? x : x.cast(type.dtype);
  return cast.reshape(Shape(std::move(dims)));
}

Tensor mnist_inputs_for(const Model& model, const Tensor& images) {
  return inputs_for(model, normalize_pixels(images));
}

}  // namespace glia::cli
