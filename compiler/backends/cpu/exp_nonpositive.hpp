// Internal: glia's exp for arguments that are at most 0 or NaN (x minus a max that
// includes x), under the runs' flush-to-zero, in AVX2 and AVX-512: the softmax kernels'
// (softmax_rows.cpp, softmax_long.cpp).
#pragma once

#include <immintrin.h>

namespace glia::detail::cpu {

// vector_exp.h's two-part reduction and Cephes' polynomial of degree 7, with n rounded by
// adding 1.5 * 2^23 and no upper clamp, the polynomial in Horner's form (1 + r (1 + r (...)):
// seven multiply-adds where vector_exp.h's form takes eight operations; within 0.89 ulp
// over [-88, 0] where that form is within 1.01). Exponentials are bound by their
// multiply-adds (one 512-bit FMA a cycle on the Zen 4 cores measured).
#define GLIA_EXP_NONPOSITIVE_POLY(V, S)                                                \
  S r = V##_fnmadd_ps(n, V##_set1_ps(0.693145751953125f), x);                          \
  r = V##_fnmadd_ps(n, V##_set1_ps(1.428606765330187e-06f), r);                        \
  S p = V##_fmadd_ps(V##_set1_ps(1.9875691500e-4f), r, V##_set1_ps(1.3981999507e-3f)); \
  p = V##_fmadd_ps(p, r, V##_set1_ps(8.3334519073e-3f));                               \
  p = V##_fmadd_ps(p, r, V##_set1_ps(4.1665795894e-2f));                               \
  p = V##_fmadd_ps(p, r, V##_set1_ps(1.6666665459e-1f));                               \
  p = V##_fmadd_ps(p, r, V##_set1_ps(5.0000001201e-1f));                               \
  p = V##_fmadd_ps(p, r, V##_set1_ps(1.0f));                                           \
  p = V##_fmadd_ps(p, r, V##_set1_ps(1.0f));

// exp(x) for x <= 0 or NaN, flushing results below 2^-126 to 0 as the runs' FTZ does: 2^n
// built from the rounding sum's low bits in one step. 15 vector operations to
// vector_exp.h's 22: on a row of a million floats the exponentials were ~60% of the
// time; softmax over 1,000 floats ~1.07 -> ~0.9 us.
__attribute__((target("avx2,fma"))) inline __m256 exp8_nonpositive(__m256 x) {
  const __m256 magic = _mm256_set1_ps(12582912.f);  // 1.5 * 2^23: adding it rounds
  x = _mm256_max_ps(_mm256_set1_ps(-88.f), x);      // -inf -> 0; NaN (second) passes
  const __m256 t = _mm256_fmadd_ps(x, _mm256_set1_ps(1.44269504088896341f), magic);
  const __m256 n = _mm256_sub_ps(t, magic);
  GLIA_EXP_NONPOSITIVE_POLY(_mm256, __m256)
  // t's bits end in n (two's complement): + 127 and << 23 make 2^n, 0 for n = -127.
  const __m256i scale =
      _mm256_slli_epi32(_mm256_add_epi32(_mm256_castps_si256(t), _mm256_set1_epi32(127)), 23);
  return _mm256_mul_ps(p, _mm256_castsi256_ps(scale));
}

// The same in 16 lanes, 2^n by vscalefps (whose results below 2^-126 FTZ flushes): 13
// vector operations to vector_exp.h's 15, 10 multiplies and multiply-adds in either.
__attribute__((target("avx512f,fma"))) inline __m512 exp16_nonpositive(__m512 x) {
  const __m512 magic = _mm512_set1_ps(12582912.f);
  x = _mm512_max_ps(_mm512_set1_ps(-88.f), x);
  const __m512 n =
      _mm512_sub_ps(_mm512_fmadd_ps(x, _mm512_set1_ps(1.44269504088896341f), magic), magic);
  GLIA_EXP_NONPOSITIVE_POLY(_mm512, __m512)
  return _mm512_scalef_ps(p, n);
}

}  // namespace glia::detail::cpu
