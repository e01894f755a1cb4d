// Internal helpers shared by the layer implementations.
#pragma once

#include <memory>
#include <string>

#include "glia/layers/model.hpp"
#include "layer_config.hpp"

namespace glia::detail {

// The size of the last axis; glia::Error naming the layer for a scalar.
inline std::int64_t last_dim(const Shape& s, std::string_view layer) {
  check(s.rank() >= 1, layer, ": expected an input of rank >= 1, got a scalar");
  return s[s.rank() - 1];
}

// Throws glia::Error (naming the layer) for an unknown activation name.
void check_activation(std::string_view layer, const std::string& activation);

// The same model with its output node's display options and JSON config (layer_config.hpp)
// set: every built-in layer goes through here, which is what makes it serializable.
inline Model with_options(const Model& m, std::string options, std::string config) {
  auto node = std::make_shared<LayerNode>(m.node());
  node->options = std::move(options);
  node->config = std::move(config);
  return Model(std::move(node));
}
inline Model with_config(const Model& m, std::string config) {
  return with_options(m, m.node().options, std::move(config));
}

}  // namespace glia::detail
