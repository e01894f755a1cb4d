// Internal: glia's AVX2 exp for arguments that are at most 0 or NaN (x minus a max that
// includes x), under the runs' flush-to-zero: the softmax kernels' (softmax_rows.cpp,
// softmax_long.cpp).
#pragma once

#include <immintrin.h>

#include "backends/cpu/vector_exp.h"

namespace glia::detail::cpu {

// exp(x) for x <= 0 or NaN, flushing results below 2^-126 to 0 as the runs' FTZ does:
// vector_exp.h's reduction and polynomial, with n rounded by adding 1.5 * 2^23 and 2^n
// built from that sum's low bits in one step, and no upper clamp; within 1.24 ulp. 16
// vector operations to vector_exp.h's 22: on a row of a million floats the exponentials
// were ~60% of the time; softmax over 1,000 floats ~1.07 -> ~0.9 us.
__attribute__((target("avx2,fma"))) inline __m256 exp8_nonpositive(__m256 x) {
  const __m256 magic = _mm256_set1_ps(12582912.f);  // 1.5 * 2^23: adding it rounds
  x = _mm256_max_ps(_mm256_set1_ps(-88.f), x);      // -inf -> 0; NaN (second) passes
  const __m256 t = _mm256_fmadd_ps(x, _mm256_set1_ps(1.44269504088896341f), magic);
  const __m256 n = _mm256_sub_ps(t, magic);
  GLIA_EXP_POLY(_mm256, __m256)
  // t's bits end in n (two's complement): + 127 and << 23 make 2^n, 0 for n = -127.
  const __m256i scale =
      _mm256_slli_epi32(_mm256_add_epi32(_mm256_castps_si256(t), _mm256_set1_epi32(127)), 23);
  return _mm256_mul_ps(p, _mm256_castsi256_ps(scale));
}

}  // namespace glia::detail::cpu
