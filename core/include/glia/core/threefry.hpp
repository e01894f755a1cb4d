// Threefry-2x32 with 20 rounds (Salmon et al., "Parallel random numbers: as easy as
// 1, 2, 3", the Random123 library; the block function of JAX's default PRNG). The
// interpreter, the CPU and CUDA backends and AOT code all call this one function, so
// every backend draws the same stream from the same key. The random_bits op fills its
// n outputs pairwise: pair j uses counter (hi32(j), lo32(j)) and writes words 2j and
// 2j + 1, dropping the last word when n is odd (see rules_random.cpp).
//   glia::U32x2 r = glia::threefry2x32({0, 0}, {0, 0});  // r.x0 == 0x6b200159
#pragma once

#include <cstdint>

#include "glia/core/half.hpp"  // GLIA_HD, elementwise_math.h

namespace glia {

struct U32x2 {
  std::uint32_t x0 = 0;
  std::uint32_t x1 = 0;
};

// Encrypts `counter` under `key`: a bijection of the counter for each key
// (elementwise_math.h's glia_threefry2x32, which NVRTC kernels and exported C call too).
GLIA_HD inline U32x2 threefry2x32(U32x2 key, U32x2 counter) {
  const std::uint64_t r = glia_threefry2x32(key.x0, key.x1, counter.x0, counter.x1);
  return {static_cast<std::uint32_t>(r), static_cast<std::uint32_t>(r >> 32)};
}

}  // namespace glia
