// glia's own kernel for tiny f32 matmuls: below a few ten thousand multiply-adds, setting
// up a oneDNN primitive call (memory objects, argument map, dispatch) costs more than
// the product, so a plain loop over the MatmulShape strides runs it, epilogue included.
#pragma once

#include <cstdint>
#include <memory>

#include "backends/cpu/onednn_epilogue.hpp"
#include "backends/cpu/onednn_matmul.hpp"

namespace glia::detail::cpu {

// Products of at most this many multiply-adds (batch x M x K x N) run on the small kernel.
inline constexpr std::int64_t kSmallMatmulMacs = 1 << 15;

bool is_small_matmul(const MatmulShape& shape);

// The kernel for dot_general `id` (viewed as `shape`) followed by `epilogue` (whose
// destination dimensions are the product's [batch..., M, N]; an empty one has result id).
std::unique_ptr<Kernel> make_small_matmul_kernel(const Node& node, ValueId id, MatmulShape shape,
                                                 Epilogue epilogue);

}  // namespace glia::detail::cpu
