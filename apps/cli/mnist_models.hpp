// The models `glia train` knows by name: the MNIST MLP and small CNN of the README.
#pragma once

#include <string>

#include "glia/layers.hpp"

namespace glia::cli {

// "mlp": input 784 -> dense 128 relu -> dropout 0.5 -> dense 10 softmax.
// "cnn": conv 3x3x32 relu -> max_pool 2 -> conv 3x3x64 relu -> max_pool 2 -> flatten
//        -> dense 128 relu -> dense 10 softmax (input [N, 28, 28, 1]).
// glia::Error for another name.
Model mnist_model(const std::string& name);

// The images normalized and shaped for `model`'s one input: [N] followed by its declared
// dimensions after the batch (784 values an image in any arrangement: [784], [28, 28, 1],
// [28, 28]). glia::Error naming the input when the model takes something else.
Tensor mnist_inputs_for(const Model& model, const Tensor& images);
// Examples x [N, ...] (any dtype) cast and shaped for `model`'s one input: [N] followed by
// its declared dimensions; glia::Error naming the input when the sizes differ.
Tensor inputs_for(const Model& model, const Tensor& x);

}  // namespace glia::cli
