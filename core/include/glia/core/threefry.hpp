// Threefry-2x32 with 20 rounds (Salmon et al., "Parallel random numbers: as easy as
// 1, 2, 3", the Random123 library; the block function of JAX's default PRNG). The
// interpreter, the CPU and CUDA backends and AOT code all call this one function, so
// every backend draws the same stream from the same key. The random_bits op fills its
// n outputs pairwise: pair j uses counter (hi32(j), lo32(j)) and writes words 2j and
// 2j + 1, dropping the last word when n is odd (see rules_random.cpp).
//   glia::U32x2 r = glia::threefry2x32({0, 0}, {0, 0});  // r.x0 == 0x6b200159
#pragma once

#include <cstdint>

#include "glia/core/half.hpp"  // GLIA_HD

namespace glia {

struct U32x2 {
  std::uint32_t x0 = 0;
  std::uint32_t x1 = 0;
};

GLIA_HD inline std::uint32_t rotl32(std::uint32_t x, int n) { return (x << n) | (x >> (32 - n)); }

// Encrypts `counter` under `key`: a bijection of the counter for each key.
GLIA_HD inline U32x2 threefry2x32(U32x2 key, U32x2 counter) {
  // Random123's R_32x2 rotation schedule, used in groups of four rounds.
  constexpr int kRotations[8] = {13, 15, 26, 6, 17, 29, 16, 24};
  const std::uint32_t ks[3] = {key.x0, key.x1, 0x1BD11BDAu ^ key.x0 ^ key.x1};
  std::uint32_t x0 = counter.x0 + ks[0];
  std::uint32_t x1 = counter.x1 + ks[1];
  for (int round = 0; round < 20; ++round) {
    x0 += x1;
    x1 = rotl32(x1, kRotations[round % 8]);
    x1 ^= x0;
    if (round % 4 == 3) {  // key injection s = 1..5 after every fourth round
      std::uint32_t s = static_cast<std::uint32_t>(round / 4 + 1);
      x0 += ks[s % 3];
      x1 += ks[(s + 1) % 3] + s;
    }
  }
  return {x0, x1};
}

}  // namespace glia
