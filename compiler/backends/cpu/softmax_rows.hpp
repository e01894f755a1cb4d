// The softmax kernels' shared spec (softmax_rows.cpp matches it, softmax_long.cpp runs
// its long rows): where the four sweeps of softmax over the last axis read and write.
#pragma once

#include <cstdint>
#include <memory>

#include "glia/core/graph.hpp"

namespace glia::detail::cpu {

class CpuKernel;

struct SoftmaxRowsSpec {
  ValueId x = 0, max = 0, e = 0, sum = 0, numerator = 0, reciprocal = 0, y = 0;
  std::int64_t numerator_offset = 0, rows = 1, cols = 1;
};

// Rows of more than softmax_rows.cpp's 16,384 columns whose exponentials no other kernel
// reads: two passes over memory, where the sweeps make three (softmax_long.cpp).
std::unique_ptr<CpuKernel> make_softmax_long(const SoftmaxRowsSpec& spec);

}  // namespace glia::detail::cpu
