// The reference interpreter: evaluates any verified graph node by node with each
// op's reference kernel. It is the oracle every other backend is tested against.
//   auto outs = glia::interpret(graph, {x});
#pragma once

#include <span>
#include <vector>

#include "glia/core/graph.hpp"

namespace glia {

// Checks the inputs against the graph's parameters (count, dtype, shape) and returns
// the graph's outputs. Throws glia::Error on a mismatch.
std::vector<Tensor> interpret(const Graph& graph, std::span<const Tensor> inputs);

}  // namespace glia
