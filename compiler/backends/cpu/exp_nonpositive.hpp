// Internal: glia's exp for arguments that are at most 0 or NaN (x minus a max that
// includes x), under the runs' flush-to-zero, in AVX2 and AVX-512: the softmax kernels'
// (softmax_rows.cpp, softmax_long.cpp).
#pragma once

#include <immintrin.h>

namespace glia::detail::cpu {

// exp(x) for x <= 0 or NaN in 8 lanes, flushing results below 2^-126 to 0 as the runs'
// FTZ does: vector_exp.h's two-part reduction and Cephes' polynomial of degree 7, n
// rounded by adding 1.5 * 2^23, 2^n built from that sum's low bits in one step, and no
// upper clamp; the polynomial in Horner's form, 1 + r (1 + r (...)), seven multiply-adds
// where vector_exp.h's form takes eight operations. 15 vector operations to
// vector_exp.h's 22; within 0.89 ulp over [-88, 0] (exhaustively; 1.24 in vector_exp.h's
// form of the polynomial).
__attribute__((target("avx2,fma"))) inline __m256 exp8_nonpositive(__m256 x) {
  const __m256 magic = _mm256_set1_ps(12582912.f);  // 1.5 * 2^23: adding it rounds
  x = _mm256_max_ps(_mm256_set1_ps(-88.f), x);      // -inf -> 0; NaN (second) passes
  const __m256 t = _mm256_fmadd_ps(x, _mm256_set1_ps(1.44269504088896341f), magic);
  const __m256 n = _mm256_sub_ps(t, magic);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693145751953125f), x);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(1.428606765330187e-06f), r);
  __m256 p = _mm256_fmadd_ps(_mm256_set1_ps(1.9875691500e-4f), r, _mm256_set1_ps(1.3981999507e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  // t's bits end in n (two's complement): + 127 and << 23 make 2^n, 0 for n = -127.
  const __m256i scale =
      _mm256_slli_epi32(_mm256_add_epi32(_mm256_castps_si256(t), _mm256_set1_epi32(127)), 23);
  return _mm256_mul_ps(p, _mm256_castsi256_ps(scale));
}

// 2^(j/16) for j = 0..15 as two floats, hi + lo (lo the rest of hi's rounding).
alignas(64) inline constexpr float kExp2SixteenthsHi[16] = {
    0x1.000000p+0f, 0x1.0b5586p+0f, 0x1.172b84p+0f, 0x1.2387a6p+0f, 0x1.306fe0p+0f, 0x1.3dea64p+0f,
    0x1.4bfdaep+0f, 0x1.5ab07ep+0f, 0x1.6a09e6p+0f, 0x1.7a1148p+0f, 0x1.8ace54p+0f, 0x1.9c4918p+0f,
    0x1.ae89fap+0f, 0x1.c199bep+0f, 0x1.d5818ep+0f, 0x1.ea4afap+0f};
alignas(64) inline constexpr float kExp2SixteenthsLo[16] = {
    0x0.0p+0f,        0x1.9f3122p-25f,  -0x1.c15742p-27f, 0x1.ceac48p-25f,
    0x1.4636e2p-25f,  0x1.824684p-25f,  -0x1.593abcp-25f, -0x1.5bd5ecp-27f,
    0x1.9fcef4p-26f,  -0x1.829fd0p-25f, 0x1.15506ep-27f,  0x1.51f848p-27f,
    -0x1.a94b14p-26f, -0x1.3d56b2p-27f, -0x1.822dbcp-27f, 0x1.52486cp-27f};

// The same in 16 lanes with a table (the multiply-adds are what bounds it): x log2 e
// rounded to sixteenths, m = n + j/16 (adding 1.5 * 2^19 rounds; t's low 4 bits are j,
// all vpermps reads), r = x - m ln 2 in two parts (|r| <= ln 2 / 32; the first product
// exact: ln 2 to 9 bits times m's at most 11), exp(r) - 1 to degree 3 (within 1e-8), and
// 2^(j/16) exp(r) = hi + (hi (exp(r) - 1) + lo), then 2^n by vscalefps (m's floor; FTZ
// flushes results below 2^-126). 7 multiply-adds where the polynomial of degree 7 takes
// 10: 2.64 against 3.05 ns a vector on the Zen 4 measured; within 0.70 ulp over [-88, 0],
// exhaustively.
__attribute__((target("avx512f,fma"))) inline __m512 exp16_nonpositive(__m512 x) {
  const __m512 magic = _mm512_set1_ps(786432.f);  // 1.5 * 2^19: sixteenths its last bits
  x = _mm512_max_ps(_mm512_set1_ps(-88.f), x);    // -inf -> 0; NaN (second) passes
  const __m512 t = _mm512_fmadd_ps(x, _mm512_set1_ps(0x1.715476p+0f), magic);
  const __m512 m = _mm512_sub_ps(t, magic);
  __m512 r = _mm512_fnmadd_ps(m, _mm512_set1_ps(0x1.63p-1f), x);  // 0.693359375
  r = _mm512_fnmadd_ps(m, _mm512_set1_ps(-0x1.bd0106p-13f), r);   // ln 2 - 0.693359375
  const __m512i j = _mm512_castps_si512(t);
  const __m512 hi = _mm512_permutexvar_ps(j, _mm512_load_ps(kExp2SixteenthsHi));
  const __m512 lo = _mm512_permutexvar_ps(j, _mm512_load_ps(kExp2SixteenthsLo));
  __m512 q = _mm512_fmadd_ps(r, _mm512_set1_ps(1.f / 6), _mm512_set1_ps(0.5f));
  q = _mm512_fmadd_ps(q, r, _mm512_set1_ps(1.f));
  const __m512 em1 = _mm512_mul_ps(q, r);
  return _mm512_scalef_ps(_mm512_add_ps(hi, _mm512_fmadd_ps(hi, em1, lo)), m);
}

}  // namespace glia::detail::cpu
