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

// A convolution node's kernels, nothing claimed: with the epilogue found after it (a
// forward pass with one) and without; nullopt where no ConvSpec takes the node.
struct ConvKernels {
  std::optional<Kernel> with_epilogue;
  Kernel plain;
};
std::optional<ConvKernels> conv_kernels(const LoweringState& state, ValueId id);
// A window_max or select_and_scatter node's kernels, nothing claimed: the adjoint with
// relu's mask folded in (where a select of the adjoint by its input's sign follows) and
// the plain one; nullopt where no PoolSpec takes the node.
struct PoolKernels {
  std::optional<Kernel> masked;
  Kernel plain;
};
std::optional<PoolKernels> pool_kernels(const LoweringState& state, ValueId id);

// The matchers: a kernel offered to the target, or nothing claimed.
bool lower_matmul(LoweringState& state, ValueId id);
bool lower_convolution(LoweringState& state, ValueId id);
bool lower_pooling(LoweringState& state, ValueId id);
// A forward convolution (its kernels from conv_kernels) whose output only max pooling
// reads (conv_pool.cpp), with the kernel gradient through pooling's adjoint where the
// graph has it: ConvPoolSpecs. lower_convolution tries it first.
bool lower_conv_pool(LoweringState& state, const ConvKernels& conv);

}  // namespace glia::lowering
