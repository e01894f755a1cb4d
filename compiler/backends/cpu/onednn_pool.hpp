// Lowering of max pooling: window_max onto oneDNN's pooling primitive, and its adjoint
// select_and_scatter onto a loop of our own that picks the first maximum of each window
// in window order, as the reference kernel does (oneDNN's backward pooling would need
// the forward pass's workspace and does not promise which of tied maxima it picks).
#pragma once

#include <memory>

#include "backends/cpu/program.hpp"

namespace glia::detail::cpu {

// Null when the node is not an f32 window op whose windows span at most three axes
// besides a batch and a channel axis (every other axis: window 1, stride 1, no padding).
std::unique_ptr<Kernel> make_pool_kernel(Lowering& lowering, ValueId id);

}  // namespace glia::detail::cpu
