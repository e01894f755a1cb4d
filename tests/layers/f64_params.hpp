// The layer gradient checks' one helper: a model whose output layer declares its
// parameters f64, so that glia::apply takes the checker's f64 values.
#pragma once

#include <memory>

#include "glia/layers/model.hpp"

namespace glia::testing {

inline Model with_f64_params(const Model& m) {
  auto node = std::make_shared<LayerNode>(m.node());
  for (ParamSpec& p : node->params) p.dtype = DType::f64;
  return Model(std::move(node));
}

}  // namespace glia::testing
