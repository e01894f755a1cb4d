// The small f32 matmul kernel: rows of the product computed with the compiler's
// vectorised loops (k outermost over contiguous weight rows, 64 columns at a time in
// registers, or dot products over contiguous k), and the epilogue (bias, residual, relu,
// tanh, logistic) applied to each row while it is still in L1. Accumulates in f32 like
// oneDNN. A large row product splits its columns between the threads.
#include "backends/cpu/small_matmul.hpp"

#ifdef _OPENMP
#include <omp.h>
#endif

#include <algorithm>
#include <cmath>

#include "glia/core/elementwise.hpp"

namespace glia::detail::cpu {

namespace {

// out[j] = sum_k a[k * ak] * w[k * wk + j * wn], for j < n. An AVX2 clone where the CPU
// has it (mul and add, no FMA: every ISA rounds alike). Not under ThreadSanitizer: GCC
// instruments the ifunc resolver that target_clones makes, and the dynamic loader runs it
// before TSan's runtime is set up, so the program crashes before main (the default clone
// gives the same bits).
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_THREAD__)
__attribute__((target_clones("avx2", "default")))
#endif
void product_row(const float* a, std::int64_t ak, const float* w, std::int64_t wk, std::int64_t wn,
                 std::int64_t k, std::int64_t n, float* __restrict out) {
  if (wn == 1) {
    // Blocks of columns whose sums stay in registers over k, then the rest in `out`.
    constexpr std::int64_t kBlock = 64;
    std::int64_t j0 = 0;
    for (; j0 + kBlock <= n; j0 += kBlock) {
      float acc[kBlock] = {};
      for (std::int64_t q = 0; q < k; ++q) {
        const float av = a[q * ak];
        const float* __restrict wr = w + q * wk + j0;
        for (std::int64_t j = 0; j < kBlock; ++j) acc[j] += av * wr[j];
      }
      std::copy(acc, acc + kBlock, out + j0);
    }
    std::fill(out + j0, out + n, 0.0f);
    for (std::int64_t q = 0; j0 < n && q < k; ++q) {
      const float av = a[q * ak];
      const float* __restrict wr = w + q * wk;
      for (std::int64_t j = j0; j < n; ++j) out[j] += av * wr[j];
    }
  } else if (wk == 1 && ak == 1) {
    for (std::int64_t j = 0; j < n; ++j) {
      const float* __restrict wc = w + j * wn;
      float acc = 0.0f;
      for (std::int64_t q = 0; q < k; ++q) acc += a[q] * wc[q];
      out[j] = acc;
    }
  } else {
    for (std::int64_t j = 0; j < n; ++j) {
      float acc = 0.0f;
      for (std::int64_t q = 0; q < k; ++q) acc += a[q * ak] * w[q * wk + j * wn];
      out[j] = acc;
    }
  }
}

// The small kernel's table of epilogue operands, and of batch indices.
constexpr std::size_t kMaxOperands = 8, kMaxBatchDims = 10;

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
    const float* operand[kMaxOperands] = {};
    for (std::size_t i = 0; i < s.epilogue.operands.size(); ++i)
      operand[i] = ctx.at<const float>(s.epilogue.operands[i].value);
#ifdef _OPENMP
    if (const int team = split_ ? omp_get_max_threads() : 1; team > 1) {
      const std::int64_t vectors = (s.n + 15) / 16;  // each thread a range of whole vectors
#pragma omp parallel num_threads(team)
      {
        FlushDenormals flush;  // worker threads too (the calling thread's is set by the run)
        const std::int64_t t = omp_get_thread_num();
        columns(a, w, y, operand, std::min(s.n, vectors * t / team * 16),
                std::min(s.n, vectors * (t + 1) / team * 16));
      }
      return;
    }
#endif
    columns(a, w, y, operand, 0, s.n);
  }

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
    std::int64_t index[kMaxBatchDims] = {};  // the batch multi-index
    for (std::int64_t b = 0; b < batch_count_; ++b) {
      std::int64_t a_base = 0, w_base = 0;
      for (std::size_t d = 0; d < nb; ++d) {
        a_base += index[d] * s.lhs_strides[d];
        w_base += index[d] * s.rhs_strides[d];
      }
      for (std::int64_t i = 0; i < s.m; ++i) {
        float* row = y + (b * s.m + i) * s.n;
        product_row(a + a_base + i * s.lhs_strides[nb], s.lhs_strides[nb + 1],
                    w + w_base + j0 * s.rhs_strides[nb + 1], s.rhs_strides[nb],
                    s.rhs_strides[nb + 1], s.k, j1 - j0, row + j0);
        if (!s.epilogue.empty()) apply_epilogue(operand, index, i, row, j0, j1);
      }
      for (std::size_t d = nb; d-- > 0;) {  // next batch multi-index, last axis fastest
        if (++index[d] < s.batch[d]) break;
        index[d] = 0;
      }
    }
  }

  // The epilogue on columns [j0, n) of row i.
  void apply_epilogue(const float* const* operand, const std::int64_t* index, std::int64_t i,
                      float* __restrict row, std::int64_t j0, std::int64_t n) const {
    const std::size_t nb = shape_.batch.size();
    std::size_t next = 0;
    for (EpilogueSpec::Step step : shape_.epilogue.steps) {
      switch (step) {
        case EpilogueSpec::Step::add: {
          const std::vector<std::int64_t>& st = shape_.epilogue.operands[next].strides;
          std::int64_t base = i * st[nb];
          for (std::size_t d = 0; d < nb; ++d) base += index[d] * st[d];
          const float* __restrict p = operand[next++] + base;
          const std::int64_t pn = st[nb + 1];
          if (pn == 1) {
            for (std::int64_t j = j0; j < n; ++j) row[j] += p[j];
          } else {
            for (std::int64_t j = j0; j < n; ++j) row[j] += p[j * pn];
          }
          break;
        }
        case EpilogueSpec::Step::relu:  // as max(x, 0): NaN propagates
          for (std::int64_t j = j0; j < n; ++j) row[j] = row[j] < 0.0f ? 0.0f : row[j];
          break;
        case EpilogueSpec::Step::tanh:
          for (std::int64_t j = j0; j < n; ++j) row[j] = ew::Tanh{}(row[j]);
          break;
        case EpilogueSpec::Step::logistic:
          for (std::int64_t j = j0; j < n; ++j) row[j] = ew::Logistic{}(row[j]);
          break;
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
