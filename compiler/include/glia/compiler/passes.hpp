// Graph-to-graph passes run by compile_graph before a backend sees the graph:
// algebraic simplification with constant folding, common-subexpression elimination
// and dead-code elimination (glia::prune). Each returns a new graph with the same
// parameters and output types, and computes the same values.
//   glia::Graph fast = glia::optimize(graph, {});   // simplify -> CSE -> prune, repeated
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "glia/compiler/backend.hpp"

namespace glia {

// Constant folding evaluates a node at compile time only when its result (and every
// broadcast constant it has to materialise) has at most this many elements.
inline constexpr std::int64_t kFoldElementLimit = 64 * 1024;

// Algebraic simplification. Removes identities (reshape to the same shape, transpose by
// the identity permutation, broadcast to the same shape, cast to the same dtype, full
// slices, zero pads, reductions over no axes, reverses of size-1 axes, one-input
// concatenates, stop_gradient: run it after autograd), x + 0, x - 0, x * 1, x / 1 with
// a constant splat operand (never x * 0: NaN and inf must survive), neg(neg(x)), select
// on a constant predicate. Composes reshape/reshape, transpose/transpose and
// broadcast/broadcast chains, and turns a reduction whose only use reshapes it to the
// keep_axes shape into a keep_axes reduction. Sums a select_and_scatter (masked by
// gt(x, c) or not) over its windows' axes from its source (passes/scatter_sums.hpp).
// Folds constants: element-wise and layout ops on splats (a scalar constant broadcast)
// stay splats of any size; other nodes whose inputs are all constant (random_bits
// excepted) are evaluated with their reference kernel when small enough
// (kFoldElementLimit). Dead nodes are left behind for prune.
Graph simplify(const Graph& graph);

// Merges nodes with the same op, the same inputs (in either order for add, multiply,
// eq, ne, and, or) and equal attributes (constants compared by value). Parameters are
// never merged.
Graph eliminate_common_subexpressions(const Graph& graph);

// Binds parameters to values: parameter i becomes a constant holding values[i] (of its
// exact type) where one is given; the others stay parameters, renumbered in order. The AOT
// exporter binds a model's trained parameters so that they fold and become the code's
// constants.
Graph bind_parameters(const Graph& graph, const std::vector<std::optional<Tensor>>& values);

// simplify -> eliminate_common_subexpressions -> prune, repeated while the graph
// shrinks (at most 4 rounds); glia::verify after every pass when options.verify.
Graph optimize(const Graph& graph, const CompileOptions& options = {});

}  // namespace glia
