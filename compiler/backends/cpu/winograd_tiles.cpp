// The AVX2 loops of glia's Winograd F(2x2, 3x3) convolution (winograd_tiles.hpp).
#include "backends/cpu/winograd_tiles.hpp"

#include <immintrin.h>

#pragma GCC push_options
#pragma GCC target("avx2,fma")

namespace glia::detail::cpu::winograd {

namespace {

using V = __m256;

V add(V a, V b) { return _mm256_add_ps(a, b); }
V sub(V a, V b) { return _mm256_sub_ps(a, b); }

// The 4-point maps on x[0], x[s], x[2s], x[3s] (rows: s = 4, columns: s = 1).
// B' x: the input transform.
void b_t(const V* x, int s, V* o) {
  o[0] = sub(x[0], x[2 * s]);
  o[s] = add(x[s], x[2 * s]);
  o[2 * s] = sub(x[2 * s], x[s]);
  o[3 * s] = sub(x[s], x[3 * s]);
}
// B x: its adjoint.
void b(const V* x, int s, V* o) {
  o[0] = x[0];
  o[s] = add(sub(x[s], x[2 * s]), x[3 * s]);
  o[2 * s] = sub(add(x[s], x[2 * s]), x[0]);
  o[3 * s] = sub(_mm256_setzero_ps(), x[3 * s]);
}

V load(const float* p) { return _mm256_loadu_ps(p); }
void store(float* p, V v) { _mm256_storeu_ps(p, v); }

}  // namespace

void input_tile(const float* const* d, std::int64_t channels, float* u, std::int64_t step) {
  for (std::int64_t c = 0; c < channels; c += 8) {
    V x[16], t[16], o[16];
    for (int i = 0; i < 16; ++i) x[i] = load(d[i] + c);
    for (int j = 0; j < 4; ++j) b_t(x + j, 4, t + j);          // B' x, column by column
    for (int r = 0; r < 4; ++r) b_t(t + 4 * r, 1, o + 4 * r);  // (B' x) B, row by row
    for (int i = 0; i < 16; ++i) store(u + i * step + c, o[i]);
  }
}

void input_adjoint(const float* du, std::int64_t step, std::int64_t channels, float* const* out) {
  for (std::int64_t c = 0; c < channels; c += 8) {
    V x[16], t[16], o[16];
    for (int i = 0; i < 16; ++i) x[i] = load(du + i * step + c);
    for (int j = 0; j < 4; ++j) b(x + j, 4, t + j);
    for (int r = 0; r < 4; ++r) b(t + 4 * r, 1, o + 4 * r);
    for (int i = 0; i < 16; ++i)
      if (out[i] != nullptr) store(out[i] + c, add(load(out[i] + c), o[i]));
  }
}

namespace {

// The epilogue on v, output channels [k, k + 8) of the pixel whose operands start at `at`
// (one pointer per step).
V finish(V v, const TileEpilogue& e, const float* const* at, std::int64_t k) {
  for (int s = 0; s < e.steps; ++s) {
    if (e.step[s] == TileEpilogue::Step::relu)
      v = _mm256_max_ps(_mm256_setzero_ps(), v);  // NaN stays, as in max(x, 0)
    else
      v = add(v, e.strides[s][1] == 0 ? _mm256_broadcast_ss(at[s]) : load(at[s] + k));
  }
  return v;
}

// Each add's operand at output (n, oy, ox).
void operands_at(const TileEpilogue& e, std::int64_t n, std::int64_t oy, std::int64_t ox,
                 const float** at) {
  for (int s = 0; s < e.steps; ++s)
    at[s] = e.base[s] + n * e.strides[s][0] + oy * e.strides[s][2] + ox * e.strides[s][3];
}

}  // namespace

void output_tile(const float* m, std::int64_t step, std::int64_t channels, float* const* y,
                 const TileEpilogue& e, std::int64_t n, std::int64_t oy, std::int64_t ox) {
  const float* at[4][TileEpilogue::kMaxSteps];
  for (int i = 0; i < 4; ++i) operands_at(e, n, oy + i / 2, ox + i % 2, at[i]);
  for (std::int64_t k = 0; k < channels; k += 8) {
    V x[16], r[8];
    for (int i = 0; i < 16; ++i) x[i] = load(m + i * step + k);
    for (int j = 0; j < 4; ++j) {  // A' x: rows 0 and 1 of 2
      r[j] = add(add(x[j], x[4 + j]), x[8 + j]);
      r[4 + j] = sub(sub(x[4 + j], x[8 + j]), x[12 + j]);
    }
    V o[4];
    for (int i = 0; i < 2; ++i) {  // (A' x) A
      o[2 * i] = add(add(r[4 * i], r[4 * i + 1]), r[4 * i + 2]);
      o[2 * i + 1] = sub(sub(r[4 * i + 1], r[4 * i + 2]), r[4 * i + 3]);
    }
    for (int i = 0; i < 4; ++i)
      if (y[i] != nullptr) store(y[i] + k, finish(o[i], e, at[i], k));
  }
}

void output_adjoint(const float* const* dy, std::int64_t channels, float* m, std::int64_t step) {
  const V zero = _mm256_setzero_ps();
  for (std::int64_t k = 0; k < channels; k += 8) {
    V g[4], r[8], o[16];
    for (int i = 0; i < 4; ++i) g[i] = dy[i] != nullptr ? load(dy[i] + k) : zero;
    for (int j = 0; j < 2; ++j) {  // A g: 4 rows of 2
      r[j] = g[j];
      r[2 + j] = add(g[j], g[2 + j]);
      r[4 + j] = sub(g[j], g[2 + j]);
      r[6 + j] = sub(zero, g[2 + j]);
    }
    for (int i = 0; i < 4; ++i) {  // (A g) A'
      o[4 * i] = r[2 * i];
      o[4 * i + 1] = add(r[2 * i], r[2 * i + 1]);
      o[4 * i + 2] = sub(r[2 * i], r[2 * i + 1]);
      o[4 * i + 3] = sub(zero, r[2 * i + 1]);
    }
    for (int i = 0; i < 16; ++i) store(m + i * step + k, o[i]);
  }
}

void weight_tile(const float* g, std::int64_t gu, std::int64_t gv, float* w, std::int64_t step) {
  float t[4][3];
  for (int v = 0; v < 3; ++v) {  // G g
    const float g0 = g[v * gv], g1 = g[gu + v * gv], g2 = g[2 * gu + v * gv];
    t[0][v] = g0;
    t[1][v] = 0.5f * (g0 + g1 + g2);
    t[2][v] = 0.5f * (g0 - g1 + g2);
    t[3][v] = g2;
  }
  for (int i = 0; i < 4; ++i) {  // (G g) G'
    w[(4 * i) * step] = t[i][0];
    w[(4 * i + 1) * step] = 0.5f * (t[i][0] + t[i][1] + t[i][2]);
    w[(4 * i + 2) * step] = 0.5f * (t[i][0] - t[i][1] + t[i][2]);
    w[(4 * i + 3) * step] = t[i][2];
  }
}

void weight_adjoint(const float* dw, std::int64_t step, float* g, std::int64_t gu,
                    std::int64_t gv) {
  float t[3][4];
  for (int s = 0; s < 4; ++s) {  // G' dw
    const float d0 = dw[s * step], d1 = dw[(4 + s) * step], d2 = dw[(8 + s) * step],
                d3 = dw[(12 + s) * step];
    t[0][s] = d0 + 0.5f * (d1 + d2);
    t[1][s] = 0.5f * (d1 - d2);
    t[2][s] = 0.5f * (d1 + d2) + d3;
  }
  for (int u = 0; u < 3; ++u) {  // (G' dw) G
    g[u * gu] = t[u][0] + 0.5f * (t[u][1] + t[u][2]);
    g[u * gu + gv] = 0.5f * (t[u][1] - t[u][2]);
    g[u * gu + 2 * gv] = 0.5f * (t[u][1] + t[u][2]) + t[u][3];
  }
}

namespace {

// R rows by 8 W columns of c, in registers across the whole depth: named variables, as
// GCC 12 keeps an array of 12 accumulators in memory.
#define GLIA_WINO_ROW(i)                                          \
  V c##i##0 = _mm256_setzero_ps(), c##i##1 = _mm256_setzero_ps(); \
  if constexpr (R > i) {                                          \
    if (accumulate) {                                             \
      c##i##0 = load(c + i * ldc);                                \
      if constexpr (W > 1) c##i##1 = load(c + i * ldc + 8);       \
    }                                                             \
  }
#define GLIA_WINO_FMA(i)                                             \
  if constexpr (R > i) {                                             \
    const V av = _mm256_broadcast_ss(a + i * ar + p * ac);           \
    c##i##0 = _mm256_fmadd_ps(av, b0, c##i##0);                      \
    if constexpr (W > 1) c##i##1 = _mm256_fmadd_ps(av, b1, c##i##1); \
  }
#define GLIA_WINO_STORE(i)                                \
  if constexpr (R > i) {                                  \
    store(c + i * ldc, c##i##0);                          \
    if constexpr (W > 1) store(c + i * ldc + 8, c##i##1); \
  }

template <int R, int W>
void block(const float* a, std::int64_t ar, std::int64_t ac, const float* b, std::int64_t ldb,
           float* c, std::int64_t ldc, std::int64_t depth, bool accumulate) {
  GLIA_WINO_ROW(0);
  GLIA_WINO_ROW(1);
  GLIA_WINO_ROW(2);
  GLIA_WINO_ROW(3);
  GLIA_WINO_ROW(4);
  GLIA_WINO_ROW(5);
  for (std::int64_t p = 0; p < depth; ++p) {
    const V b0 = load(b + p * ldb);
    const V b1 = W > 1 ? load(b + p * ldb + 8) : b0;
    GLIA_WINO_FMA(0);
    GLIA_WINO_FMA(1);
    GLIA_WINO_FMA(2);
    GLIA_WINO_FMA(3);
    GLIA_WINO_FMA(4);
    GLIA_WINO_FMA(5);
  }
  GLIA_WINO_STORE(0);
  GLIA_WINO_STORE(1);
  GLIA_WINO_STORE(2);
  GLIA_WINO_STORE(3);
  GLIA_WINO_STORE(4);
  GLIA_WINO_STORE(5);
}
#undef GLIA_WINO_ROW
#undef GLIA_WINO_FMA
#undef GLIA_WINO_STORE

using Block = void (*)(const float*, std::int64_t, std::int64_t, const float*, std::int64_t, float*,
                       std::int64_t, std::int64_t, bool);
constexpr int kRows = 6;
constexpr Block kBlocks[kRows][2] = {{block<1, 1>, block<1, 2>}, {block<2, 1>, block<2, 2>},
                                     {block<3, 1>, block<3, 2>}, {block<4, 1>, block<4, 2>},
                                     {block<5, 1>, block<5, 2>}, {block<6, 1>, block<6, 2>}};

}  // namespace

void gemm(std::int64_t m, std::int64_t n, std::int64_t depth, const float* a, std::int64_t ar,
          std::int64_t ac, const float* b, std::int64_t ldb, float* c, std::int64_t ldc,
          bool accumulate) {
  for (std::int64_t j = 0; j < n; j += 16) {
    const int w = j + 16 <= n ? 2 : 1;
    for (std::int64_t i = 0; i < m; i += kRows) {
      const auto rows = static_cast<int>(m - i < kRows ? m - i : kRows);
      kBlocks[rows - 1][w - 1](a + i * ar, ar, ac, b + j, ldb, c + i * ldc + j, ldc, depth,
                               accumulate);
    }
  }
}

}  // namespace glia::detail::cpu::winograd

#pragma GCC pop_options
