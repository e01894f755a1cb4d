// What the passes know about values that are constant at compile time: splats (one
// value everywhere: a one-element constant seen through broadcasts and reshapes) and
// constants behind broadcasts, materialised on demand for folding.
#pragma once

#include <optional>

#include "glia/core/graph.hpp"

namespace glia::passes {

// The value of a splat as a rank-0 tensor, or nullopt when `id` is not one.
std::optional<Tensor> splat_value(const Graph& g, ValueId id);

// True for a constant, or a broadcast of such a value.
bool constant_valued(const Graph& g, ValueId id);

// The tensor of a constant-valued value; nullopt when it is not constant-valued or
// would need more than `limit` elements of broadcasting.
std::optional<Tensor> materialize(const Graph& g, ValueId id, std::int64_t limit);

// Appends a splat of `scalar` (rank 0) with type `type`: the constant alone for a
// scalar result, else the constant broadcast to the shape.
ValueId add_splat(Graph& g, const Tensor& scalar, const TensorType& type);

}  // namespace glia::passes
