/* glia's vector expf, in C that the compiled sweeps' prelude (native_module.cpp embeds
 * this text) compiles (the softmax kernels have their own for arguments <= 0,
 * exp_nonpositive.hpp).
 * exp(x) = 2^n exp(r), n = round(x log2 e), r = x - n ln 2 in two parts, exp(r) by a
 * degree-7 polynomial (Cephes'); 2^n by vscalefps (AVX-512), or by two exact powers of two
 * (AVX2: each normal, so that the one rounding is the last), overflowing to inf,
 * underflowing to 0 and passing NaN (the clamps return their second operand for it); x is
 * clamped first so that huge arguments stay exact. Within 1.01 ulp over [-87.3, 88.7].
 * GLIA_EXP16_BODY and GLIA_EXP8_BODY are the bodies of functions of `x` (__m512, __m256)
 * compiled for AVX-512F and FMA, and for AVX2 and FMA. */
#ifndef GLIA_VECTOR_EXP_H
#define GLIA_VECTOR_EXP_H
#include <immintrin.h>
/* GLIA_EXP_POLY: given x and n = round(x log2 e), p = exp(x - n ln 2) (the two-part
 * reduction, then the polynomial). */
#define GLIA_EXP_POLY(V, S)                                     \
  S r = V##_fnmadd_ps(n, V##_set1_ps(0.693145751953125f), x);   \
  r = V##_fnmadd_ps(n, V##_set1_ps(1.428606765330187e-06f), r); \
  S p = V##_set1_ps(1.9875691500e-4f);                          \
  p = V##_fmadd_ps(p, r, V##_set1_ps(1.3981999507e-3f));        \
  p = V##_fmadd_ps(p, r, V##_set1_ps(8.3334519073e-3f));        \
  p = V##_fmadd_ps(p, r, V##_set1_ps(4.1665795894e-2f));        \
  p = V##_fmadd_ps(p, r, V##_set1_ps(1.6666665459e-1f));        \
  p = V##_fmadd_ps(p, r, V##_set1_ps(5.0000001201e-1f));        \
  p = V##_add_ps(V##_fmadd_ps(p, V##_mul_ps(r, r), r), V##_set1_ps(1.0f));
#define GLIA_EXP_REDUCE(V, S, ROUND)                                       \
  x = V##_min_ps(V##_set1_ps(88.8f), V##_max_ps(V##_set1_ps(-104.0f), x)); \
  const S n = ROUND(V##_mul_ps(x, V##_set1_ps(1.44269504088896341f)),      \
                    _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);        \
  GLIA_EXP_POLY(V, S)
#define GLIA_EXP16_BODY                                 \
  GLIA_EXP_REDUCE(_mm512, __m512, _mm512_roundscale_ps) \
  return _mm512_scalef_ps(p, n);
#define GLIA_EXP8_BODY                                                                        \
  GLIA_EXP_REDUCE(_mm256, __m256, _mm256_round_ps)                                            \
  const __m256i k = _mm256_cvtps_epi32(n), half = _mm256_srai_epi32(k, 1);                    \
  const __m256i bias = _mm256_set1_epi32(127);                                                \
  const __m256 s1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(half, bias), 23)); \
  const __m256 s2 = _mm256_castsi256_ps(                                                      \
      _mm256_slli_epi32(_mm256_add_epi32(_mm256_sub_epi32(k, half), bias), 23));              \
  return _mm256_mul_ps(_mm256_mul_ps(p, s1), s2);
#endif
