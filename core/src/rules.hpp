// Internal: how the op table is filled. Each rules_*.cpp file owns the inference and
// reference kernel of one group of ops and installs them with set_rule; op.cpp calls
// every add_*_rules once. A test checks that no op is left without either.
#pragma once

#include <array>

#include "glia/core/op.hpp"

namespace glia::detail {

using OpTable = std::array<OpInfo, kOpCount>;

inline void set_rule(OpTable& table, Op op, InferFn infer, KernelFn kernel) {
  OpInfo& row = table[static_cast<std::size_t>(op)];
  row.infer = infer;
  row.kernel = kernel;
}

void add_leaf_rules(OpTable& table);         // parameter, constant, iota
void add_elementwise_rules(OpTable& table);  // unary, binary, compare, select, cast
void add_layout_rules(OpTable& table);       // broadcast .. reverse
void add_indexing_rules(OpTable& table);     // gather, scatter_add
void add_reduction_rules(OpTable& table);    // reduce_*, argmax, argmin
void add_contraction_rules(OpTable& table);  // dot_general, convolution
void add_window_rules(OpTable& table);       // window_sum, window_max, select_and_scatter
void add_random_rules(OpTable& table);       // random_bits
void add_control_rules(OpTable& table);      // scan
void add_collective_rules(OpTable& table);   // all_reduce

}  // namespace glia::detail
