// The softmax of short rows as one kernel: a fused group whose four sweeps are exactly
// softmax over the last axis of a row-major f32 array (max | exp(x - max) stored and
// summed | c / sum | exp * reciprocal) runs row by row in vector registers: the max, the
// exponentials (inlined, the shorter exp for arguments <= 0 of exp_nonpositive.hpp) with
// their sum, and the scaling, each row in L1 while it runs. The compiled sweeps called the exp out
// of line, their lanes in memory around each call, and paid a call each: 1,000 floats took ~430 ns
// in them. Every value the sweeps write is written (the max, the exponentials, the sum, the
// reciprocal, the result), so other kernels may read any of them.
//
// Numbers as the compiled sweeps give them: NaN-propagating max, exp within 0.70 ulp on
// AVX-512 and 0.89 on AVX2 (theirs within 1.01), f32 sums over chunks of 1,024 columns widened into
// f64, the reciprocal and product in f32. Longer rows run in softmax_long.cpp, which threads split
// within a row.
#include <immintrin.h>

// GCC 12's _mm512_max_ps passes an undefined vector as its (unused) merge source.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include "aot/emitter.hpp"
#include "backends/cpu/exp_nonpositive.hpp"
#include "backends/cpu/fused_program.hpp"
#include "backends/cpu/realise.hpp"
#include "backends/cpu/softmax_rows.hpp"
#include "backends/cpu/spin_team.hpp"

namespace glia::detail::cpu {

namespace {

using Code = FusedSpec::Code;
using Instr = FusedSpec::Instr;

// Longer rows go to softmax_long.cpp (or keep the sweeps, whose threads split a row).
constexpr std::int64_t kMaxCols = 16384;

// The sweep's one instruction of this code (and op, for computations), or null.
const Instr* only(const FusedSpec::Sweep& s, Code code, Op op = Op::add) {
  const Instr* found = nullptr;
  for (const Instr& in : s.code)
    if (in.code == code &&
        (code == Code::load || code == Code::store || code == Code::reduce || in.op == op)) {
      if (found != nullptr) return nullptr;
      found = &in;
    }
  return found != nullptr && found->dtype == DType::f32 ? found : nullptr;
}

// The sweep's f32 load of `value`, or (value < 0) its load other than `not_this`.
const Instr* load_of(const FusedSpec::Sweep& s, ValueId value, const Instr* not_this = nullptr) {
  for (const Instr& in : s.code)
    if (in.code == Code::load && in.dtype == DType::f32 && &in != not_this &&
        (value < 0 || in.value == value))
      return &in;
  return nullptr;
}

std::size_t count(const FusedSpec::Sweep& s, Code code) {
  return std::size_t(std::count_if(s.code.begin(), s.code.end(),
                                   [&](const Instr& in) { return in.code == code; }));
}

// One element read at every index (no dims: a domain of one).
bool one_element(const FusedSpec::View& v) {
  return std::all_of(v.strides.begin(), v.strides.end(), [](std::int64_t s) { return s == 0; });
}

// A row's value read at every column (a [rows] array broadcast along the columns).
bool row_broadcast(const FusedSpec::View& v, std::int64_t rows, std::int64_t cols) {
  if (v.offset != 0) return false;
  if (rows == 1) return one_element(v);
  return v.dims == std::vector<std::int64_t>{rows, cols} &&
         v.strides == std::vector<std::int64_t>{1, 0};
}

// The reduction of a row sweep: op over the columns of each row, into `rows` values.
bool row_reduction(const FusedSpec::Sweep& s, Op op, std::int64_t rows, std::int64_t cols) {
  if (s.reductions.size() != 1 || s.numel != rows * cols) return false;
  const FusedSpec::Reduction& r = s.reductions[0];
  const auto& x = r.extents;
  const bool shaped = rows == 1
                          ? x.size() == 1 && x[0].reduced
                          : x.size() == 2 && !x[0].reduced && x[0].size == rows && x[1].reduced;
  return r.op == op && r.dtype == DType::f32 && r.numel == rows && shaped && x.back().size == cols;
}

std::optional<SoftmaxRowsSpec> match_softmax_rows(const FusedSpec& f) {
  if (f.sweeps.size() != 4) return std::nullopt;
  const FusedSpec::Sweep &s0 = f.sweeps[0], &s1 = f.sweeps[1], &s2 = f.sweeps[2], &s3 = f.sweeps[3];
  SoftmaxRowsSpec m;
  if (s0.reductions.size() != 1 || s0.reductions[0].extents.empty()) return std::nullopt;
  m.cols = s0.reductions[0].extents.back().size;
  m.rows = s0.reductions[0].numel;
  if (m.cols < 1 || !row_reduction(s0, Op::reduce_max, m.rows, m.cols) ||
      !row_reduction(s1, Op::reduce_sum, m.rows, m.cols))
    return std::nullopt;
  // max: load x, reduce.
  const Instr* x = load_of(s0, -1);
  const Instr* max = only(s0, Code::reduce);
  if (s0.code.size() != 2 || !x || !x->view.identity() || !max || max->a != x->dst)
    return std::nullopt;
  m.x = x->value;
  m.max = s0.reductions[0].result;
  // exp(x - max), stored and summed.
  const Instr* x1 = load_of(s1, m.x);
  const Instr* max1 = load_of(s1, m.max);
  const Instr* sub = only(s1, Code::binary, Op::subtract);
  const Instr* exp = only(s1, Code::unary, Op::exp);
  const Instr* e = only(s1, Code::store);
  const Instr* sum = only(s1, Code::reduce);
  if (s1.code.size() != 6 || !x1 || !x1->view.identity() || !max1 ||
      !row_broadcast(max1->view, m.rows, m.cols) || !sub || sub->a != x1->dst ||
      sub->b != max1->dst || !exp || exp->a != sub->dst || !e || e->a != exp->dst || !sum ||
      sum->a != exp->dst)
    return std::nullopt;
  m.e = e->value;
  m.sum = s1.reductions[0].result;
  // numerator / sum.
  const Instr* sum2 = load_of(s2, m.sum);
  const Instr* numerator = load_of(s2, -1, sum2);
  const Instr* div = only(s2, Code::binary, Op::divide);
  const Instr* reciprocal = only(s2, Code::store);
  if (s2.numel != m.rows || s2.code.size() != 4 || count(s2, Code::load) != 2 || !sum2 ||
      sum2->view.offset != 0 || !(sum2->view.identity() || m.rows == 1) || !numerator ||
      !one_element(numerator->view) || !div || div->a != numerator->dst || div->b != sum2->dst ||
      !reciprocal || reciprocal->a != div->dst)
    return std::nullopt;
  m.numerator = numerator->value;
  m.numerator_offset = numerator->view.offset;
  m.reciprocal = reciprocal->value;
  // exp * reciprocal.
  const Instr* e3 = load_of(s3, m.e);
  const Instr* r3 = load_of(s3, m.reciprocal);
  const Instr* mul = only(s3, Code::binary, Op::multiply);
  const Instr* y = only(s3, Code::store);
  if (s3.numel != m.rows * m.cols || s3.code.size() != 4 || !s3.reductions.empty() || !e3 ||
      !e3->view.identity() || !r3 || !row_broadcast(r3->view, m.rows, m.cols) || !mul ||
      !((mul->a == e3->dst && mul->b == r3->dst) || (mul->a == r3->dst && mul->b == e3->dst)) ||
      !y || y->a != mul->dst)
    return std::nullopt;
  m.y = y->value;
  return m;
}

// Row pointers and the scalars the sweeps keep per row.
struct Row {
  const float* x;
  float *e, *y, *max, *sum, *reciprocal;
  float numerator;
};
using RowFn = void (*)(const Row& r, std::int64_t cols);

// Columns summed in f32 before they widen, as the compiled sweeps' sums.
constexpr std::int64_t kChunk = aot::detail::kF32SumChunk;

// The row's last scalars, as the reciprocal sweep computes them.
void finish(const Row& r, float max, double sum) {
  *r.max = max;
  *r.sum = static_cast<float>(sum);
  *r.reciprocal = r.numerator / *r.sum;
}

__attribute__((target("avx512f,avx512dq,fma"))) void row_avx512(const Row& r, std::int64_t cols) {
  const float inf = std::numeric_limits<float>::infinity();
  const std::int64_t tail = cols % 16, whole = cols - tail;
  const __mmask16 last = static_cast<__mmask16>((1u << tail) - 1);
  __m512 m0 = _mm512_set1_ps(-inf), m1 = m0, m2 = m0, m3 = m0;
  __mmask16 nan = 0;
  std::int64_t j = 0;
  for (; j + 64 <= whole; j += 64) {
    const __m512 a = _mm512_loadu_ps(r.x + j), b = _mm512_loadu_ps(r.x + j + 16),
                 c = _mm512_loadu_ps(r.x + j + 32), d = _mm512_loadu_ps(r.x + j + 48);
    nan |= _mm512_cmp_ps_mask(a, b, _CMP_UNORD_Q) | _mm512_cmp_ps_mask(c, d, _CMP_UNORD_Q);
    m0 = _mm512_max_ps(m0, a), m1 = _mm512_max_ps(m1, b);
    m2 = _mm512_max_ps(m2, c), m3 = _mm512_max_ps(m3, d);
  }
  for (; j < whole; j += 16) {
    const __m512 a = _mm512_loadu_ps(r.x + j);
    nan |= _mm512_cmp_ps_mask(a, a, _CMP_UNORD_Q);
    m0 = _mm512_max_ps(m0, a);
  }
  if (tail > 0) {
    const __m512 a = _mm512_mask_loadu_ps(_mm512_set1_ps(-inf), last, r.x + j);
    nan |= _mm512_cmp_ps_mask(a, a, _CMP_UNORD_Q);
    m0 = _mm512_max_ps(m0, a);
  }
  const __m512 m = _mm512_max_ps(_mm512_max_ps(m0, m1), _mm512_max_ps(m2, m3));
  const __m256 h = _mm256_max_ps(_mm512_castps512_ps256(m), _mm512_extractf32x8_ps(m, 1));
  __m128 q = _mm_max_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
  q = _mm_max_ps(q, _mm_movehl_ps(q, q));
  float max = _mm_cvtss_f32(_mm_max_ss(q, _mm_movehdup_ps(q)));
  if (nan != 0) max = std::numeric_limits<float>::quiet_NaN();
  const __m512 mv = _mm512_set1_ps(max);
  __m512d d0 = _mm512_setzero_pd(), d1 = d0;
  for (std::int64_t c0 = 0; c0 < cols; c0 += kChunk) {
    const std::int64_t c1 = std::min(cols, c0 + kChunk), end = std::min(c1, whole);
    __m512 s0 = _mm512_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
    std::int64_t k = c0;
    for (; k + 64 <= end; k += 64) {
      const __m512 a = exp16_nonpositive(_mm512_sub_ps(_mm512_loadu_ps(r.x + k), mv));
      const __m512 b = exp16_nonpositive(_mm512_sub_ps(_mm512_loadu_ps(r.x + k + 16), mv));
      const __m512 c = exp16_nonpositive(_mm512_sub_ps(_mm512_loadu_ps(r.x + k + 32), mv));
      const __m512 d = exp16_nonpositive(_mm512_sub_ps(_mm512_loadu_ps(r.x + k + 48), mv));
      _mm512_storeu_ps(r.e + k, a), _mm512_storeu_ps(r.e + k + 16, b);
      _mm512_storeu_ps(r.e + k + 32, c), _mm512_storeu_ps(r.e + k + 48, d);
      s0 = _mm512_add_ps(s0, a), s1 = _mm512_add_ps(s1, b);
      s2 = _mm512_add_ps(s2, c), s3 = _mm512_add_ps(s3, d);
    }
    for (; k < end; k += 16) {
      const __m512 a = exp16_nonpositive(_mm512_sub_ps(_mm512_loadu_ps(r.x + k), mv));
      _mm512_storeu_ps(r.e + k, a);
      s0 = _mm512_add_ps(s0, a);
    }
    if (k < c1) {  // the row's last, partial vector
      const __m512 a = exp16_nonpositive(_mm512_sub_ps(_mm512_maskz_loadu_ps(last, r.x + k), mv));
      _mm512_mask_storeu_ps(r.e + k, last, a);
      s0 = _mm512_mask_add_ps(s0, last, s0, a);
    }
    const __m512 s = _mm512_add_ps(_mm512_add_ps(s0, s1), _mm512_add_ps(s2, s3));
    d0 = _mm512_add_pd(d0, _mm512_cvtps_pd(_mm512_castps512_ps256(s)));
    d1 = _mm512_add_pd(d1, _mm512_cvtps_pd(_mm512_extractf32x8_ps(s, 1)));
  }
  alignas(64) double lanes[8];
  _mm512_store_pd(lanes, _mm512_add_pd(d0, d1));
  finish(r, max,
         ((lanes[0] + lanes[1]) + (lanes[2] + lanes[3])) +
             ((lanes[4] + lanes[5]) + (lanes[6] + lanes[7])));
  const __m512 rv = _mm512_set1_ps(*r.reciprocal);
  std::int64_t k = 0;
  for (; k < whole; k += 16) _mm512_storeu_ps(r.y + k, _mm512_mul_ps(_mm512_loadu_ps(r.e + k), rv));
  if (tail > 0)
    _mm512_mask_storeu_ps(r.y + k, last, _mm512_mul_ps(_mm512_maskz_loadu_ps(last, r.e + k), rv));
}

__attribute__((target("avx2,fma"))) void row_avx2(const Row& r, std::int64_t cols) {
  const float inf = std::numeric_limits<float>::infinity();
  const std::int64_t tail = cols % 8, whole = cols - tail;
  alignas(32) static constexpr std::int32_t kLanes[16] = {-1, -1, -1, -1, -1, -1, -1, -1,
                                                          0,  0,  0,  0,  0,  0,  0,  0};
  const __m256i last = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(kLanes + 8 - tail));
  __m256 m0 = _mm256_set1_ps(-inf), m1 = m0, nan = _mm256_setzero_ps();
  std::int64_t j = 0;
  for (; j + 16 <= whole; j += 16) {
    const __m256 a = _mm256_loadu_ps(r.x + j), b = _mm256_loadu_ps(r.x + j + 8);
    nan = _mm256_or_ps(nan, _mm256_cmp_ps(a, b, _CMP_UNORD_Q));
    m0 = _mm256_max_ps(m0, a), m1 = _mm256_max_ps(m1, b);
  }
  for (; j < cols; j += 8) {
    __m256 a = j < whole ? _mm256_loadu_ps(r.x + j) : _mm256_maskload_ps(r.x + j, last);
    if (j >= whole) a = _mm256_blendv_ps(_mm256_set1_ps(-inf), a, _mm256_castsi256_ps(last));
    nan = _mm256_or_ps(nan, _mm256_cmp_ps(a, a, _CMP_UNORD_Q));
    m0 = _mm256_max_ps(m0, a);
  }
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, _mm256_max_ps(m0, m1));
  float max = *std::max_element(lanes, lanes + 8);
  if (_mm256_movemask_ps(nan) != 0) max = std::numeric_limits<float>::quiet_NaN();
  const __m256 mv = _mm256_set1_ps(max);
  double sum = 0;
  for (std::int64_t c0 = 0; c0 < cols; c0 += kChunk) {
    const std::int64_t c1 = std::min(cols, c0 + kChunk), end = std::min(c1, whole);
    __m256 s0 = _mm256_setzero_ps(), s1 = s0;
    std::int64_t k = c0;
    for (; k + 16 <= end; k += 16) {
      const __m256 a = exp8_nonpositive(_mm256_sub_ps(_mm256_loadu_ps(r.x + k), mv));
      const __m256 b = exp8_nonpositive(_mm256_sub_ps(_mm256_loadu_ps(r.x + k + 8), mv));
      _mm256_storeu_ps(r.e + k, a), _mm256_storeu_ps(r.e + k + 8, b);
      s0 = _mm256_add_ps(s0, a), s1 = _mm256_add_ps(s1, b);
    }
    for (; k < c1; k += 8) {
      const bool part = k >= end;
      const __m256 v = part ? _mm256_maskload_ps(r.x + k, last) : _mm256_loadu_ps(r.x + k);
      __m256 a = exp8_nonpositive(_mm256_sub_ps(v, mv));
      if (part) {
        a = _mm256_and_ps(a, _mm256_castsi256_ps(last));
        _mm256_maskstore_ps(r.e + k, last, a);
      } else {
        _mm256_storeu_ps(r.e + k, a);
      }
      s0 = _mm256_add_ps(s0, a);
    }
    _mm256_store_ps(lanes, _mm256_add_ps(s0, s1));
    for (float v : lanes) sum += v;
  }
  finish(r, max, sum);
  const __m256 rv = _mm256_set1_ps(*r.reciprocal);
  std::int64_t k = 0;
  for (; k < whole; k += 8) _mm256_storeu_ps(r.y + k, _mm256_mul_ps(_mm256_loadu_ps(r.e + k), rv));
  if (tail > 0)
    _mm256_maskstore_ps(r.y + k, last, _mm256_mul_ps(_mm256_maskload_ps(r.e + k, last), rv));
}

class SoftmaxRowsKernel final : public CpuKernel {
 public:
  explicit SoftmaxRowsKernel(const SoftmaxRowsSpec& spec)
      : spec_(spec), row_(vector_isa() == VectorIsa::avx512 ? &row_avx512 : &row_avx2) {}

  void run(RunContext& ctx) const override {
    const SoftmaxRowsSpec& s = spec_;
    const std::int64_t rows = s.rows, cols = s.cols;
    auto rows_of = [&](std::int64_t r0, std::int64_t r1) {
      for (std::int64_t i = r0; i < r1; ++i)
        row_(Row{ctx.at<const float>(s.x) + i * cols, ctx.at<float>(s.e) + i * cols,
                 ctx.at<float>(s.y) + i * cols, ctx.at<float>(s.max) + i, ctx.at<float>(s.sum) + i,
                 ctx.at<float>(s.reciprocal) + i,
                 ctx.at<const float>(s.numerator)[s.numerator_offset]},
             cols);
    };
    const int threads = run_threads();
    const int parts = rows * cols * 8 >= fused::kParallelWork
                          ? static_cast<int>(std::min<std::int64_t>(threads, rows))
                          : 1;
    run_parts(ctx.team, parts,
              [&](std::int64_t p) { rows_of(rows * p / parts, rows * (p + 1) / parts); });
  }

  bool uses_openmp() const override { return false; }

  std::string describe() const override {
    return cat("glia softmax rows (", spec_.rows, " x ", spec_.cols, ")");
  }

 private:
  SoftmaxRowsSpec spec_;
  RowFn row_;
};

}  // namespace

std::unique_ptr<CpuKernel> realise_softmax_rows(const Kernel& kernel) {
  if (vector_isa() == VectorIsa::baseline) return nullptr;  // the sweeps' own loops
  std::optional<SoftmaxRowsSpec> s = match_softmax_rows(std::get<FusedSpec>(kernel.spec));
  if (!s) return nullptr;
  if (s->cols <= kMaxCols) return std::make_unique<SoftmaxRowsKernel>(*s);
  // The long rows' kernel leaves the exponentials unwritten: only where they stay inside.
  if (std::find(kernel.outputs.begin(), kernel.outputs.end(), s->e) != kernel.outputs.end())
    return nullptr;
  return make_softmax_long(*s);
}

}  // namespace glia::detail::cpu
