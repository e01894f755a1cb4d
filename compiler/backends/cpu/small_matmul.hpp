// glia's own kernel for tiny f32 matmuls: below a few ten thousand multiply-adds, setting
// up a oneDNN primitive call (memory objects, argument map, dispatch) costs more than the
// product, so a plain loop over the MatmulSpec's strides runs it, epilogue included.
#pragma once

#include <cstdint>
#include <memory>

#include "backends/cpu/realise.hpp"

namespace glia::detail::cpu {

// Products of at most this many multiply-adds (batch x M x K x N) run on the small kernel.
inline constexpr std::int64_t kSmallMatmulMacs = 1 << 15;

inline bool is_small_matmul(const MatmulSpec& spec) {
  return spec.multiply_adds() <= kSmallMatmulMacs;
}

// The kernel writing `spec` into `out`, or null where its epilogue has more operands than
// the kernel's table holds.
std::unique_ptr<CpuKernel> make_small_matmul_kernel(const MatmulSpec& spec, ValueId out);

}  // namespace glia::detail::cpu
