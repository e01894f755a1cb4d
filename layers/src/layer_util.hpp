// Internal helpers shared by the layer implementations.
#pragma once

#include <memory>
#include <string>

#include "glia/layers/model.hpp"

namespace glia::detail {

// The size of the last axis; glia::Error naming the layer for a scalar.
inline std::int64_t last_dim(const Shape& s, std::string_view layer) {
  check(s.rank() >= 1, layer, ": expected an input of rank >= 1, got a scalar");
  return s[s.rank() - 1];
}

// Throws glia::Error (naming the layer) for an unknown activation name.
void check_activation(std::string_view layer, const std::string& activation);

// The same model with its output node's display options set.
inline Model with_options(const Model& m, std::string options) {
  auto node = std::make_shared<LayerNode>(m.node());
  node->options = std::move(options);
  return Model(std::move(node));
}

}  // namespace glia::detail
