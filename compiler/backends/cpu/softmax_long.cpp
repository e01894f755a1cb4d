// Softmax over long rows (more than 16,384 columns) in two passes over memory, where the
// sweeps make three (max | exp stored and summed | exp * reciprocal) and, on a row of a
// million floats, move 20 bytes an element against a triad's 8.
//
// Pass 1 takes the row in blocks of 4,096 columns, each in L1 once read: the block's max
// m_b, then e = exp(x - m_b) written where the result goes, summed, while the next block
// is prefetched (the exponentials are bound by multiply-adds: the next block's reads from
// L3 or memory hide under them). Between the passes, per row: M = max m_b, S = sum over
// blocks of s_b exp(m_b - M) (f64), the reciprocal
// numerator / S, and each block's factor c_b = exp(m_b - M) * reciprocal. Pass 2 scales
// each block by its factor in place. One exp an element, as the sweeps; threads split the
// blocks of every row. The result is exp(x - m_b) * c_b, not the sweeps' exp(x - M) * r:
// a few ulps apart. The exponentials are never written as such, so this kernel runs only
// where no other kernel reads them (softmax_rows.cpp checks); the max, the sum and the
// reciprocal are written.
//
// AVX2 and AVX-512 (16 lanes, masked tails) alike. On a 2-core Zen 4 with the row in L3,
// softmax over a million floats took ~161 us in the sweeps' shape and ~133 us in two
// passes (a standalone probe, both with this exp).
//
// Special values as the sweeps give them: NaN in a row makes the row NaN; a row of -inf
// is NaN (-inf - -inf); +inf makes its row NaN (inf - inf in its block's sum); a block of
// -inf in a finite row is 0.
#include <immintrin.h>

// GCC 12's _mm512_max_ps passes an undefined vector as its (unused) merge source.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

#include <algorithm>
#include <cmath>
#include <limits>
#include <new>

#include "backends/cpu/exp_nonpositive.hpp"
#include "backends/cpu/fused_program.hpp"
#include "backends/cpu/realise.hpp"
#include "backends/cpu/softmax_rows.hpp"
#include "backends/cpu/spin_team.hpp"

namespace glia::detail::cpu {

namespace {

constexpr std::int64_t kBlock = 4096;

// A block after pass 1: its max, its exponentials' sum, NaN met; then its factor.
struct Block {
  float max = 0;
  bool nan = false;
  double sum = 0;
  double scale = 0;  // exp(max - the row's max)
  float factor = 0;
  bool fill = false;  // pass 2 writes `factor` over the block (NaN rows, blocks of -inf)
};

__attribute__((target("avx2,fma"))) Block exp_block_avx2(const float* x, float* y, std::int64_t n) {
  const float inf = std::numeric_limits<float>::infinity();
  const std::int64_t whole = n - n % 8;
  __m256 m0 = _mm256_set1_ps(-inf), m1 = m0, nan = _mm256_setzero_ps();
  std::int64_t j = 0;
  for (; j + 16 <= whole; j += 16) {
    const __m256 a = _mm256_loadu_ps(x + j), b = _mm256_loadu_ps(x + j + 8);
    nan = _mm256_or_ps(nan, _mm256_cmp_ps(a, b, _CMP_UNORD_Q));
    m0 = _mm256_max_ps(m0, a), m1 = _mm256_max_ps(m1, b);
  }
  for (; j < whole; j += 8) {
    const __m256 a = _mm256_loadu_ps(x + j);
    nan = _mm256_or_ps(nan, _mm256_cmp_ps(a, a, _CMP_UNORD_Q));
    m0 = _mm256_max_ps(m0, a);
  }
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, _mm256_max_ps(m0, m1));
  Block b;
  b.max = -inf;
  for (float v : lanes) b.max = std::max(b.max, v);
  b.nan = _mm256_movemask_ps(nan) != 0;
  for (std::int64_t k = whole; k < n; ++k) {
    b.nan = b.nan || std::isnan(x[k]);
    b.max = std::max(b.max, x[k]);
  }
  if (b.nan || b.max == -inf) return b;  // pass 2 fills it
  const __m256 mv = _mm256_set1_ps(b.max);
  __m256 s0 = _mm256_setzero_ps(), s1 = s0;
  for (j = 0; j + 16 <= whole; j += 16) {
    _mm_prefetch(reinterpret_cast<const char*>(x + j + kBlock), _MM_HINT_T0);
    const __m256 a = exp8_nonpositive(_mm256_sub_ps(_mm256_loadu_ps(x + j), mv));
    const __m256 c = exp8_nonpositive(_mm256_sub_ps(_mm256_loadu_ps(x + j + 8), mv));
    _mm256_storeu_ps(y + j, a), _mm256_storeu_ps(y + j + 8, c);
    s0 = _mm256_add_ps(s0, a), s1 = _mm256_add_ps(s1, c);
  }
  for (; j < whole; j += 8) {
    const __m256 a = exp8_nonpositive(_mm256_sub_ps(_mm256_loadu_ps(x + j), mv));
    _mm256_storeu_ps(y + j, a);
    s0 = _mm256_add_ps(s0, a);
  }
  if (j < n) {  // the row's last columns, through a vector padded with -inf (exp 0)
    alignas(32) float tail[8];
    for (std::int64_t k = 0; k < 8; ++k) tail[k] = j + k < n ? x[j + k] : -inf;
    _mm256_store_ps(tail, exp8_nonpositive(_mm256_sub_ps(_mm256_load_ps(tail), mv)));
    for (std::int64_t k = 0; j + k < n; ++k) y[j + k] = tail[k];
    s0 = _mm256_add_ps(s0, _mm256_load_ps(tail));
  }
  _mm256_store_ps(lanes, _mm256_add_ps(s0, s1));
  for (float v : lanes) b.sum += v;
  return b;
}

__attribute__((target("avx2,fma"))) void scale_block_avx2(const Block& b, float* y,
                                                          std::int64_t n) {
  const __m256 f = _mm256_set1_ps(b.factor);
  std::int64_t j = 0;
  if (b.fill) {
    for (; j + 8 <= n; j += 8) _mm256_storeu_ps(y + j, f);
  } else {
    for (; j + 8 <= n; j += 8) _mm256_storeu_ps(y + j, _mm256_mul_ps(_mm256_loadu_ps(y + j), f));
  }
  for (; j < n; ++j) y[j] = b.fill ? b.factor : y[j] * b.factor;
}

// The same in 16 lanes: the tail through masked loads (-inf beyond it) and stores.
__attribute__((target("avx512f,fma"))) Block exp_block_avx512(const float* x, float* y,
                                                              std::int64_t n) {
  const float inf = std::numeric_limits<float>::infinity();
  const std::int64_t whole = n - n % 16;
  const __mmask16 last = static_cast<__mmask16>((1u << (n % 16)) - 1);
  const __m512 minus_inf = _mm512_set1_ps(-inf);
  __m512 m0 = minus_inf, m1 = m0;
  __mmask16 nan = 0;
  std::int64_t j = 0;
  for (; j + 32 <= whole; j += 32) {
    const __m512 a = _mm512_loadu_ps(x + j), b = _mm512_loadu_ps(x + j + 16);
    nan |= _mm512_cmp_ps_mask(a, b, _CMP_UNORD_Q);
    m0 = _mm512_max_ps(m0, a), m1 = _mm512_max_ps(m1, b);
  }
  for (; j < n; j += 16) {
    const __m512 a =
        j < whole ? _mm512_loadu_ps(x + j) : _mm512_mask_loadu_ps(minus_inf, last, x + j);
    nan |= _mm512_cmp_ps_mask(a, a, _CMP_UNORD_Q);
    m0 = _mm512_max_ps(m0, a);
  }
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, _mm512_max_ps(m0, m1));
  Block b;
  b.max = *std::max_element(lanes, lanes + 16);
  b.nan = nan != 0;
  if (b.nan || b.max == -inf) return b;  // pass 2 fills it
  const __m512 mv = _mm512_set1_ps(b.max);
  __m512 s0 = _mm512_setzero_ps(), s1 = s0;
  for (j = 0; j + 32 <= whole; j += 32) {
    _mm_prefetch(reinterpret_cast<const char*>(x + j + kBlock), _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char*>(x + j + kBlock + 16), _MM_HINT_T0);
    const __m512 a = exp16_nonpositive(_mm512_sub_ps(_mm512_loadu_ps(x + j), mv));
    const __m512 c = exp16_nonpositive(_mm512_sub_ps(_mm512_loadu_ps(x + j + 16), mv));
    _mm512_storeu_ps(y + j, a), _mm512_storeu_ps(y + j + 16, c);
    s0 = _mm512_add_ps(s0, a), s1 = _mm512_add_ps(s1, c);
  }
  for (; j < n; j += 16) {
    const __mmask16 keep = j < whole ? __mmask16(0xffff) : last;
    const __m512 a = exp16_nonpositive(_mm512_sub_ps(_mm512_maskz_loadu_ps(keep, x + j), mv));
    _mm512_mask_storeu_ps(y + j, keep, a);
    s0 = _mm512_mask_add_ps(s0, keep, s0, a);
  }
  _mm512_store_ps(lanes, _mm512_add_ps(s0, s1));
  for (float v : lanes) b.sum += v;
  return b;
}

__attribute__((target("avx512f"))) void scale_block_avx512(const Block& b, float* y,
                                                           std::int64_t n) {
  const __m512 f = _mm512_set1_ps(b.factor);
  for (std::int64_t j = 0; j < n; j += 16) {
    const __mmask16 keep =
        j + 16 <= n ? __mmask16(0xffff) : static_cast<__mmask16>((1u << (n - j)) - 1);
    _mm512_mask_storeu_ps(y + j, keep,
                          b.fill ? f : _mm512_mul_ps(_mm512_maskz_loadu_ps(keep, y + j), f));
  }
}

class SoftmaxLongKernel final : public CpuKernel {
 public:
  explicit SoftmaxLongKernel(const SoftmaxRowsSpec& spec)
      : spec_(spec),
        per_row_((spec.cols + kBlock - 1) / kBlock),
        exp_block_(vector_isa() == VectorIsa::avx512 ? &exp_block_avx512 : &exp_block_avx2),
        scale_block_(vector_isa() == VectorIsa::avx512 ? &scale_block_avx512 : &scale_block_avx2) {}

  // The blocks' records, in the run's scratchpad.
  std::size_t scratchpad_bytes() const override {
    return std::size_t(spec_.rows * per_row_) * sizeof(Block);
  }

  void run(RunContext& ctx) const override {
    const SoftmaxRowsSpec& s = spec_;
    const std::int64_t per_row = per_row_, total = s.rows * per_row;
    const float* x = ctx.at<const float>(s.x);
    float* y = ctx.at<float>(s.y);
    Block* blocks = static_cast<Block*>(ctx.scratchpad);
    auto columns = [&](std::int64_t t) {  // block t's first column and count, row-major
      const std::int64_t c0 = (t % per_row) * kBlock;
      return std::pair{(t / per_row) * s.cols + c0, std::min(kBlock, s.cols - c0)};
    };
    const int parts = static_cast<int>(std::min<std::int64_t>(run_threads(), total));
    auto each_block = [&](auto&& f) {
      run_parts(ctx.team, parts, [&](std::int64_t p) {
        for (std::int64_t t = total * p / parts; t < total * (p + 1) / parts; ++t) f(t);
      });
    };
    each_block([&](std::int64_t t) {
      auto [at, n] = columns(t);
      new (blocks + t) Block(exp_block_(x + at, y + at, n));
    });
    const float numerator = ctx.at<const float>(s.numerator)[s.numerator_offset];
    for (std::int64_t r = 0; r < s.rows; ++r)
      finish_row(blocks + r * per_row, per_row, numerator, ctx, r);
    each_block([&](std::int64_t t) {
      auto [at, n] = columns(t);
      scale_block_(blocks[t], y + at, n);
    });
  }

  bool uses_openmp() const override { return false; }

  std::string describe() const override {
    return cat("glia softmax long rows (", spec_.rows, " x ", spec_.cols, ", two passes)");
  }

 private:
  // The row's max, sum and reciprocal, and its blocks' factors.
  void finish_row(Block* b, std::int64_t n, float numerator, RunContext& ctx,
                  std::int64_t row) const {
    const float inf = std::numeric_limits<float>::infinity();
    const float nan = std::numeric_limits<float>::quiet_NaN();
    float max = -inf;
    bool any_nan = false;
    for (std::int64_t i = 0; i < n; ++i)
      any_nan = any_nan || b[i].nan, max = std::max(max, b[i].max);
    // Each block's exp(m_b - M), kept in its sum until the reciprocal is known.
    double sum = 0;
    for (std::int64_t i = 0; i < n; ++i) {
      b[i].fill = any_nan || b[i].max == -inf;
      b[i].scale = b[i].max == -inf ? 0 : std::exp(double(b[i].max) - double(max));
      sum += b[i].sum * b[i].scale;
    }
    if (any_nan) max = nan;
    if (any_nan || max == -inf) sum = nan;  // the sweeps' exp(-inf - -inf) = NaN
    ctx.at<float>(spec_.max)[row] = max;
    const float s = ctx.at<float>(spec_.sum)[row] = static_cast<float>(sum);
    const float reciprocal = ctx.at<float>(spec_.reciprocal)[row] = numerator / s;
    for (std::int64_t i = 0; i < n; ++i)
      b[i].factor = std::isnan(reciprocal) ? nan
                    : b[i].fill            ? 0.f
                                           : static_cast<float>(b[i].scale * reciprocal);
  }

  SoftmaxRowsSpec spec_;
  std::int64_t per_row_;  // blocks a row
  // The ISA's pass 1 and pass 2 of a block (AVX-512, else AVX2), chosen once.
  Block (*exp_block_)(const float* x, float* y, std::int64_t n);
  void (*scale_block_)(const Block& b, float* y, std::int64_t n);
};

}  // namespace

std::unique_ptr<CpuKernel> make_softmax_long(const SoftmaxRowsSpec& spec) {
  return std::make_unique<SoftmaxLongKernel>(spec);
}

}  // namespace glia::detail::cpu
