// glia's own kernel for tiny f32 matmuls: below a few ten thousand multiply-adds, setting
// up a oneDNN primitive call (memory objects, argument map, dispatch) costs more than the
// product, so a plain loop over the MatmulSpec's strides runs it, epilogue included; and
// for a few rows against large weights (see is_row_product).
#pragma once

#include <cstdint>
#include <memory>

#include "backends/cpu/realise.hpp"

namespace glia::detail::cpu {

// Products of at most this many multiply-adds (batch x M x K x N) run on the small kernel.
inline constexpr std::int64_t kSmallMatmulMacs = 1 << 15;
// Row products: one row (batch x M == 1) against weights whose columns are contiguous (N
// at least a vector of 16) run on the small kernel at any size. Reading the weights from
// L2 bounds them (~32 bytes a cycle a core), so the kernel splits the columns between the
// threads, where oneDNN takes one thread below ~65K multiply-adds and costs ~0.5 us a call
// besides (the MNIST MLP's [1x784]·[784x128]: 3.3 us on oneDNN, ~2 us split). More rows
// would each read the weights again: oneDNN reads them once.
inline bool is_row_product(const MatmulSpec& spec) {
  std::int64_t rows = spec.m;
  for (std::int64_t b : spec.batch) rows *= b;
  return rows == 1 && spec.n >= 16 && spec.rhs_strides[spec.batch.size() + 1] == 1;
}
// Products of at least this many multiply-adds split their columns between the threads.
inline constexpr std::int64_t kSplitColumnsMacs = 1 << 16;

inline bool is_small_matmul(const MatmulSpec& spec) {
  return spec.multiply_adds() <= kSmallMatmulMacs || is_row_product(spec);
}

// The kernel writing `spec` into `out`, or null where its epilogue has more operands than
// the kernel's table holds.
std::unique_ptr<CpuKernel> make_small_matmul_kernel(const MatmulSpec& spec, ValueId out);

}  // namespace glia::detail::cpu
