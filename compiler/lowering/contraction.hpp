// Internal to the lowering: the contraction matchers' shared pieces — reading a value
// through the transposes that produced it (a transpose is only a strided view to a GEMM or
// convolution library) and the epilogue after a contraction's result.
#pragma once

#include <optional>
#include <vector>

#include "lowering/state.hpp"

namespace glia::lowering {

// A strided view and the transposes it reads through that only its reader reads (the
// kernel then covers them).
struct WalkedView {
  StridedView view;
  std::vector<ValueId> walked;
};

// `id` viewed through its transposes, as far as that is safe: through a transpose whose
// only reader is `reader` (the kernel then covers it), or whose operand is a parameter or
// constant (always bound). Other values are read as they are.
WalkedView view_through_transposes(const LoweringState& state, ValueId id, ValueId reader);

// A constant of f32 zeros, or a broadcast of one.
bool is_zero_splat(const LoweringState& s, ValueId id);

// Swaps the first two dims of a view (batch and feature roles in the backward passes).
StridedView swap_leading(StridedView v);

// The epilogue after a contraction's result value `start`, whose graph axis i is the
// contraction's destination dimension dst_dim[i] (of dst_dims): follows `start`'s single
// readers while they are a per-channel bias add (an add of a rank-1 operand broadcast
// along one axis), an add of a same-typed value (residual), relu (max with a zero
// splat), tanh or logistic, f32 only; stops at a value something else reads.
struct FoundEpilogue {
  EpilogueSpec spec;
  ValueId result = 0;            // the last value computed: what the kernel outputs
  std::vector<ValueId> covered;  // the nodes after `start` it computes
};
FoundEpilogue find_epilogue(const LoweringState& state, ValueId start,
                            const std::vector<int>& dst_dim,
                            const std::vector<std::int64_t>& dst_dims);

// The matchers: a kernel offered to the target, or nothing claimed.
bool lower_matmul(LoweringState& state, ValueId id);
bool lower_convolution(LoweringState& state, ValueId id);
bool lower_pooling(LoweringState& state, ValueId id);

}  // namespace glia::lowering
