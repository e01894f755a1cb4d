// Fusion analysis, shared by the backends that generate fused kernels: partitions the
// element-wise, layout-view, random and reduction nodes of a graph into convex groups,
// each of which a backend runs as one kernel (possibly in several sweeps, one per
// reduction level: softmax is max | exp-sum | divide).
//   auto groups = glia::fusion_groups(graph, eligible);  // eligible: not claimed elsewhere
#pragma once

#include <functional>
#include <vector>

#include "glia/core/graph.hpp"

namespace glia {

// Ops a fused group may hold: unary, binary, compare, select, cast, stop_gradient,
// broadcast, reshape, transpose, slice, reverse, iota, random_bits and the four value
// reductions (not argmax/argmin).
bool fusible_op(Op op);

// Ops that read their operand through an index map rather than element for element
// (broadcast, transpose, slice, reverse; random_bits reads its key): a fused kernel
// needs that operand in memory before the sweep that reads it.
bool reads_operand_as_view(Op op);

// Element-wise ops computed by a vector math library call (exp, log, tanh, pow, ...),
// each costing what several simple ops do.
bool transcendental_op(Op op);

struct FusionGroup {
  std::vector<ValueId> nodes;    // in graph order
  std::vector<ValueId> inputs;   // values read from outside the group, first use first
  std::vector<ValueId> outputs;  // members read outside the group or returned by the graph
};

// Groups of the eligible nodes (eligible[id], fusible ops only), every eligible node in
// exactly one group, in graph order of their first node. A group is convex: no path
// leaves it and comes back, so its kernel can run after all its inputs and before all
// readers of its outputs. A broadcast joins its operand's group only when it enlarges
// it (a reduction's result broadcast back: softmax); transpose, slice and reverse
// start a new group rather than force their operand into memory mid-kernel.
//
// `reads`, when given, says whether a node outside the eligible ones really reads an
// operand: a node a library kernel covers may not (a relu run as a convolution's
// epilogue does not read the zeros it is the maximum with), and a value no one else
// reads need not be written out.
using ReadsOperand = std::function<bool(ValueId reader, ValueId operand)>;
std::vector<FusionGroup> fusion_groups(const Graph& graph, const std::vector<bool>& eligible,
                                       const ReadsOperand& reads = {});

// A broadcast that one other group alone reads moves into that group, which reads the
// broadcast's operand through a view: it is never written out. (An optimizer's bias
// corrections, scalars broadcast to a parameter's shape, would otherwise be stored by
// one kernel and streamed back by the next.) Only the pair's edge changes: the reader
// now takes the operand, which the producer computes before it, from the same producer.
// Groups may be left empty.
void absorb_broadcasts(const Graph& graph, std::vector<FusionGroup>& groups,
                       const ReadsOperand& reads = {});

}  // namespace glia
