// Layers that change shape: flatten, reshape, transpose, pad and resize. Shapes and
// axes given here exclude the batch axis, which every one of them keeps.
#pragma once

#include <utility>
#include <vector>

#include "glia/layers/convolution.hpp"

namespace glia {

struct ShapeOptions {
  std::string name;
};
Model flatten(const Model& x, const ShapeOptions& options = {});  // [N, ...] -> [N, prod(...)]
Model reshape(const Model& x, std::vector<std::int64_t> shape,
              const ShapeOptions& options = {});  // one -1 allowed
Model transpose(const Model& x, std::vector<std::int64_t> perm, const ShapeOptions& options = {});
// (low, high) per non-batch axis, constant value.
Model pad(const Model& x, std::vector<std::pair<std::int64_t, std::int64_t>> padding,
          double value = 0.0, const ShapeOptions& options = {});

struct ResizeOptions {
  // "nearest": half-pixel centres as in Axon and JAX (PyTorch's "nearest-exact");
  // "bilinear": half-pixel centres, align_corners=false, no antialiasing (PyTorch's).
  std::string method = "nearest";
  Channels channels = Channels::last;
  std::string name;
};
Model resize(const Model& x, std::vector<std::int64_t> size, const ResizeOptions& options = {});

}  // namespace glia
