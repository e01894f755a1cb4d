// Internal: a convolution's data and kernel gradients that skip the zeros of the output
// gradient.
//
// Behind max pooling the output gradient of a convolution is mostly zeros: pooling's
// adjoint sends each window's gradient to one position of it (the MNIST CNN's 2x2 pooling
// of 11x11 outputs leaves at most 25 of 121 positions of a channel nonzero, 21%), and
// relu's mask zeros more. The input gradient sums, at each input position, weights times
// the output gradient over the window's taps and the output channels: where a sample of a
// run's output gradient is at most kZeroSkipConvDensity nonzero, the kernel lists each
// input position's nonzero terms (tap and channel, value) and sums them alone, the input
// channels in registers. Else, or where the weights hold an infinity or NaN (0 x inf is
// NaN), the dense kernel it wraps runs. Results differ from the dense kernel's only in
// the order of the additions. GLIA_CPU_ZERO_SKIP=0 in the environment at compile time
// leaves the data gradient dense, as it does matmuls.
#pragma once

#include <memory>

#include "backends/cpu/realise.hpp"

namespace glia::detail::cpu {

// The most nonzeros, as a fraction of the output gradient's sampled elements, that a run
// skips the zeros of: a term costs ~4 cycles (two multiply-adds of 16 floats, the value's
// broadcast and the weights' loads) where the dense kernel's multiply-adds run at one a
// cycle; on the MNIST CNN's second convolution (2 threads of a Zen 4) the zero-skipping
// pass broke even with oneDNN's direct one at ~35% nonzero.
inline constexpr double kZeroSkipConvDensity = 0.3;

// Whether the output gradient dy (`view`: [N, K, OH, OW]) is at most kZeroSkipConvDensity
// nonzero at 16 output positions spread over it, every output channel of each (NaN counts
// as nonzero): whether a run pays for skipping zeros.
bool sampled_sparse(const float* dy, const StridedView& view);

// Whether `spec` may skip zeros: the data gradient (backward_data) of an f32, ungrouped,
// unit-stride, undilated 2-D convolution over channels-last activations, input channels
// in one to four vectors of the widest ISA (16 floats on AVX-512, 8 on AVX2), output
// channels in whole vectors, at least 2^21 multiply-adds; and GLIA_CPU_ZERO_SKIP is not 0.
bool zero_skip_conv_fits(const ConvSpec& spec);

// `dense` (the data gradient's kernel otherwise) wrapped to skip zeros where a run allows.
std::unique_ptr<CpuKernel> make_zero_skip_conv(const ConvSpec& spec,
                                               std::unique_ptr<CpuKernel> dense);

// The kernel gradient likewise (zero_skip_kernel_grad.cpp): each nonzero of the output
// gradient adds its value times the input's window there into its output channel's sums,
// every tap and input channel (~9 x 2 multiply-adds of 16 floats for one broadcast on the
// MNIST CNN's second convolution), where the input is finite. It fits the kernel gradient
// (backward_weights) of an f32, ungrouped, unit-stride, undilated 3x3 convolution over an
// input whose channels are contiguous, in whole vectors of the widest ISA, with at least
// 2^21 multiply-adds; and GLIA_CPU_ZERO_SKIP is not 0.
bool zero_skip_kernel_grad_fits(const ConvSpec& spec);
std::unique_ptr<CpuKernel> make_zero_skip_kernel_grad(const ConvSpec& spec,
                                                      std::unique_ptr<CpuKernel> dense);

}  // namespace glia::detail::cpu
