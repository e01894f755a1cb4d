// Lowering of convolution nodes onto oneDNN: a forward convolution (with its epilogue of
// bias, activation and residual add as post-ops), and the two shapes autograd gives the
// backward pass — the input gradient (a convolution of the output gradient with the
// reversed, transposed kernel) as convolution_backward_data, the kernel gradient (batch
// and feature roles swapped) as convolution_backward_weights.
#pragma once

#include <memory>

#include "backends/cpu/program.hpp"

namespace glia::detail::cpu {

// The kernel for the f32 convolution `id` and what surrounds it, or null when it does
// not map exactly onto a oneDNN convolution (it then runs elsewhere).
std::unique_ptr<Kernel> make_conv_kernel(Lowering& lowering, ValueId id);

}  // namespace glia::detail::cpu
