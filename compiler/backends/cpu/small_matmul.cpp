// The small f32 matmul kernel: the rows of the product computed with vectorised loops (k
// outermost over contiguous weight rows, blocks of 64 down to 8 columns summed in
// registers, or dot products over contiguous k), and the epilogue (bias, residual, relu,
// tanh, logistic) applied to each block while it is still in L1. Accumulates in f32 like
// oneDNN. A large row product splits its columns between the threads.
#include "backends/cpu/small_matmul.hpp"

#ifdef _OPENMP
#include <omp.h>
#endif

#include <algorithm>
#include <cmath>
#include <type_traits>
#include <utility>

#include "backends/cpu/matmul_epilogue.hpp"
#include "backends/cpu/spin_team.hpp"

namespace glia::detail::cpu {

namespace {

// The small kernel's table of batch indices.
constexpr std::size_t kMaxBatchDims = 10;

// Eight floats as GCC's generic vector: an AVX register in the AVX2 clone below, two SSE
// registers in the default one. Arrays of these, fully unrolled, stay in registers, where
// GCC keeps a float array that a loop vectorises in memory (a store and a reload a step).
// Unaligned (aligned(4)); GCC lets a vector of floats alias floats.
using Vector8 = float __attribute__((vector_size(32), aligned(4)));

// kCount columns of one row's product, as Vector8s (8 columns each) or floats, w at the
// first of them: their sums over k in kSets sets, q spread over the sets in turn (so that
// the adds are not one chain k long: latency, not the pipes, bounded a narrow block),
// unrolled so that each sum stays a register, then added pairwise into out. Vectors are
// read and written in place, never passed by value (that would change the ABI between
// the clones below).
template <class T, int kCount, int kSets>
inline void sum_columns(const float* a, std::int64_t ak, const float* w, std::int64_t wk,
                        std::int64_t k, float* out) {
  constexpr int kWidth = int(sizeof(T) / sizeof(float));
  auto at = [](const float* p) -> const T& { return *reinterpret_cast<const T*>(p); };
  T acc[kSets][kCount];
#pragma GCC unroll 8
  for (int t = 0; t < kSets; ++t)
#pragma GCC unroll 8
    for (int c = 0; c < kCount; ++c) acc[t][c] = T{};
  std::int64_t q = 0;
  for (; q + kSets <= k; q += kSets)
#pragma GCC unroll 8
    for (int t = 0; t < kSets; ++t) {
      const float av = a[(q + t) * ak];
      const float* wr = w + (q + t) * wk;
#pragma GCC unroll 8
      for (int c = 0; c < kCount; ++c) acc[t][c] += av * at(wr + kWidth * c);
    }
  for (; q < k; ++q)
#pragma GCC unroll 8
    for (int c = 0; c < kCount; ++c) acc[0][c] += a[q * ak] * at(w + q * wk + kWidth * c);
#pragma GCC unroll 8
  for (int c = 0; c < kCount; ++c) {
    T& d = *reinterpret_cast<T*>(out + kWidth * c);
    if constexpr (kSets == 1)
      d = acc[0][c];
    else if constexpr (kSets == 2)
      d = acc[0][c] + acc[1][c];
    else
      d = (acc[0][c] + acc[1][c]) + (acc[2][c] + acc[3][c]);
  }
}

// out[i * n + j] = epilogue(sum_k a[i * am + k * ak] * w[k * wk + j * wn]), for i < m and
// j < n: every row of one batch element in one call. An AVX2 clone where the CPU has it
// (mul and add, no FMA: every ISA rounds alike). Not under ThreadSanitizer: GCC
// instruments the ifunc resolver that target_clones makes, and the dynamic loader runs it
// before TSan's runtime is set up, so the program crashes before main (the default clone
// gives the same bits).
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_THREAD__)
__attribute__((target_clones("avx2", "default")))
#endif
void product_rows(const float* a, std::int64_t am, std::int64_t ak, const float* w,
                  std::int64_t wk, std::int64_t wn, std::int64_t m, std::int64_t k, std::int64_t n,
                  float* __restrict out, std::int64_t out_row, const RowsEpilogue& e) {
  for (std::int64_t i = 0; i < m; ++i, a += am, out += out_row) {
    if (wn == 1) {
      // Blocks of columns whose sums stay in registers over k (64, then 32, 16 and 8), then
      // the last few columns likewise; each block's epilogue runs while it is in L1.
      std::int64_t j0 = 0;
      auto blocks = [&]<std::int64_t kBlock>(std::integral_constant<std::int64_t, kBlock>) {
        constexpr int kVectors = int(kBlock / 8), kSets = kVectors >= 8 ? 1 : kVectors == 4 ? 2 : 4;
        for (; j0 + kBlock <= n; j0 += kBlock) {
          sum_columns<Vector8, kVectors, kSets>(a, ak, w + j0, wk, k, out + j0);
          apply_epilogue(e, i, j0, out + j0, kBlock);
        }
      };
      blocks(std::integral_constant<std::int64_t, 64>{});
      blocks(std::integral_constant<std::int64_t, 32>{});
      blocks(std::integral_constant<std::int64_t, 16>{});
      blocks(std::integral_constant<std::int64_t, 8>{});
      auto last = [&]<int kColumns>(std::integral_constant<int, kColumns>) {
        sum_columns<float, kColumns, 4>(a, ak, w + j0, wk, k, out + j0);
        apply_epilogue(e, i, j0, out + j0, kColumns);
      };
      // The 1-7 columns left, each count its own unrolled instance (inlined, so in the
      // AVX2 clone too).
      auto last_columns = [&]<int... kLess>(std::integer_sequence<int, kLess...>)
          __attribute__((always_inline)) {
        ((n - j0 == kLess + 1 ? (last(std::integral_constant<int, kLess + 1>{}), true) : false) ||
         ...);
      };
      last_columns(std::make_integer_sequence<int, 7>{});
      continue;
    }
    if (wk == 1 && ak == 1) {
      // Dot products over contiguous k, eight lanes of partial sums apiece (a vector add a
      // step, not a chain of k dependent scalar adds), then the lanes' pairwise sum.
      constexpr std::int64_t kLanes = 8;
      for (std::int64_t j = 0; j < n; ++j) {
        const float* __restrict wc = w + j * wn;
        float lane[kLanes] = {};
        std::int64_t q = 0;
        for (; q + kLanes <= k; q += kLanes)
          for (std::int64_t l = 0; l < kLanes; ++l) lane[l] += a[q + l] * wc[q + l];
        float acc = ((lane[0] + lane[4]) + (lane[2] + lane[6])) +
                    ((lane[1] + lane[5]) + (lane[3] + lane[7]));
        for (; q < k; ++q) acc += a[q] * wc[q];
        out[j] = acc;
      }
    } else {
      for (std::int64_t j = 0; j < n; ++j) {
        float acc = 0.0f;
        for (std::int64_t q = 0; q < k; ++q) acc += a[q * ak] * w[q * wk + j * wn];
        out[j] = acc;
      }
    }
    apply_epilogue(e, i, 0, out, n);
  }
}

class SmallMatmulKernel final : public CpuKernel {
 public:
  SmallMatmulKernel(const MatmulSpec& spec, ValueId out) : shape_(spec), out_(out) {
    batch_count_ = 1;
    for (std::int64_t b : shape_.batch) batch_count_ *= b;
    split_ = is_row_product(spec) && spec.multiply_adds() >= kSplitColumnsMacs;
  }

  void run(RunContext& ctx) const override {
    const MatmulSpec& s = shape_;
    const auto* a = ctx.at<const float>(s.lhs);
    const auto* w = ctx.at<const float>(s.rhs);
    float* y = ctx.at<float>(out_);
    const float* operand[kMaxOperands];
    for (std::size_t i = 0; i < s.epilogue.operands.size(); ++i)
      operand[i] = ctx.at<const float>(s.epilogue.operands[i].value);
#ifdef _OPENMP
    if (const int team = split_ ? omp_get_max_threads() : 1; team > 1) {
      const std::int64_t vectors = (s.n + 15) / 16;  // each thread a range of whole vectors
      run_parts(ctx.team, team, [&](std::int64_t t) {
        columns(a, w, y, operand, std::min(s.n, vectors * t / team * 16),
                std::min(s.n, vectors * (t + 1) / team * 16));
      });
      return;
    }
#endif
    columns(a, w, y, operand, 0, s.n);
  }

  bool uses_openmp() const override { return false; }

  std::string describe() const override {
    return split_ ? "glia small matmul (columns split between threads)" : "glia small matmul";
  }

 private:
  // Columns [j0, j1) of every row of the product, epilogue included.
  void columns(const float* a, const float* w, float* y, const float* const* operand,
               std::int64_t j0, std::int64_t j1) const {
    if (j0 >= j1) return;
    const MatmulSpec& s = shape_;
    const std::size_t nb = s.batch.size();
    const std::vector<EpilogueSpec::Operand>& ops = s.epilogue.operands;
    RowsEpilogue e = rows_epilogue(s.epilogue, nb);
    std::int64_t index[kMaxBatchDims];  // the batch multi-index
    std::fill(index, index + nb, 0);
    for (std::int64_t b = 0; b < batch_count_; ++b) {
      std::int64_t a_base = 0, w_base = 0;
      for (std::size_t d = 0; d < nb; ++d) {
        a_base += index[d] * s.lhs_strides[d];
        w_base += index[d] * s.rhs_strides[d];
      }
      for (std::size_t o = 0; o < ops.size(); ++o) {
        std::int64_t base = j0 * ops[o].strides[nb + 1];
        for (std::size_t d = 0; d < nb; ++d) base += index[d] * ops[o].strides[d];
        e.operand[o] = operand[o] + base;
      }
      product_rows(a + a_base, s.lhs_strides[nb], s.lhs_strides[nb + 1],
                   w + w_base + j0 * s.rhs_strides[nb + 1], s.rhs_strides[nb],
                   s.rhs_strides[nb + 1], s.m, s.k, j1 - j0, y + b * s.m * s.n + j0, s.n, e);
      for (std::size_t d = nb; d-- > 0;) {  // next batch multi-index, last axis fastest
        if (++index[d] < s.batch[d]) break;
        index[d] = 0;
      }
    }
  }

  MatmulSpec shape_;
  ValueId out_ = 0;
  std::int64_t batch_count_ = 1;
  bool split_ = false;  // a large row product: columns split between the threads
};

}  // namespace

std::unique_ptr<CpuKernel> make_small_matmul_kernel(const MatmulSpec& spec, ValueId out) {
  if (spec.epilogue.operands.size() > kMaxOperands || spec.batch.size() > kMaxBatchDims)
    return nullptr;
  return std::make_unique<SmallMatmulKernel>(spec, out);
}

}  // namespace glia::detail::cpu
