// Showing a model: a summary table (Keras' model.summary / Axon's as_table) and the
// layer graph as Graphviz DOT.
#pragma once

#include <string>

#include "glia/layers/build.hpp"

namespace glia {

// One row per layer: name (type), input shapes, output shape, parameter count and
// bytes; then the totals (trainable, frozen, state). Shapes come from tracing the model
// on `inputs` (default: declared shapes with run-time dimensions as 1).
std::string summary(const Model& model, const InputTypes& inputs);
std::string summary(const Model& model);
// digraph: one node per layer labelled "name (type)\noutput shape", edges input -> layer.
std::string to_dot(const Model& model, const InputTypes& inputs);
std::string to_dot(const Model& model);

}  // namespace glia
