// Internal: a convolution's data and kernel gradients that skip the zeros of the output
// gradient.
//
// Behind max pooling the output gradient of a convolution is mostly zeros: pooling's
// adjoint sends each window's gradient to one position of it (the MNIST CNN's 2x2 pooling
// of 11x11 outputs leaves at most 25 of 121 positions of a channel nonzero, 21%), and
// relu's mask zeros more. Where a sample of a run's output gradient is sparse enough, the
// data gradient adds each nonzero of the output gradient times its output channel's
// weights into the input positions of its window alone, the window's sums in registers.
// Else, or where the weights hold an infinity or NaN (0 x inf is NaN), the dense kernel it
// wraps runs. Results differ from the dense kernel's only in the order of the additions.
// GLIA_CPU_ZERO_SKIP=0 in the environment at compile time leaves both gradients dense, as
// it does matmuls.
#pragma once

#include <memory>

#include "backends/cpu/realise.hpp"

namespace glia::detail::cpu {

// The most nonzeros, as a fraction of the output gradient's sampled elements, that a run
// of the data gradient skips the zeros of, and of the kernel gradient: on the MNIST CNN's
// second convolution (2 threads of a Zen 4, scattered nonzeros) the data gradient broke
// even with oneDNN's direct kernel at ~45% nonzero (a term costs ~2 cycles a tap where the
// dense kernel's multiply-adds run at one a cycle), the kernel gradient with oneDNN's
// Winograd at ~30%.
inline constexpr double kZeroSkipConvDensity = 0.4;
inline constexpr double kZeroSkipKernelGradDensity = 0.3;

// Whether the output gradient dy (`view`: [N, K, OH, OW]) is at most `density` nonzero at
// 16 output positions spread over it, every output channel of each (NaN counts as
// nonzero): whether a run pays for skipping zeros.
bool sampled_sparse(const float* dy, const StridedView& view, double density);

// The shape both gradients read: x [N, C, H, W] (the spec's src) and dy [N, K, OH, OW]
// (its dst), their strides in floats (x's channels contiguous).
struct ConvDims {
  std::int64_t n = 0, c = 0, h = 0, w = 0, k = 0, oh = 0, ow = 0;
  std::int64_t x_n = 0, x_h = 0, x_w = 0, dy_n = 0, dy_k = 0, dy_h = 0, dy_w = 0;
  explicit ConvDims(const ConvSpec& spec);
  ConvDims() = default;
};

// The floats of a vector of the ISA the gradients' loops run in; 0 where vector_isa() has
// none they take.
int zero_skip_conv_lanes();

// What both gradients need of `spec` besides their own: GLIA_CPU_ZERO_SKIP is not 0, a
// vector ISA, the pass, f32, ungrouped, 2-D, unit strides and dilations, the channels of
// x and dy contiguous and x's in whole vectors, at least 2^21 multiply-adds.
bool zero_skip_conv_basics(const ConvSpec& spec, ConvSpec::Pass pass);

// Whether `spec` may skip zeros: the data gradient (backward_data) of an f32, ungrouped,
// unit-stride, undilated 2-D convolution over channels-last activations, input and output
// channels in whole vectors of the widest ISA (16 floats on AVX-512, 8 on AVX2), at least
// 2^21 multiply-adds; and GLIA_CPU_ZERO_SKIP is not 0.
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
