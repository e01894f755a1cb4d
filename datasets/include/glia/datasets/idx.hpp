// The IDX file format (MNIST, Fashion-MNIST), plain or gzip-compressed (.gz): the magic
// number, dimensions and file size are checked before any data is read.
//   glia::Tensor images = glia::read_idx("data/mnist/train-images-idx3-ubyte");  //
//   u8[60000][28][28]
#pragma once

#include <string>

#include "glia/core/tensor.hpp"

namespace glia {

// Element types: u8 (0x08) -> u8, i8 (0x09) -> i32, i16 (0x0B) -> i32, i32 (0x0C) -> i32,
// f32 (0x0D) -> f32, f64 (0x0E) -> f64 (big-endian on disk). glia::Error naming the file
// for a missing, truncated or malformed file.
Tensor read_idx(const std::string& path);
void write_idx(const std::string& path, const Tensor& tensor);  // u8, i32, f32, f64

struct Mnist {
  Tensor train_images, train_labels, test_images, test_labels;  // u8 [N][28][28], u8 [N]
};
// The four IDX files of MNIST or Fashion-MNIST in `dir` (names as published, plain or .gz).
// A missing folder or file is a glia::Error that says how to fetch the data.
Mnist load_mnist(const std::string& dir);

}  // namespace glia
