// The zero-skipping matmul (zero_skip_matmul.hpp). The product's rows go in pairs; a
// pair's entries are the k where either row's left operand is nonzero. A run that may
// skip:
//  1. samples 16 pairs spread over the left operand (8 runs of 8 k each): at most
//     kZeroSkipDensity of their k may have entries;
//  2. where the right operand's rows do not already lie as the loops read them (one
//     block of columns, rows n apart), one parallel region in which each thread copies
//     its share of them into the scratchpad in blocks of columns with contiguous rows
//     (pack_rows), checking them for infinities and NaN;
//  3. in a second region (the only one where the right operand is read in place, each
//     thread checking it as it sums its first chunk), each thread takes the next chunk of
//     pairs left, lists their entries (k, both values) in its own tables, room for every
//     k of each pair, and sums the pairs' products over them (zero_skip_loops.inc), the
//     epilogue included.
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

// The entries of pairs of product rows, each a k where either row's left operand is
// nonzero, with both rows' values there: three tables (k ascending within a pair).
struct Entries {
  std::int32_t* k;
  float* value0;
  float* value1;
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
  using Fill = void (*)(const float*, std::int64_t, std::int64_t, std::int64_t, std::int64_t,
                        std::int64_t, std::int64_t*, const Entries&);
  Fill fill_rows, fill_columns;
  bool (*product_rows)(const Entries&, const std::int64_t*, const float*, std::int64_t,
                       const float*, std::int64_t, std::int64_t, std::int64_t, std::int64_t,
                       std::int64_t, float*, std::int64_t, const RowsEpilogue&, float*,
                       std::int64_t*, bool);
};

// The bytes of a block of weights (a range of k times a block of columns) that one pass
// of the product sums from: L1's size on the x86 cores glia meets (32 or 48 KB; half of
// it ran ~7% slower on an AVX-512 EPYC, the pass's sums stored and loaded twice as often).
constexpr std::int64_t kL1Weights = 32768;

// The most bytes of a right operand read in place (see ZeroSkipMatmul::ZeroSkipMatmul): the
// MLP's gradient product's [128, 128] dz; its 784x128 weights are packed.
constexpr std::int64_t kDirectBytes = 128 * 1024;

// GCC lowers a vector type in the target of the function that declares it, so each ISA
// includes the loops in its own target region (as onednn_pool.cpp does).
#pragma GCC push_options
#pragma GCC target("avx512f,avx512dq,avx512bw,avx512vl")
namespace isa_avx512 {
constexpr int kLanes = 16, kColumns = 8;
inline unsigned nonzero_lanes(const float* p) {
  return _mm512_cmp_ps_mask(_mm512_loadu_ps(p), _mm512_setzero_ps(), _CMP_NEQ_UQ);
}
// keep_each_lane by compressing each vector (to a register: compressing to memory is
// microcoded on AMD's parts), all of it stored.
inline int keep_lanes(unsigned bits, std::int64_t k, const float* r0, const float* r1,
                      std::int32_t* ks, float* v0, float* v1) {
  const auto keep = __mmask16(bits);
  const __m512i lanes = _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
  _mm512_storeu_si512(ks, _mm512_maskz_compress_epi32(
                              keep, _mm512_add_epi32(_mm512_set1_epi32(std::int32_t(k)), lanes)));
  _mm512_storeu_ps(v0, _mm512_maskz_compress_ps(keep, _mm512_loadu_ps(r0)));
  _mm512_storeu_ps(v1, _mm512_maskz_compress_ps(keep, _mm512_loadu_ps(r1)));
  return __builtin_popcount(bits);
}
// The 16 x 16 floats from a (rows lda apart) transposed into `columns` (16 apart). (Generic
// shuffles: GCC 12's unpack intrinsics warn of an uninitialised operand they never read.)
inline void transpose_block(const float* a, std::int64_t lda, float* columns) {
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
    auto* out = reinterpret_cast<V*>(columns);
    out[j] =
        __builtin_shufflevector(s0, s2, 0, 1, 2, 3, 8, 9, 10, 11, 16, 17, 18, 19, 24, 25, 26, 27);
    out[4 + j] =
        __builtin_shufflevector(s0, s2, 4, 5, 6, 7, 12, 13, 14, 15, 20, 21, 22, 23, 28, 29, 30, 31);
    out[8 + j] =
        __builtin_shufflevector(s1, s3, 0, 1, 2, 3, 8, 9, 10, 11, 16, 17, 18, 19, 24, 25, 26, 27);
    out[12 + j] =
        __builtin_shufflevector(s1, s3, 4, 5, 6, 7, 12, 13, 14, 15, 20, 21, 22, 23, 28, 29, 30, 31);
  }
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
constexpr auto keep_lanes = keep_each_lane<kLanes>;
// The 8 x 8 floats from a (rows lda apart) transposed into `columns` (8 apart).
inline void transpose_block(const float* a, std::int64_t lda, float* columns) {
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
    _mm256_store_ps(columns + j * 8, _mm256_permute2f128_ps(r[j], r[4 + j], 0x20));
    _mm256_store_ps(columns + (4 + j) * 8, _mm256_permute2f128_ps(r[j], r[4 + j], 0x31));
  }
}
#include "backends/cpu/zero_skip_loops.inc"
}  // namespace isa_avx2
#pragma GCC pop_options

namespace isa_baseline {
constexpr int kLanes = 4, kColumns = 6;
inline unsigned nonzero_lanes(const float* p) {
  return unsigned(_mm_movemask_ps(_mm_cmpneq_ps(_mm_loadu_ps(p), _mm_setzero_ps())));
}
constexpr auto keep_lanes = keep_each_lane<kLanes>;
// The 4 x 4 floats from a (rows lda apart) transposed into `columns` (4 apart).
inline void transpose_block(const float* a, std::int64_t lda, float* columns) {
  __m128 r0 = _mm_loadu_ps(a), r1 = _mm_loadu_ps(a + lda), r2 = _mm_loadu_ps(a + 2 * lda),
         r3 = _mm_loadu_ps(a + 3 * lda);
  _MM_TRANSPOSE4_PS(r0, r1, r2, r3);
  _mm_store_ps(columns, r0);
  _mm_store_ps(columns + 4, r1);
  _mm_store_ps(columns + 8, r2);
  _mm_store_ps(columns + 12, r3);
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
    Tables shared, own;
    packed_at_ = shared.add(direct_ ? 0 : sizeof(float) * std::size_t(s.k * s.n));
    spare_at_ = shared.add(sizeof(float) * std::size_t(s.n));
    const auto entries = std::size_t(s.k * chunk_);
    ks_at_ = own.add(sizeof(std::int32_t) * entries);
    values0_at_ = own.add(sizeof(float) * entries);
    values1_at_ = own.add(sizeof(float) * entries);
    end_at_ = own.add(sizeof(std::int64_t) * std::size_t(chunk_));
    cursor_at_ = own.add(sizeof(std::int64_t) * std::size_t(chunk_));
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
               std::lround(kZeroSkipDensity * 100), "% nonzero",
               direct_ ? ", rhs read in place" : ", rhs packed", " (",
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
    RowsEpilogue epilogue = rows_epilogue(s_.epilogue, s_.batch.size());
    for (std::size_t o = 0; o < s_.epilogue.operands.size(); ++o)
      epilogue.operand[o] = ctx.at<const float>(s_.epilogue.operands[o].value);
    float* y = ctx.at<float>(out_);
    std::atomic<std::int64_t> next_chunk{0};
    std::atomic<bool> finite{true};
    run_parts(ctx.team, parts, [&](std::int64_t p) {
      std::byte* own = scratch + shared_bytes_ + std::size_t(p) * own_bytes_;
      const Entries entries{reinterpret_cast<std::int32_t*>(own + ks_at_),
                            reinterpret_cast<float*>(own + values0_at_),
                            reinterpret_cast<float*>(own + values1_at_)};
      auto* end = reinterpret_cast<std::int64_t*>(own + end_at_);
      auto* cursor = reinterpret_cast<std::int64_t*>(own + cursor_at_);
      for (bool check = direct_;; check = false) {
        const std::int64_t p0 = next_chunk.fetch_add(1, std::memory_order_relaxed) * chunk_;
        if (p0 >= pairs_) break;
        const std::int64_t p1 = std::min(pairs_, p0 + chunk_);
        (rows_layout_ ? loops_->fill_rows : loops_->fill_columns)(a, lda_, m, k, p0, p1, end,
                                                                  entries);
        if (!loops_->product_rows(entries, end, b, ldb_, weights, m, k, n, p0, p1, y, ldy_,
                                  epilogue, spare, cursor, check))
          finite.store(false, std::memory_order_relaxed);
      }
    });
    return finite.load(std::memory_order_relaxed);
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
  bool direct_ = false;  // b read in place, not packed
  std::size_t ks_at_ = 0, values0_at_ = 0, values1_at_ = 0, end_at_ = 0, cursor_at_ = 0,
              own_bytes_ = 0;
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
