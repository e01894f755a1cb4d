// Linear layers: dense, bilinear, embedding and bias.
//   glia::Model h = glia::dense(x, 128, {.activation = "relu"});
#pragma once

#include "glia/layers/initializers.hpp"

namespace glia {

struct DenseOptions {
  std::string activation = "linear";  // any name glia::activations::by_name accepts
  bool use_bias = true;
  Initializer kernel_initializer = initializers::glorot_uniform();
  Initializer bias_initializer = initializers::zeros();
  std::string name;
};
// y = activation(x . kernel + bias); kernel [in, units], bias [units]; x [..., in].
Model dense(const Model& x, std::int64_t units, const DenseOptions& options = {});

// y[..., k] = sum_ij a[..., i] kernel[k, i, j] b[..., j] + bias[k]; kernel [units, in1, in2].
Model bilinear(const Model& a, const Model& b, std::int64_t units,
               const DenseOptions& options = {});

struct EmbeddingOptions {
  Initializer kernel_initializer = initializers::uniform();
  std::string name;
};
// Integer ids [...] -> [..., embedding_size]; kernel [vocab_size, embedding_size].
Model embedding(const Model& ids, std::int64_t vocab_size, std::int64_t embedding_size,
                const EmbeddingOptions& options = {});

struct BiasOptions {
  Initializer bias_initializer = initializers::zeros();
  std::string name;
};
// x + bias over the last axis; bias [features].
Model bias(const Model& x, const BiasOptions& options = {});

}  // namespace glia
