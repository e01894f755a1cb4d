// The zero-skipping matmul (zero_skip_matmul.hpp). The product's rows go in pairs; a
// pair's entries are the k where either row's left operand is nonzero. A run that may
// skip:
//  1. samples 16 pairs spread over the left operand (8 runs of 8 k each): at most
//     kZeroSkipDensity of their k may have entries;
//  2. unless the right operand is read in place (one block of columns, rows n apart, at
//     most kDirectBytes), one parallel region in which each thread copies its share of
//     its rows into the scratchpad in blocks of columns with contiguous rows (pack_rows),
//     checking them for infinities and NaN;
//  3. in a second region (the only one where the right operand is read in place, each
//     thread checking it as it sums its first chunk), each thread takes the next chunk of
//     pairs left, lists their entries (k, both values) in its own tables, room for every
//     k of each pair, and sums the pairs' products over them (zero_skip_loops.inc), the
//     epilogue included.
// Where the right operand is one such block but large and the output small (a training
// step's first layer), k goes in two halves instead, each thread summing every pair over
// its half's rows read in place (what its share of the optimizer's update writes), the
// second half's sums kept apart, then added to the first's and the epilogue applied
// (sum_halves). Every output element is summed by one thread in k order (over each half
// in order there): the thread count never changes the bits.
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
#include "backends/cpu/transpose_blocks.hpp"
#include "backends/cpu/zero_skip_common.hpp"

namespace glia::detail::cpu {

namespace {

// The entries of pairs of product rows, each a k where either row's left operand is
// nonzero, with both rows' values there: three tables (k ascending within a pair).
struct Entries {
  std::int32_t* k;
  float* value0;
  float* value1;
  void put(std::int64_t e, std::int64_t at, float v0, float v1) const {
    k[e] = std::int32_t(at);
    value0[e] = v0;
    value1[e] = v1;
  }
};

// Entries k + l for the lanes l of `bits`, r0[l] and r1[l] their values, written from
// ks, v0 and v1 on (every lane of a vector written, each over the last one kept: no
// branch on a lane, where a mispredicted one cost more than the writes); how many.
template <int kLanes>
inline int keep_each_lane(unsigned bits, std::int64_t k, const float* r0, const float* r1,
                          std::int32_t* ks, float* v0, float* v1) {
  int kept = 0;
  for (int l = 0; l < kLanes; ++l) {
    ks[kept] = std::int32_t(k + l);
    v0[kept] = r0[l];
    v1[kept] = r1[l];
    kept += bits >> l & 1;
  }
  return kept;
}

// One ISA's loops (zero_skip_loops.inc): the left operand (a, lda, m, k) first, then
// pairs p0..p1.
struct Loops {
  bool (*pack_rows)(const float*, std::int64_t, std::int64_t, std::int64_t, std::int64_t,
                    std::int64_t, float*);
  bool (*finite_rows)(const float*, std::int64_t, std::int64_t, std::int64_t, std::int64_t);
  std::int64_t (*first_block)(std::int64_t);  // the columns of the first block of n
  void (*fill_rows)(const float*, std::int64_t, std::int64_t, std::int64_t, std::int64_t,
                    std::int64_t, std::int64_t, std::int64_t, std::int64_t*, const Entries&);
  void (*fill_columns)(const float*, std::int64_t, std::int64_t, std::int64_t, std::int64_t,
                       std::int64_t, std::int64_t*, const Entries&);
  bool (*product_rows)(const Entries&, const std::int64_t*, const float*, std::int64_t,
                       const float*, std::int64_t, std::int64_t, std::int64_t, std::int64_t,
                       std::int64_t, std::int64_t, std::int64_t, float*, std::int64_t,
                       const RowsEpilogue&, float*, std::int64_t*, bool);
};

// The bytes of a block of weights (a range of k times a block of columns) that one pass
// of the product sums from: L1's size on the x86 cores glia meets (32 or 48 KB; half of
// it ran ~7% slower on an AVX-512 EPYC, the pass's sums stored and loaded twice as often).
constexpr std::int64_t kL1Weights = 32768;

// The most bytes of a right operand read in place (see ZeroSkipMatmul::ZeroSkipMatmul): the
// MLP's gradient product's [128, 128] dz; its 784x128 weights are packed.
constexpr std::int64_t kDirectBytes = 128 * 1024;

// The most bytes of a product's output whose sums over k's second half sum_halves keeps
// apart (the MLP's step at batch 128: 64 KB; batch 10,000 predicts in one pass).
constexpr std::int64_t kSplitBytes = 512 * 1024;

#include "backends/cpu/zero_skip_isa.inc"

// The bytes of a chunk's entries at most (a chunk's pairs times k of them): the product
// passes over them once per block of columns and range of k, reading the packed weights
// once per chunk (larger chunks: fewer reads of the weights, from L3 at batch 10,000).
constexpr std::int64_t kChunkBytes = 512 * 1024;

// Scratchpad tables, each on its own cache lines.
class Tables {
 public:
  std::size_t add(std::size_t bytes) {
    const std::size_t at = bytes_;
    bytes_ += cache_aligned(bytes);
    return at;
  }
  std::size_t bytes() const { return bytes_; }

 private:
  std::size_t bytes_ = 0;
};

class ZeroSkipMatmul final : public ZeroSkipping {
 public:
  ZeroSkipMatmul(const MatmulSpec& s, ValueId out, std::unique_ptr<CpuKernel> dense)
      : ZeroSkipping(std::move(dense)), s_(s), out_(out) {
    const std::size_t nb = s.batch.size();
    rows_layout_ = s.lhs_strides[nb + 1] == 1;
    lda_ = rows_layout_ ? s.lhs_strides[nb] : s.lhs_strides[nb + 1];
    ldb_ = s.rhs_strides[nb];
    ldy_ = s.out_strides[nb];
    pairs_ = (s.m + 1) / 2;
    loops_ = by_vector_isa(&isa_avx512::kLoops, &isa_avx2::kLoops, &isa_baseline::kLoops);
    // Threads a run may split over: the program's count (what oneDNN was set up for).
    threads_ = std::clamp(run_threads(), 1, 256);
    // Chunks of at most kChunkBytes of entries (room for every k of each pair), at least
    // two a thread where there are pairs enough (threads take the next chunk left: the
    // chunks' entries differ).
    const auto entry_bytes = std::int64_t(sizeof(std::int32_t) + 2 * sizeof(float)) * s.k;
    chunk_ = std::max<std::int64_t>(1, kChunkBytes / entry_bytes);
    chunk_ = std::clamp<std::int64_t>((pairs_ + 2 * threads_ - 1) / (2 * threads_), 1, chunk_);
    // Where b is one block of columns with rows n apart, packing would copy it as it is,
    // but it also keeps each thread's share of a large b in its own core's cache: read in
    // place by every thread, b ends up in every core's, and whoever writes it next (an
    // optimizer's update of weights) waits for the other cores to give its lines up (the
    // MNIST MLP's Adam update of its 784x128 weights ran 21 -> 50 us a step after a
    // product that read them in place, 2 threads of an EPYC).
    direct_ = loops_->first_block(s.n) == s.n && ldb_ == s.n &&
              s.k * s.n * std::int64_t(sizeof(float)) <= kDirectBytes;
    // Or k in two halves, each summed for every pair by the threads of one half from
    // its rows of b, read in place, then the halves' sums added (in that order, whatever
    // the thread count) and the epilogue applied: each core reads only its half of b, as
    // packing has it, with no copy. Where b is one block and large, and the second half's
    // sums (m x n) are small.
    split_ = rows_layout_ && !direct_ && loops_->first_block(s.n) == s.n && ldb_ == s.n &&
             s.m * s.n * std::int64_t(sizeof(float)) <= kSplitBytes;
    Tables shared, own;
    packed_at_ = shared.add(direct_ || split_ ? 0 : sizeof(float) * std::size_t(s.k * s.n));
    spare_at_ = shared.add(sizeof(float) * std::size_t(2 * s.n));
    half_at_ = shared.add(split_ ? sizeof(float) * std::size_t(s.m * s.n) : 0);
    const auto entries = std::size_t(s.k * chunk_);
    ks_at_ = own.add(sizeof(std::int32_t) * entries);
    values0_at_ = own.add(sizeof(float) * entries);
    values1_at_ = own.add(sizeof(float) * entries);
    end_at_ = own.add(sizeof(std::int64_t) * std::size_t(chunk_));
    cursor_at_ = own.add(sizeof(std::int64_t) * std::size_t(chunk_));
    shared_bytes_ = shared.bytes();
    own_bytes_ = own.bytes();
  }

  std::string what() const override {
    return cat("glia zero-skipping matmul where pairs of lhs rows are at most ",
               std::lround(kZeroSkipDensity * 100), "% nonzero",
               split_    ? ", k in halves, rhs read in place"
               : direct_ ? ", rhs read in place"
                         : ", rhs packed");
  }
  std::size_t skipping_scratchpad_bytes() const override {
    return shared_bytes_ + std::size_t(threads_) * own_bytes_;
  }

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

  bool skip_zeros(RunContext& ctx) const override {
    const auto* a = ctx.at<const float>(s_.lhs);
    const auto* b = ctx.at<const float>(s_.rhs);
    if (!sample_sparse(a)) return false;
    auto* scratch = static_cast<std::byte*>(ctx.scratchpad);
    auto* packed = reinterpret_cast<float*>(scratch + packed_at_);
    auto* spare = reinterpret_cast<float*>(scratch + spare_at_);
    const int parts = std::min(run_threads(), threads_);
    const std::int64_t m = s_.m, k = s_.k, n = s_.n;
    if (split_) return sum_halves(ctx, a, b, parts);

    // 2. The right operand packed and checked, each thread a share of its rows; where it
    // is read in place, each thread checks it as it sums its first chunk.
    const float* weights = b;
    if (!direct_) {
      weights = packed;
      bool finite[256];
      run_parts(ctx.team, parts, [&](std::int64_t p) {
        finite[p] = loops_->pack_rows(b, ldb_, n, k, k * p / parts, k * (p + 1) / parts, packed);
      });
      for (int p = 0; p < parts; ++p)
        if (!finite[p]) return false;
    }

    // 3. Chunks of pairs, each thread taking the next one left: its entries listed and
    // summed in the thread's own tables. Where b holds an infinity or NaN (read in place)
    // the dense kernel writes the output again: it never reads it (an operand of the
    // product is never placed where its output is).
    const RowsEpilogue epilogue = run_epilogue(ctx);
    float* y = ctx.at<float>(out_);
    std::atomic<std::int64_t> next_chunk{0};
    std::atomic<bool> finite{true};
    run_parts(ctx.team, parts, [&](std::int64_t p) {
      const auto [entries, end, cursor] = own_tables(scratch, p);
      for (bool check = direct_;; check = false) {
        const std::int64_t p0 = next_chunk.fetch_add(1, std::memory_order_relaxed) * chunk_;
        if (p0 >= pairs_) break;
        const std::int64_t p1 = std::min(pairs_, p0 + chunk_);
        if (rows_layout_)
          loops_->fill_rows(a, lda_, m, k, 0, k, p0, p1, end, entries);
        else
          loops_->fill_columns(a, lda_, m, k, p0, p1, end, entries);
        if (!loops_->product_rows(entries, end, b, ldb_, weights, m, k, 0, k, n, p0, p1, y, ldy_,
                                  epilogue, spare, cursor, check))
          finite.store(false, std::memory_order_relaxed);
      }
    });
    return finite.load(std::memory_order_relaxed);
  }

  // Thread p's tables in the scratchpad: its entries, each pair's end, each pair's next
  // entry.
  struct Own {
    Entries entries;
    std::int64_t* end;
    std::int64_t* cursor;
  };
  Own own_tables(std::byte* scratch, std::int64_t p) const {
    std::byte* own = scratch + shared_bytes_ + std::size_t(p) * own_bytes_;
    return {
        {reinterpret_cast<std::int32_t*>(own + ks_at_), reinterpret_cast<float*>(own + values0_at_),
         reinterpret_cast<float*>(own + values1_at_)},
        reinterpret_cast<std::int64_t*>(own + end_at_),
        reinterpret_cast<std::int64_t*>(own + cursor_at_)};
  }

  RowsEpilogue run_epilogue(RunContext& ctx) const {
    RowsEpilogue epilogue = rows_epilogue(s_.epilogue, s_.batch.size());
    for (std::size_t o = 0; o < s_.epilogue.operands.size(); ++o)
      epilogue.operand[o] = ctx.at<const float>(s_.epilogue.operands[o].value);
    return epilogue;
  }

  // The product over the two halves of k (split_): thread p sums half p % 2 (one
  // thread: both), the pairs split between the threads of a half; then the second half's
  // sums are added to the first's and the epilogue applied, rows split between threads.
  bool sum_halves(RunContext& ctx, const float* a, const float* b, int parts) const {
    const std::int64_t m = s_.m, k = s_.k, n = s_.n;
    auto* scratch = static_cast<std::byte*>(ctx.scratchpad);
    auto* spare = reinterpret_cast<float*>(scratch + spare_at_);
    auto* half = reinterpret_cast<float*>(scratch + half_at_);  // the second half's sums
    float* y = ctx.at<float>(out_);
    const RowsEpilogue none{nullptr, 0, {}, {}, {}};
    std::atomic<bool> finite{true};
    run_parts(ctx.team, parts, [&](std::int64_t p) {
      const auto [entries, end, cursor] = own_tables(scratch, p);
      for (int h = 0; h < 2; ++h) {
        if (parts > 1 && p % 2 != h) continue;
        const std::int64_t on_half = parts > 1 ? (parts - h + 1) / 2 : 1,
                           index = parts > 1 ? p / 2 : 0;
        const std::int64_t kb = h == 0 ? 0 : k / 2, ke = h == 0 ? k / 2 : k;
        const std::int64_t q1 = pairs_ * (index + 1) / on_half;
        bool check = true;  // this thread's first chunk of the half checks its rows of b
        for (std::int64_t p0 = pairs_ * index / on_half; p0 < q1; p0 += chunk_) {
          const std::int64_t p1 = std::min(q1, p0 + chunk_);
          loops_->fill_rows(a, lda_, m, k, kb, ke, p0, p1, end, entries);
          if (!loops_->product_rows(entries, end, b, ldb_, b, m, k, kb, ke, n, p0, p1,
                                    h == 0 ? y : half, h == 0 ? ldy_ : n, none, spare + h * n,
                                    cursor, check))
            finite.store(false, std::memory_order_relaxed);
          check = false;
        }
      }
    });
    if (!finite.load(std::memory_order_relaxed)) return false;
    const RowsEpilogue epilogue = run_epilogue(ctx);
    run_parts(ctx.team, parts, [&](std::int64_t p) {
      for (std::int64_t i = m * p / parts; i < m * (p + 1) / parts; ++i) {
        float* row = y + i * ldy_;
        const float* second = half + i * n;
        for (std::int64_t j = 0; j < n; ++j) row[j] += second[j];
        apply_epilogue(epilogue, i, 0, row, n);
      }
    });
    return true;
  }

  MatmulSpec s_;
  ValueId out_ = 0;
  const Loops* loops_ = nullptr;
  bool rows_layout_ = true;  // the left operand's rows contiguous; else its columns
  std::int64_t lda_ = 0, ldb_ = 0, ldy_ = 0;
  std::int64_t pairs_ = 0;  // of product rows, the last alone where m is odd
  int threads_ = 1;         // the most a run splits over
  std::int64_t chunk_ = 1;  // pairs a thread lists and sums in one go
  // The scratchpad: the shared tables, then each thread's own.
  std::size_t packed_at_ = 0, spare_at_ = 0, shared_bytes_ = 0;
  bool direct_ = false;  // b read in place, not packed
  bool split_ = false;   // k in two halves (sum_halves)
  std::size_t half_at_ = 0;
  std::size_t ks_at_ = 0, values0_at_ = 0, values1_at_ = 0, end_at_ = 0, cursor_at_ = 0,
              own_bytes_ = 0;
};

}  // namespace

bool zero_skip_fits(const MatmulSpec& s) {
  if (!zero_skip_enabled()) return false;
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
