// Preparing MNIST-like data for training: u8 pixels scaled into [0, 1] and integer
// labels as one-hot rows.
#include "glia/datasets/dataset.hpp"

namespace glia {

Tensor normalize_pixels(const Tensor& pixels) {
  if (!pixels.defined() || pixels.dtype() != DType::u8)
    throw Error(cat("normalize_pixels: expected u8 pixels, got ",
                    pixels.defined() ? pixels.type().to_string() : "an undefined tensor"));
  Tensor out = Tensor::uninitialized(DType::f32, pixels.shape());  // every element written
  const std::uint8_t* in = pixels.data<std::uint8_t>();
  float* dst = out.data<float>();
  for (std::int64_t i = 0; i < pixels.numel(); ++i) dst[i] = static_cast<float>(in[i]) / 255.0F;
  return out;
}

Tensor one_hot_labels(const Tensor& labels, std::int64_t classes) {
  if (!labels.defined() || !is_integer(labels.dtype()))
    throw Error(cat("one_hot_labels: expected integer labels (u8, u32, i32 or i64), got ",
                    labels.defined() ? labels.type().to_string() : "an undefined tensor"));
  check(classes > 0, "one_hot_labels: classes must be positive, got ", classes);
  std::vector<std::int64_t> dims = labels.shape().dims();
  dims.push_back(classes);
  Tensor out(DType::f32, Shape(std::move(dims)));
  float* dst = out.data<float>();
  const std::vector<std::int64_t> values = labels.to_vector<std::int64_t>();
  for (std::size_t i = 0; i < values.size(); ++i) {
    check(values[i] >= 0 && values[i] < classes, "one_hot_labels: label ", values[i], " at index ",
          i, " is outside [0, ", classes, ") for ", labels.type());
    dst[static_cast<std::int64_t>(i) * classes + values[i]] = 1.0F;
  }
  return out;
}

}  // namespace glia
