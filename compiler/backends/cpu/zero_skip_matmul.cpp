// The zero-skipping matmul (zero_skip_matmul.hpp). The product's rows go in pairs; a
// pair's entries are the k where either row's left operand is nonzero. A run that may
// skip:
//  1. samples 16 pairs spread over the left operand (8 runs of 8 k each): at most
//     kZeroSkipDensity of their k may have entries;
//  2. in one parallel region, each thread copies its share of the right operand's rows
//     into the scratchpad, in blocks of columns with contiguous rows (pack_rows),
//     checking them for infinities and NaN;
//  3. in a second region, each thread takes the next chunk of pairs left, counts its
//     entries, lists them (k, both values) in its own tables and sums the pairs' products
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

// The bytes of a chunk's entries at most (a chunk's pairs times k of them): the product
// passes over them once per block of columns and range of k, reading the packed weights
// once per chunk (larger chunks: fewer reads of the weights, from L3 at batch 10,000).
constexpr std::int64_t kChunkBytes = 512 * 1024;

// Scratchpad tables, each on its own cache lines.
class Tables {
 public:
  std::size_t add(std::size_t bytes) {
    const std::size_t at = bytes_;
    bytes_ += aligned(bytes);
    return at;
  }
  std::size_t bytes() const { return bytes_; }

 private:
  std::size_t bytes_ = 0;
};

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
    loops_ = by_vector_isa(&isa_avx512::kLoops, &isa_avx2::kLoops, &isa_baseline::kLoops);
    // Threads a run may split over: the program's count (what oneDNN was set up for).
    threads_ = std::clamp(run_threads(), 1, 256);
    // Chunks of at most kChunkBytes of entries, at least two a thread where there are
    // pairs enough (threads take the next chunk left: the chunks' entries differ).
    const auto entry_bytes = std::int64_t(sizeof(Entry)) * s.k;
    chunk_ = std::max<std::int64_t>(1, kChunkBytes / entry_bytes);
    chunk_ = std::clamp<std::int64_t>((pairs_ + 2 * threads_ - 1) / (2 * threads_), 1, chunk_);
    Tables shared, own;
    packed_at_ = shared.add(sizeof(float) * std::size_t(s.k * s.n));
    spare_at_ = shared.add(sizeof(float) * std::size_t(s.n));
    entries_at_ = own.add(std::size_t(entry_bytes * chunk_));
    counts_at_ = own.add(sizeof(std::int32_t) * std::size_t(chunk_));
    lanes_at_ = own.add(sizeof(std::int32_t) * std::size_t(2 * chunk_));
    start_at_ = own.add(sizeof(std::int64_t) * std::size_t(chunk_ + 1));
    next_at_ = own.add(sizeof(std::int64_t) * std::size_t(chunk_));
    cursor_at_ = own.add(sizeof(const Entry*) * std::size_t(chunk_));
    shared_bytes_ = shared.bytes();
    own_bytes_ = own.bytes();
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
    return std::max(shared_bytes_ + std::size_t(threads_) * own_bytes_, dense_->scratchpad_bytes());
  }
  std::unique_ptr<KernelState> make_state() const override { return dense_->make_state(); }

 private:
  // Whether pairs spread over the left operand are at most kZeroSkipDensity nonzero (the
  // k where either element is): 16 pairs of rows (`rows`) or of neighbouring elements in
  // 16 memory rows (`columns`), 8 runs of 8 k or elements each.
  bool sample_sparse(const float* a) const {
    constexpr std::int64_t kSamples = 16, kRuns = 8, kRun = 8;
    const std::int64_t rows = rows_layout_ ? s_.m : s_.k, length = rows_layout_ ? s_.k : s_.m;
    std::int64_t seen = 0, nonzero = 0;
    for (std::int64_t r = 0; r < kSamples; ++r) {
      const std::int64_t at = (2 * r + 1) * rows / (2 * kSamples) / 2 * 2;  // an even row
      const float* row = a + at * lda_;
      // rows: the pair's other row (itself where it is the last); columns: the next element.
      const std::int64_t other = rows_layout_ ? (at + 1 < rows ? lda_ : 0) : 1;
      const std::int64_t run = std::min<std::int64_t>(kRun, rows_layout_ ? length : length / 2);
      for (std::int64_t c = 0; c < kRuns; ++c) {
        const std::int64_t first = c * ((rows_layout_ ? length : length / 2) - run) / (kRuns - 1);
        for (std::int64_t i = first; i < first + run; ++i) {
          const float* e = rows_layout_ ? row + i : row + 2 * i;
          nonzero += e[0] != 0.0f || e[other] != 0.0f;
        }
        seen += run;
      }
    }
    return seen > 0 && double(nonzero) <= kZeroSkipDensity * double(seen);
  }

  bool skip_zeros(RunContext& ctx) const {
    const auto* a = ctx.at<const float>(s_.lhs);
    const auto* b = ctx.at<const float>(s_.rhs);
    if (!sample_sparse(a)) return false;
    auto* scratch = static_cast<std::byte*>(ctx.scratchpad);
    auto* packed = reinterpret_cast<float*>(scratch + packed_at_);
    auto* spare = reinterpret_cast<float*>(scratch + spare_at_);
    const int parts = std::min(run_threads(), threads_);
    const std::int64_t m = s_.m, k = s_.k, n = s_.n;

    // 2. The right operand packed and checked, each thread a share of its rows.
    bool finite[256];
    run_parts(ctx.team, parts, [&](std::int64_t p) {
      finite[p] = loops_->pack_rows(b, ldb_, n, k, k * p / parts, k * (p + 1) / parts, packed);
    });
    for (int p = 0; p < parts; ++p)
      if (!finite[p]) return false;

    // 3. Chunks of pairs, each thread taking the next one left: its entries counted,
    // listed and summed in the thread's own tables.
    RowsEpilogue epilogue = rows_epilogue(s_.epilogue, s_.batch.size());
    for (std::size_t o = 0; o < s_.epilogue.operands.size(); ++o)
      epilogue.operand[o] = ctx.at<const float>(s_.epilogue.operands[o].value);
    float* y = ctx.at<float>(out_);
    std::atomic<std::int64_t> next_chunk{0};
    run_parts(ctx.team, parts, [&](std::int64_t p) {
      std::byte* own = scratch + shared_bytes_ + std::size_t(p) * own_bytes_;
      auto* entries = reinterpret_cast<Entry*>(own + entries_at_);
      auto* counts = reinterpret_cast<std::int32_t*>(own + counts_at_);
      auto* lanes = reinterpret_cast<std::int32_t*>(own + lanes_at_);
      auto* start = reinterpret_cast<std::int64_t*>(own + start_at_);
      auto* next = reinterpret_cast<std::int64_t*>(own + next_at_);
      auto* cursor = reinterpret_cast<const Entry**>(own + cursor_at_);
      for (;;) {
        const std::int64_t p0 = next_chunk.fetch_add(1, std::memory_order_relaxed) * chunk_;
        if (p0 >= pairs_) break;
        const std::int64_t p1 = std::min(pairs_, p0 + chunk_);
        (rows_layout_ ? loops_->count_rows : loops_->count_columns)(a, lda_, m, k, p0, p1, counts,
                                                                    lanes);
        start[0] = 0;
        for (std::int64_t i = 0; i < p1 - p0; ++i) start[i + 1] = start[i] + counts[i];
        if (rows_layout_) {
          loops_->fill_rows(a, lda_, m, k, p0, p1, start, entries);
        } else {
          std::copy(start, start + (p1 - p0), next);  // each pair's next entry
          loops_->fill_columns(a, lda_, m, k, p0, p1, next, entries);
        }
        loops_->product_rows(entries, start, b, ldb_, packed, m, k, n, p0, p1, y, ldy_, epilogue,
                             spare, cursor);
      }
    });
    return true;
  }

  MatmulSpec s_;
  ValueId out_ = 0;
  std::unique_ptr<CpuKernel> dense_;
  const Loops* loops_ = nullptr;
  bool rows_layout_ = true;  // the left operand's rows contiguous; else its columns
  std::int64_t lda_ = 0, ldb_ = 0, ldy_ = 0;
  std::int64_t pairs_ = 0;  // of product rows, the last alone where m is odd
  int threads_ = 1;         // the most a run splits over
  std::int64_t chunk_ = 1;  // pairs a thread lists and sums in one go
  // The scratchpad: the shared tables, then each thread's own.
  std::size_t packed_at_ = 0, spare_at_ = 0, shared_bytes_ = 0;
  std::size_t entries_at_ = 0, counts_at_ = 0, lanes_at_ = 0, start_at_ = 0, next_at_ = 0,
              cursor_at_ = 0, own_bytes_ = 0;
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
