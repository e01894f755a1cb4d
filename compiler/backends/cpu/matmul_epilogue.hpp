// Internal: a MatmulSpec's epilogue (bias, residual, relu, tanh, logistic) applied by
// glia's own matmul kernels (small_matmul.cpp, zero_skip_matmul.cpp) to a block of a
// product's row while it is still in L1.
#pragma once

#include <cstddef>
#include <cstdint>

#include "glia/compiler/program.hpp"
#include "glia/core/elementwise.hpp"

namespace glia::detail::cpu {

// The most epilogue operands the kernels' tables hold.
inline constexpr std::size_t kMaxOperands = 8;

// The epilogue of the rows of one batch element: each add's operand at the first row and
// column computed, and its row and column strides (0: broadcast along it).
// Only the entries of the adds among `steps` are set (zeroing the tables costs a rep stos).
struct RowsEpilogue {
  const EpilogueSpec::Step* steps;
  std::size_t count;
  const float* operand[kMaxOperands];
  std::int64_t row_stride[kMaxOperands], column_stride[kMaxOperands];
};

// `epilogue`'s steps and its operands' row and column strides (the axes after `batch_dims`
// batch axes); the caller sets the operands' pointers.
inline RowsEpilogue rows_epilogue(const EpilogueSpec& epilogue, std::size_t batch_dims) {
  RowsEpilogue e;
  e.steps = epilogue.steps.data();
  e.count = epilogue.steps.size();
  for (std::size_t o = 0; o < epilogue.operands.size(); ++o) {
    e.row_stride[o] = epilogue.operands[o].strides[batch_dims];
    e.column_stride[o] = epilogue.operands[o].strides[batch_dims + 1];
  }
  return e;
}

// The epilogue on v[0, len), columns j.. of row i. Inlined into each kernel's ISA
// variant, so a block of constant length runs it in that variant's vectors.
inline void apply_epilogue(const RowsEpilogue& e, std::int64_t i, std::int64_t j,
                           float* __restrict v, std::int64_t len) {
  std::size_t next = 0;
  for (std::size_t s = 0; s < e.count; ++s) {
    switch (e.steps[s]) {
      case EpilogueSpec::Step::add: {
        const std::int64_t pn = e.column_stride[next];
        const float* __restrict p = e.operand[next] + i * e.row_stride[next] + j * pn;
        ++next;
        if (pn == 1) {
          for (std::int64_t c = 0; c < len; ++c) v[c] += p[c];
        } else {
          for (std::int64_t c = 0; c < len; ++c) v[c] += p[c * pn];
        }
        break;
      }
      case EpilogueSpec::Step::relu:  // as max(x, 0): NaN propagates
        for (std::int64_t c = 0; c < len; ++c) v[c] = v[c] < 0.0f ? 0.0f : v[c];
        break;
      case EpilogueSpec::Step::tanh:
        for (std::int64_t c = 0; c < len; ++c) v[c] = ew::Tanh{}(v[c]);
        break;
      case EpilogueSpec::Step::logistic:
        for (std::int64_t c = 0; c < len; ++c) v[c] = ew::Logistic{}(v[c]);
        break;
    }
  }
}

}  // namespace glia::detail::cpu
