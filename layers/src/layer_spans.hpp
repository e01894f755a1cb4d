// Internal: which layer traced which nodes, for messages that name the layer behind a node
// (the AOT exporter's "cannot export" errors).
#pragma once

#include <string>
#include <vector>

#include "glia/layers/build.hpp"

namespace glia::detail {

struct LayerSpan {
  std::string name, type;
  std::int64_t end = 0;  // the graph's node count after the layer's forward pass
};

// apply() in inference mode, recording each layer's span of the current trace's nodes
// (a layer's nodes are those after the previous span's end, up to its own).
Applied apply_with_spans(const Model& model, const ExprParamMap& params, const ExprParamMap& state,
                         const std::map<std::string, Expr>& inputs, std::vector<LayerSpan>& spans);

}  // namespace glia::detail
