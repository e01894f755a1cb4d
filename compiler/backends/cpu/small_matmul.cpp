// The small f32 matmul kernel: rows of the product computed with the compiler's
// vectorised loops (k outermost over contiguous weight rows, or dot products over
// contiguous k), and the epilogue (bias, residual, relu, tanh, logistic) applied to each
// row while it is still in L1. Accumulates in f32 like oneDNN.
#include "backends/cpu/small_matmul.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace glia::detail::cpu {

namespace {

// out[j] = sum_k a[k * ak] * w[k * wk + j * wn], for j < n. An AVX2 clone where the CPU
// has it (mul and add, no FMA: every ISA rounds alike).
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("avx2", "default")))
#endif
void product_row(const float* a, std::int64_t ak, const float* w, std::int64_t wk, std::int64_t wn,
                 std::int64_t k, std::int64_t n, float* __restrict out) {
  if (wn == 1) {
    std::fill(out, out + n, 0.0f);
    for (std::int64_t q = 0; q < k; ++q) {
      const float av = a[q * ak];
      const float* __restrict wr = w + q * wk;
      for (std::int64_t j = 0; j < n; ++j) out[j] += av * wr[j];
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

float logistic(float x) {  // as the reference kernel: never exponentiates a large number
  if (x >= 0.0f) return 1.0f / (1.0f + std::exp(-x));
  float e = std::exp(x);
  return e / (1.0f + e);
}

class SmallMatmulKernel final : public Kernel {
 public:
  SmallMatmulKernel(const Node& node, ValueId id, MatmulShape shape, Epilogue e)
      : shape_(std::move(shape)), epilogue_(std::move(e)) {
    lhs_ = node.inputs[0];
    rhs_ = node.inputs[1];
    inputs = {lhs_};
    if (rhs_ != lhs_) inputs.push_back(rhs_);
    for (const auto& o : epilogue_.operands)
      if (std::find(inputs.begin(), inputs.end(), o.value) == inputs.end())
        inputs.push_back(o.value);
    outputs = {epilogue_.result};
    covered = {id};
    covered.insert(covered.end(), epilogue_.covered.begin(), epilogue_.covered.end());
    batch_count_ = 1;
    for (std::int64_t b : shape_.batch) batch_count_ *= b;
  }

  void run(RunContext& ctx) const override {
    const MatmulShape& s = shape_;
    const std::size_t nb = s.batch.size();
    const auto* a = ctx.values[static_cast<std::size_t>(lhs_)].data<float>();
    const auto* w = ctx.values[static_cast<std::size_t>(rhs_)].data<float>();
    float* y = ctx.values[static_cast<std::size_t>(outputs[0])].data<float>();
    const float* operand[8] = {};
    const std::size_t operand_count = std::min<std::size_t>(epilogue_.operands.size(), 8);
    for (std::size_t i = 0; i < operand_count; ++i)
      operand[i] = ctx.values[static_cast<std::size_t>(epilogue_.operands[i].value)].data<float>();
    std::int64_t index[DNNL_MAX_NDIMS] = {};  // the batch multi-index
    for (std::int64_t b = 0; b < batch_count_; ++b) {
      std::int64_t a_base = 0, w_base = 0;
      for (std::size_t d = 0; d < nb; ++d) {
        a_base += index[d] * s.src_strides[d];
        w_base += index[d] * s.weights_strides[d];
      }
      for (std::int64_t i = 0; i < s.m; ++i) {
        float* row = y + (b * s.m + i) * s.n;
        product_row(a + a_base + i * s.src_strides[nb], s.src_strides[nb + 1], w + w_base,
                    s.weights_strides[nb], s.weights_strides[nb + 1], s.k, s.n, row);
        if (!epilogue_.steps.empty()) apply_epilogue(operand, index, i, row);
      }
      for (std::size_t d = nb; d-- > 0;) {  // next batch multi-index, last axis fastest
        if (++index[d] < s.batch[d]) break;
        index[d] = 0;
      }
    }
  }

  std::string describe() const override {
    std::ostringstream out;
    out << "small matmul ";
    for (std::int64_t b : shape_.batch) out << b << " x ";
    out << "[" << shape_.m << "x" << shape_.k << "]·[" << shape_.k << "x" << shape_.n << "]"
        << epilogue_.text;
    return out.str();
  }

 private:
  void apply_epilogue(const float* const* operand, const std::int64_t* index, std::int64_t i,
                      float* __restrict row) const {
    const std::size_t nb = shape_.batch.size();
    const std::int64_t n = shape_.n;
    std::size_t next = 0;
    for (Epilogue::Step step : epilogue_.steps) {
      switch (step) {
        case Epilogue::Step::add: {
          const std::vector<std::int64_t>& st = epilogue_.operands[next].dst_strides;
          std::int64_t base = i * st[nb];
          for (std::size_t d = 0; d < nb; ++d) base += index[d] * st[d];
          const float* __restrict p = operand[next++] + base;
          const std::int64_t pn = st[nb + 1];
          if (pn == 1) {
            for (std::int64_t j = 0; j < n; ++j) row[j] += p[j];
          } else {
            for (std::int64_t j = 0; j < n; ++j) row[j] += p[j * pn];
          }
          break;
        }
        case Epilogue::Step::relu:  // as max(x, 0): NaN propagates
          for (std::int64_t j = 0; j < n; ++j) row[j] = row[j] < 0.0f ? 0.0f : row[j];
          break;
        case Epilogue::Step::tanh:
          for (std::int64_t j = 0; j < n; ++j) row[j] = std::tanh(row[j]);
          break;
        case Epilogue::Step::logistic:
          for (std::int64_t j = 0; j < n; ++j) row[j] = logistic(row[j]);
          break;
      }
    }
  }

  MatmulShape shape_;
  Epilogue epilogue_;
  ValueId lhs_ = 0, rhs_ = 0;
  std::int64_t batch_count_ = 1;
};

}  // namespace

bool is_small_matmul(const MatmulShape& s) {
  std::int64_t macs = s.m * s.k * s.n;
  for (std::int64_t b : s.batch) macs *= b;
  return macs <= kSmallMatmulMacs;
}

std::unique_ptr<Kernel> make_small_matmul_kernel(const Node& node, ValueId id, MatmulShape shape,
                                                 Epilogue epilogue) {
  if (epilogue.operands.size() > 8) return nullptr;  // the kernel's operand table
  return std::make_unique<SmallMatmulKernel>(node, id, std::move(shape), std::move(epilogue));
}

}  // namespace glia::detail::cpu
