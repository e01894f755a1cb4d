/* glia's AOT runtime: the f32 matrix product that exported predictors call (pasted into
 * NAME.c by the exporter when the program has a matmul; glia::aot::runtime_source() is
 * this file's text). Plain C11; the vector tiles use AVX-512 or AVX2+FMA intrinsics when
 * the compiler targets them (-march=native, -mavx512f, -mavx2 -mfma) and portable loops,
 * which compilers auto-vectorise, otherwise. The includer includes <stdint.h>.
 *
 *   glia_gemm_f32(M, N, K, A, as_m, as_k, B, bs_k, bs_n, C, cs_m, cs_n);
 *     C[i*cs_m + j*cs_n] = sum_k A[i*as_m + k*as_k] * B[k*bs_k + j*bs_n]   (i<M, j<N)
 *
 * Where B's and C's rows are contiguous (bs_n == cs_n == 1, a dense layer's [in, out]
 * kernel), register tiles of GLIA_AOT_MR rows by GLIA_AOT_NV vectors accumulate with
 * fused multiply-adds, reading B straight (no packing: nothing is allocated); a lone row
 * (batch 1) takes GLIA_AOT_NW vectors at once so that many independent sums are in flight.
 * Column tails use masked loads and stores. Other layouts use plain loops. */
#ifndef GLIA_AOT_RUNTIME_H
#define GLIA_AOT_RUNTIME_H

#if defined(__AVX512F__)
#include <immintrin.h>
#define GLIA_AOT_VL 16
#define GLIA_AOT_MR 8
#define GLIA_AOT_NV 2
#define GLIA_AOT_NW 8
typedef __m512 glia_vf;
typedef __mmask16 glia_vmask;
#define GLIA_VZERO() _mm512_setzero_ps()
#define GLIA_VLOAD(p) _mm512_loadu_ps(p)
#define GLIA_VLOADM(p, m) _mm512_maskz_loadu_ps((m), (p))
#define GLIA_VSTORE(p, v) _mm512_storeu_ps((p), (v))
#define GLIA_VSTOREM(p, v, m) _mm512_mask_storeu_ps((p), (m), (v))
#define GLIA_VFMA(a, b, c) _mm512_fmadd_ps((a), (b), (c))
#define GLIA_VSET1(x) _mm512_set1_ps(x)
#define GLIA_VMASK(n) ((__mmask16)((1u << (n)) - 1u))
#elif defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#define GLIA_AOT_VL 8
#define GLIA_AOT_MR 4
#define GLIA_AOT_NV 2
#define GLIA_AOT_NW 6
typedef __m256 glia_vf;
typedef __m256i glia_vmask;
#define GLIA_VZERO() _mm256_setzero_ps()
#define GLIA_VLOAD(p) _mm256_loadu_ps(p)
#define GLIA_VLOADM(p, m) _mm256_maskload_ps((p), (m))
#define GLIA_VSTORE(p, v) _mm256_storeu_ps((p), (v))
#define GLIA_VSTOREM(p, v, m) _mm256_maskstore_ps((p), (m), (v))
#define GLIA_VFMA(a, b, c) _mm256_fmadd_ps((a), (b), (c))
#define GLIA_VSET1(x) _mm256_set1_ps(x)
#define GLIA_VMASK(n) \
  _mm256_cmpgt_epi32(_mm256_set1_epi32((int)(n)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7))
#else
#define GLIA_AOT_VL 0
#endif

#if GLIA_AOT_VL
/* One register tile: MR rows of A times NV vectors of B's columns, the last vector
 * masked when MASKED. The constant-bound loops unroll and the arrays stay in registers. */
#define GLIA_AOT_TILE(NAME, MR, NV, MASKED)                                                      \
  static inline void NAME(int64_t K, const float* A, int64_t as_m, int64_t as_k, const float* B, \
                          int64_t bs_k, float* C, int64_t cs_m, glia_vmask mask) {               \
    glia_vf acc[MR][NV];                                                                         \
    int r, v;                                                                                    \
    int64_t k;                                                                                   \
    (void)mask;                                                                                  \
    for (r = 0; r < MR; ++r)                                                                     \
      for (v = 0; v < NV; ++v) acc[r][v] = GLIA_VZERO();                                         \
    for (k = 0; k < K; ++k) {                                                                    \
      glia_vf b[NV];                                                                             \
      const float* bk = B + k * bs_k;                                                            \
      for (v = 0; v < NV; ++v)                                                                   \
        b[v] = (MASKED && v == NV - 1) ? GLIA_VLOADM(bk + v * GLIA_AOT_VL, mask)                 \
                                       : GLIA_VLOAD(bk + v * GLIA_AOT_VL);                       \
      for (r = 0; r < MR; ++r) {                                                                 \
        glia_vf a = GLIA_VSET1(A[r * as_m + k * as_k]);                                          \
        for (v = 0; v < NV; ++v) acc[r][v] = GLIA_VFMA(a, b[v], acc[r][v]);                      \
      }                                                                                          \
    }                                                                                            \
    for (r = 0; r < MR; ++r)                                                                     \
      for (v = 0; v < NV; ++v) {                                                                 \
        if (MASKED && v == NV - 1)                                                               \
          GLIA_VSTOREM(C + r * cs_m + v * GLIA_AOT_VL, acc[r][v], mask);                         \
        else                                                                                     \
          GLIA_VSTORE(C + r * cs_m + v * GLIA_AOT_VL, acc[r][v]);                                \
      }                                                                                          \
  }

GLIA_AOT_TILE(glia_tile_block, GLIA_AOT_MR, GLIA_AOT_NV, 0)
GLIA_AOT_TILE(glia_tile_block1, GLIA_AOT_MR, 1, 0)
GLIA_AOT_TILE(glia_tile_block1m, GLIA_AOT_MR, 1, 1)
GLIA_AOT_TILE(glia_tile_row, 1, GLIA_AOT_NW, 0)
GLIA_AOT_TILE(glia_tile_row1, 1, 1, 0)
GLIA_AOT_TILE(glia_tile_row1m, 1, 1, 1)

/* `rows` rows (GLIA_AOT_MR at once, or one) across all N columns. */
static inline void glia_gemm_rows_f32(int64_t rows, int64_t N, int64_t K, const float* A,
                                      int64_t as_m, int64_t as_k, const float* B, int64_t bs_k,
                                      float* C, int64_t cs_m) {
  const int64_t vl = GLIA_AOT_VL;
  const glia_vmask none = GLIA_VMASK(GLIA_AOT_VL);
  int64_t j = 0;
  if (rows == GLIA_AOT_MR) {
    for (; j + GLIA_AOT_NV * vl <= N; j += GLIA_AOT_NV * vl)
      glia_tile_block(K, A, as_m, as_k, B + j, bs_k, C + j, cs_m, none);
    for (; j + vl <= N; j += vl) glia_tile_block1(K, A, as_m, as_k, B + j, bs_k, C + j, cs_m, none);
    if (j < N) glia_tile_block1m(K, A, as_m, as_k, B + j, bs_k, C + j, cs_m, GLIA_VMASK(N - j));
  } else {
    for (; j + GLIA_AOT_NW * vl <= N; j += GLIA_AOT_NW * vl)
      glia_tile_row(K, A, as_m, as_k, B + j, bs_k, C + j, cs_m, none);
    for (; j + vl <= N; j += vl) glia_tile_row1(K, A, as_m, as_k, B + j, bs_k, C + j, cs_m, none);
    if (j < N) glia_tile_row1m(K, A, as_m, as_k, B + j, bs_k, C + j, cs_m, GLIA_VMASK(N - j));
  }
}
#endif

static void glia_gemm_f32(int64_t M, int64_t N, int64_t K, const float* A, int64_t as_m,
                          int64_t as_k, const float* B, int64_t bs_k, int64_t bs_n, float* C,
                          int64_t cs_m, int64_t cs_n) {
  int64_t i, j, k;
#if GLIA_AOT_VL
  if (bs_n == 1 && cs_n == 1) {
    for (i = 0; i + GLIA_AOT_MR <= M; i += GLIA_AOT_MR)
      glia_gemm_rows_f32(GLIA_AOT_MR, N, K, A + i * as_m, as_m, as_k, B, bs_k, C + i * cs_m, cs_m);
    for (; i < M; ++i)
      glia_gemm_rows_f32(1, N, K, A + i * as_m, as_m, as_k, B, bs_k, C + i * cs_m, cs_m);
    return;
  }
#endif
  if (bs_n == 1 && cs_n == 1) {
    /* Rows of C as sums of B's rows: the inner loop runs over contiguous columns. */
    for (i = 0; i < M; ++i) {
      float* c = C + i * cs_m;
      for (j = 0; j < N; ++j) c[j] = 0.0f;
      for (k = 0; k < K; ++k) {
        const float a = A[i * as_m + k * as_k];
        const float* b = B + k * bs_k;
        for (j = 0; j < N; ++j) c[j] += a * b[j];
      }
    }
    return;
  }
  for (i = 0; i < M; ++i)
    for (j = 0; j < N; ++j) {
      float acc = 0.0f;
      for (k = 0; k < K; ++k) acc += A[i * as_m + k * as_k] * B[k * bs_k + j * bs_n];
      C[i * cs_m + j * cs_n] = acc;
    }
}

#endif /* GLIA_AOT_RUNTIME_H */
