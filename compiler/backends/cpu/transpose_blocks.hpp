// Internal: square blocks of floats transposed in registers (16 x 16 with AVX-512, 8 x 8
// with AVX2), for the zero-skipping kernels (zero_skip_isa.inc, zero_skip_kernel_grad.cpp).
// Each carries its ISA's target attribute: call it from code compiled for that ISA.
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace glia::detail::cpu {

// The 16 x 16 floats from a (rows lda apart) transposed into `out` (rows ldo apart):
// out[j * ldo + i] = a[i * lda + j]. (Generic shuffles: GCC 12's unpack intrinsics warn of
// an uninitialised operand they never read.)
__attribute__((target("avx512f"))) inline void transpose16(const float* a, std::int64_t lda,
                                                           float* out, std::int64_t ldo) {
  typedef float V __attribute__((vector_size(64)));
  typedef float VU __attribute__((vector_size(64), aligned(4)));
  V r[16], u[16];
  for (int i = 0; i < 16; ++i) r[i] = *reinterpret_cast<const VU*>(a + i * lda);
  // In each 128-bit lane: rows 2i and 2i + 1's elements 0, 1, then 2, 3, interleaved.
  for (int i = 0; i < 8; ++i) {
    u[2 * i] = __builtin_shufflevector(r[2 * i], r[2 * i + 1], 0, 16, 1, 17, 4, 20, 5, 21, 8, 24, 9,
                                       25, 12, 28, 13, 29);
    u[2 * i + 1] = __builtin_shufflevector(r[2 * i], r[2 * i + 1], 2, 18, 3, 19, 6, 22, 7, 23, 10,
                                           26, 11, 27, 14, 30, 15, 31);
  }
  // r[4i + j], lane l: element 4l + j of rows 4i..4i + 3.
  for (int i = 0; i < 4; ++i)
    for (int h = 0; h < 2; ++h) {
      const V& x = u[4 * i + h];
      const V& y = u[4 * i + h + 2];
      r[4 * i + 2 * h] =
          __builtin_shufflevector(x, y, 0, 1, 16, 17, 4, 5, 20, 21, 8, 9, 24, 25, 12, 13, 28, 29);
      r[4 * i + 2 * h + 1] =
          __builtin_shufflevector(x, y, 2, 3, 18, 19, 6, 7, 22, 23, 10, 11, 26, 27, 14, 15, 30, 31);
    }
  // Column 4l + j: lane l of r[j], r[4 + j], r[8 + j] and r[12 + j].
  for (int j = 0; j < 4; ++j) {
    const V s0 = __builtin_shufflevector(r[j], r[4 + j], 0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20,
                                         21, 22, 23);
    const V s1 = __builtin_shufflevector(r[j], r[4 + j], 8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26,
                                         27, 28, 29, 30, 31);
    const V s2 = __builtin_shufflevector(r[8 + j], r[12 + j], 0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18,
                                         19, 20, 21, 22, 23);
    const V s3 = __builtin_shufflevector(r[8 + j], r[12 + j], 8, 9, 10, 11, 12, 13, 14, 15, 24, 25,
                                         26, 27, 28, 29, 30, 31);
    *reinterpret_cast<VU*>(out + (j)*ldo) =
        __builtin_shufflevector(s0, s2, 0, 1, 2, 3, 8, 9, 10, 11, 16, 17, 18, 19, 24, 25, 26, 27);
    *reinterpret_cast<VU*>(out + (4 + j) * ldo) =
        __builtin_shufflevector(s0, s2, 4, 5, 6, 7, 12, 13, 14, 15, 20, 21, 22, 23, 28, 29, 30, 31);
    *reinterpret_cast<VU*>(out + (8 + j) * ldo) =
        __builtin_shufflevector(s1, s3, 0, 1, 2, 3, 8, 9, 10, 11, 16, 17, 18, 19, 24, 25, 26, 27);
    *reinterpret_cast<VU*>(out + (12 + j) * ldo) =
        __builtin_shufflevector(s1, s3, 4, 5, 6, 7, 12, 13, 14, 15, 20, 21, 22, 23, 28, 29, 30, 31);
  }
}

// The 8 x 8 floats likewise.
__attribute__((target("avx2"))) inline void transpose8(const float* a, std::int64_t lda, float* out,
                                                       std::int64_t ldo) {
  __m256 r[8], u[8];
  for (int i = 0; i < 8; ++i) r[i] = _mm256_loadu_ps(a + i * lda);
  for (int i = 0; i < 4; ++i) {  // per 128-bit lane: rows 2i, 2i + 1 interleaved
    u[2 * i] = _mm256_unpacklo_ps(r[2 * i], r[2 * i + 1]);
    u[2 * i + 1] = _mm256_unpackhi_ps(r[2 * i], r[2 * i + 1]);
  }
  for (int i = 0; i < 2; ++i) {  // r[4i + j], lane l: element 4l + j of rows 4i..4i + 3
    r[4 * i] = _mm256_shuffle_ps(u[4 * i], u[4 * i + 2], 0x44);
    r[4 * i + 1] = _mm256_shuffle_ps(u[4 * i], u[4 * i + 2], 0xEE);
    r[4 * i + 2] = _mm256_shuffle_ps(u[4 * i + 1], u[4 * i + 3], 0x44);
    r[4 * i + 3] = _mm256_shuffle_ps(u[4 * i + 1], u[4 * i + 3], 0xEE);
  }
  for (int j = 0; j < 4; ++j) {
    _mm256_storeu_ps(out + j * ldo, _mm256_permute2f128_ps(r[j], r[4 + j], 0x20));
    _mm256_storeu_ps(out + (4 + j) * ldo, _mm256_permute2f128_ps(r[j], r[4 + j], 0x31));
  }
}

}  // namespace glia::detail::cpu
