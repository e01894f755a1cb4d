// Internal: matmuls whose left operand is mostly zeros at run time skip its zeros.
//
// Images (MNIST's pixels are 81% zeros), one-hot features and masked activations multiply
// weights in the first layer of a network, forward as x·W and backward as xᵀ·dz for W's
// gradient: both have x on the left. Where a sample of a run's left operand finds pairs
// of the product's rows at most kZeroSkipDensity nonzero (the k where either row is; NaN
// and infinities count as nonzero), the kernel lists each pair's nonzeros and sums value x
// weight row over them alone, k ascending, both rows in registers from one load of each
// weight vector (any density gives the same sums; the sample only says it pays). Else, or
// where the right operand holds an infinity or NaN (0 x inf is NaN), it runs the dense
// kernel it wraps (oneDNN's). Results differ from the dense
// kernel's only in the order of the additions and in multiply-adds fused or not.
// GLIA_CPU_ZERO_SKIP=0 in the environment at compile time leaves products dense.
#pragma once

#include <memory>

#include "backends/cpu/realise.hpp"

namespace glia::detail::cpu {

// The most nonzeros, as a fraction of the sampled pairs' k (either row nonzero), that a
// run skips the zeros of: MNIST batches are ~19% nonzero, pairs of images ~29%, pairs of
// neighbouring pixels (the weight gradient's rows) ~22%.
inline constexpr double kZeroSkipDensity = 0.5;

// Whether `spec` may skip zeros: f32, no batch, the product big enough for a check of its
// left operand to cost little (at least 2^21 multiply-adds), k at least 16 and n at least
// 16, the left operand's rows or columns contiguous, the right operand's and the output's
// columns contiguous; and GLIA_CPU_ZERO_SKIP is not 0.
bool zero_skip_fits(const MatmulSpec& spec);

// `dense` (the product's kernel otherwise) wrapped to skip zeros where a run allows.
std::unique_ptr<CpuKernel> make_zero_skip_matmul(const MatmulSpec& spec, ValueId out,
                                                 std::unique_ptr<CpuKernel> dense);

}  // namespace glia::detail::cpu
