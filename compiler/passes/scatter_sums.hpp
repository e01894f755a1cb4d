// The sum of a select_and_scatter (max pooling's adjoint) over its windows' axes, taken on
// the windows: a convolution's bias gradient under a max pool reads the pooled gradient
// instead of the full-size one the pool's adjoint writes.
#pragma once

#include <optional>

#include "glia/core/graph.hpp"

namespace glia::passes {

// For `n`, a reduce_sum node whose inputs are ids of `g`, a value of `g` computing the same
// sum from the windows (appended to `g`), or nullopt where the rule does not apply:
//   reduce_sum(select_and_scatter(x, s), A)                    -> reduce_sum(s, A)
//   reduce_sum(select(gt(x, c), select_and_scatter(x, s), 0), A)
//       -> reduce_sum(select(gt(window_max(x), c), s, 0), A)
// where every axis a window moves along is in A, and the other axes map one to one; the
// second only where that window_max comes before the sum (the forward pass's pool).
std::optional<ValueId> sum_of_scatter(Graph& g, const Node& n);

}  // namespace glia::passes
