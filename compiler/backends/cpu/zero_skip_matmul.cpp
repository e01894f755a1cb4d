// The zero-skipping matmul (zero_skip_matmul.hpp). The product's rows go in pairs; a
// pair's entries are the k where either row's left operand is nonzero. A run that may
// skip:
//  1. a sample of the left operand (8 x 8 runs of 8 elements spread over it) decides
//     whether counting is worth it: at most kZeroSkipDensity nonzero;
//  2. in one parallel region, each thread counts the entries of its share of the pairs
//     and copies its share of the right operand's rows into the scratchpad, in blocks of
//     columns with contiguous rows (pack_rows), checking them for infinities and NaN;
//     the counts decide (at most kZeroSkipDensity of each pair's k), their prefix sums
//     place each pair's entries in the scratchpad;
//  3. in a second region, each thread takes a range of pairs holding about an equal share
//     of the entries, lists their entries (k, both values) and sums the pairs' products
//     over them (zero_skip_loops.inc), the epilogue included.
// Every output element is summed by one thread in k order: the thread count never
// changes the bits.
#include "backends/cpu/zero_skip_matmul.hpp"

#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <type_traits>

#include "backends/cpu/matmul_epilogue.hpp"
#include "backends/cpu/spin_team.hpp"

namespace glia::detail::cpu {

namespace {

// A k where either row of a pair of product rows has a nonzero left operand, and both
// rows' values there.
struct Entry {
  std::int32_t k;
  float value[2];
};

// One ISA's loops (zero_skip_loops.inc): the left operand (a, lda, m, k) first, then
// pairs p0..p1.
struct Loops {
  using Count = std::int64_t (*)(const float*, std::int64_t, std::int64_t, std::int64_t,
                                 std::int64_t, std::int64_t, std::int32_t*, std::int32_t*);
  Count count_rows, count_columns;
  bool (*pack_rows)(const float*, std::int64_t, std::int64_t, std::int64_t, std::int64_t,
                    std::int64_t, float*);
  void (*fill_rows)(const float*, std::int64_t, std::int64_t, std::int64_t, std::int64_t,
                    std::int64_t, const std::int64_t*, Entry*);
  void (*fill_columns)(const float*, std::int64_t, std::int64_t, std::int64_t, std::int64_t,
                       std::int64_t, std::int64_t*, Entry*);
  void (*product_rows)(const Entry*, const std::int64_t*, const float*, std::int64_t, const float*,
                       std::int64_t, std::int64_t, std::int64_t, std::int64_t, std::int64_t, float*,
                       std::int64_t, const RowsEpilogue&, float*, const Entry**);
};

// The bytes of a block of weights (a range of k times a block of columns) that one pass
// of the product sums from: at most half of L1.
constexpr std::int64_t kL1Weights = 16384;

// GCC lowers a vector type in the target of the function that declares it, so each ISA
// includes the loops in its own target region (as onednn_pool.cpp does).
#pragma GCC push_options
#pragma GCC target("avx512f,avx512dq,avx512bw,avx512vl")
namespace isa_avx512 {
constexpr int kLanes = 16, kColumns = 8;
inline unsigned nonzero_lanes(const float* p) {
  return _mm512_cmp_ps_mask(_mm512_loadu_ps(p), _mm512_setzero_ps(), _CMP_NEQ_UQ);
}
#include "backends/cpu/zero_skip_loops.inc"
}  // namespace isa_avx512
#pragma GCC pop_options

#pragma GCC push_options
#pragma GCC target("avx2,fma")
namespace isa_avx2 {
constexpr int kLanes = 8, kColumns = 6;
inline unsigned nonzero_lanes(const float* p) {
  return unsigned(
      _mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(p), _mm256_setzero_ps(), _CMP_NEQ_UQ)));
}
#include "backends/cpu/zero_skip_loops.inc"
}  // namespace isa_avx2
#pragma GCC pop_options

namespace isa_baseline {
constexpr int kLanes = 4, kColumns = 6;
inline unsigned nonzero_lanes(const float* p) {
  return unsigned(_mm_movemask_ps(_mm_cmpneq_ps(_mm_loadu_ps(p), _mm_setzero_ps())));
}
#include "backends/cpu/zero_skip_loops.inc"
}  // namespace isa_baseline

constexpr std::size_t kAlign = 64;
std::size_t aligned(std::size_t bytes) { return (bytes + kAlign - 1) / kAlign * kAlign; }

// The most threads a run splits over (the per-thread results' tables).
constexpr int kMaxParts = 256;

class ZeroSkipMatmul final : public CpuKernel {
 public:
  ZeroSkipMatmul(const MatmulSpec& s, ValueId out, std::unique_ptr<CpuKernel> dense)
      : s_(s), out_(out), dense_(std::move(dense)) {
    const std::size_t nb = s.batch.size();
    rows_layout_ = s.lhs_strides[nb + 1] == 1;
    lda_ = rows_layout_ ? s.lhs_strides[nb] : s.lhs_strides[nb + 1];
    ldb_ = s.rhs_strides[nb];
    ldy_ = s.out_strides[nb];
    pairs_ = (s.m + 1) / 2;
    capacity_ = std::int64_t(kZeroSkipDensity * double(pairs_) * double(s.k));
    loops_ = by_vector_isa(&isa_avx512::kLoops, &isa_avx2::kLoops, &isa_baseline::kLoops);
    counts_bytes_ = aligned(sizeof(std::int32_t) * std::size_t(pairs_)) +
                    aligned(sizeof(std::int32_t) * std::size_t(s.m));
    starts_bytes_ = aligned(sizeof(std::int64_t) * std::size_t(pairs_ + 1));
    spare_bytes_ = aligned(sizeof(float) * std::size_t(s.n)) +
                   aligned(sizeof(const Entry*) * std::size_t(pairs_));
    packed_bytes_ = aligned(sizeof(float) * std::size_t(s.k * s.n));
    own_bytes_ = counts_bytes_ + 2 * starts_bytes_ + spare_bytes_ + packed_bytes_ +
                 sizeof(Entry) * std::size_t(capacity_);
  }

  void run(RunContext& ctx) const override {
    runs_.fetch_add(1, std::memory_order_relaxed);
    if (skip_zeros(ctx)) {
      skipped_.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    dense_->run(ctx);
  }

  std::string describe() const override {
    return cat("glia zero-skipping matmul where pairs of lhs rows are at most ",
               std::lround(kZeroSkipDensity * 100), "% nonzero (",
               skipped_.load(std::memory_order_relaxed), " of ",
               runs_.load(std::memory_order_relaxed), " runs), else ", dense_->describe());
  }
  std::size_t scratchpad_bytes() const override {
    return std::max(own_bytes_, dense_->scratchpad_bytes());
  }
  std::unique_ptr<KernelState> make_state() const override { return dense_->make_state(); }

 private:
  // Whether 8 runs of 8 elements in each of 8 memory rows, spread over the left operand,
  // are at most kZeroSkipDensity nonzero (a pair's union has at least a row's nonzeros).
  bool sample_sparse(const float* a) const {
    const std::int64_t rows = rows_layout_ ? s_.m : s_.k, length = rows_layout_ ? s_.k : s_.m;
    const std::int64_t run = std::min<std::int64_t>(8, length);
    std::int64_t seen = 0, nonzero = 0;
    for (std::int64_t r = 0; r < 8; ++r) {
      const float* row = a + (2 * r + 1) * rows / 16 * lda_;
      for (std::int64_t c = 0; c < 8; ++c) {
        const float* at = row + c * (length - run) / 7;
        for (std::int64_t i = 0; i < run; ++i) nonzero += at[i] != 0.0f;
        seen += run;
      }
    }
    return double(nonzero) <= kZeroSkipDensity * double(seen);
  }

  bool skip_zeros(RunContext& ctx) const {
    const auto* a = ctx.at<const float>(s_.lhs);
    const auto* b = ctx.at<const float>(s_.rhs);
    if (!sample_sparse(a)) return false;
    auto* scratch = static_cast<std::byte*>(ctx.scratchpad);
    auto* counts = reinterpret_cast<std::int32_t*>(scratch);
    auto* lanes =
        counts + aligned(sizeof(std::int32_t) * std::size_t(pairs_)) / sizeof(std::int32_t);
    scratch += counts_bytes_;
    auto* start = reinterpret_cast<std::int64_t*>(scratch);
    auto* next = reinterpret_cast<std::int64_t*>(scratch + starts_bytes_);
    scratch += 2 * starts_bytes_;
    auto* spare = reinterpret_cast<float*>(scratch);
    auto* cursor =
        reinterpret_cast<const Entry**>(scratch + aligned(sizeof(float) * std::size_t(s_.n)));
    auto* packed = reinterpret_cast<float*>(scratch + spare_bytes_);
    auto* entries = reinterpret_cast<Entry*>(scratch + spare_bytes_ + packed_bytes_);
    const int parts = std::clamp(run_threads(), 1, kMaxParts);
    const std::int64_t m = s_.m, k = s_.k, n = s_.n, pairs = pairs_;

    // 2. Counts and the right operand's check, each thread a share of both.
    std::int64_t found[kMaxParts];
    bool finite[kMaxParts];
    run_parts(ctx.team, parts, [&](std::int64_t p) {
      const std::int64_t p0 = pairs * p / parts, p1 = pairs * (p + 1) / parts;
      found[p] = (rows_layout_ ? loops_->count_rows : loops_->count_columns)(a, lda_, m, k, p0, p1,
                                                                             counts, lanes);
      finite[p] = loops_->pack_rows(b, ldb_, n, k, k * p / parts, k * (p + 1) / parts, packed);
    });
    std::int64_t total = 0;
    for (int p = 0; p < parts; ++p) {
      if (!finite[p]) return false;
      total += found[p];
    }
    if (total > capacity_) return false;
    start[0] = 0;
    for (std::int64_t i = 0; i < pairs; ++i) start[i + 1] = start[i] + counts[i];

    // 3. Pairs split so that each thread has about an equal share of entries and pairs
    // (storing a pair costs about an entry's work, besides its entries).
    std::int64_t bound[kMaxParts + 1];
    bound[0] = 0;
    for (int p = 1; p < parts; ++p) {
      const std::int64_t goal = (total + pairs) * p / parts;
      std::int64_t lo = bound[p - 1], hi = pairs;  // the first pair whose start + index >= goal
      while (lo < hi) {
        const std::int64_t mid = (lo + hi) / 2;
        (start[mid] + mid < goal ? lo = mid + 1 : hi = mid);
      }
      bound[p] = lo;
    }
    bound[parts] = pairs;
    RowsEpilogue epilogue = rows_epilogue(s_.epilogue, s_.batch.size());
    for (std::size_t o = 0; o < s_.epilogue.operands.size(); ++o)
      epilogue.operand[o] = ctx.at<const float>(s_.epilogue.operands[o].value);
    float* y = ctx.at<float>(out_);
    run_parts(ctx.team, parts, [&](std::int64_t p) {
      const std::int64_t p0 = bound[p], p1 = bound[p + 1];
      if (p0 >= p1) return;
      if (rows_layout_) {
        loops_->fill_rows(a, lda_, m, k, p0, p1, start, entries);
      } else {
        std::copy(start + p0, start + p1, next + p0);  // each pair's next entry
        loops_->fill_columns(a, lda_, m, k, p0, p1, next, entries);
      }
      loops_->product_rows(entries, start, b, ldb_, packed, m, k, n, p0, p1, y, ldy_, epilogue,
                           spare, cursor);
    });
    return true;
  }

  MatmulSpec s_;
  ValueId out_ = 0;
  std::unique_ptr<CpuKernel> dense_;
  const Loops* loops_ = nullptr;
  bool rows_layout_ = true;  // the left operand's rows contiguous; else its columns
  std::int64_t lda_ = 0, ldb_ = 0, ldy_ = 0;
  std::int64_t pairs_ = 0;     // of product rows, the last alone where m is odd
  std::int64_t capacity_ = 0;  // the most entries a run lists
  std::size_t counts_bytes_ = 0, starts_bytes_ = 0, spare_bytes_ = 0, packed_bytes_ = 0;
  std::size_t own_bytes_ = 0;
  mutable std::atomic<std::int64_t> runs_{0}, skipped_{0};
};

}  // namespace

bool zero_skip_fits(const MatmulSpec& s) {
  if (const char* e = std::getenv("GLIA_CPU_ZERO_SKIP"); e != nullptr && std::strcmp(e, "0") == 0)
    return false;
  const std::size_t nb = s.batch.size();
  for (std::int64_t d : s.batch)
    if (d != 1) return false;
  const bool lhs_rows = s.lhs_strides[nb + 1] == 1, lhs_columns = s.lhs_strides[nb] == 1;
  return s.dtype == DType::f32 && s.multiply_adds() >= (std::int64_t(1) << 21) && s.k >= 16 &&
         s.n >= 16 && s.m * s.k < (std::int64_t(1) << 31) && (lhs_rows || lhs_columns) &&
         s.rhs_strides[nb + 1] == 1 && s.out_strides[nb + 1] == 1 &&
         s.epilogue.operands.size() <= kMaxOperands;
}

std::unique_ptr<CpuKernel> make_zero_skip_matmul(const MatmulSpec& spec, ValueId out,
                                                 std::unique_ptr<CpuKernel> dense) {
  return std::make_unique<ZeroSkipMatmul>(spec, out, std::move(dense));
}

}  // namespace glia::detail::cpu
