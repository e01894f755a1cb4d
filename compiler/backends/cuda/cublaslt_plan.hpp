// Internal to the `cuda` backend: how a MatmulSpec runs on cuBLASLt, decided from the spec
// alone (no device). cuBLASLt is column-major: a row-major out[i, j] = lhs[i, k] rhs[k, j]
// runs as D = outᵀ = rhsᵀ·lhsᵀ (D's rows are the product's columns), or as D = out =
// lhs·rhs where the output steps by one down its rows; each operand is read under op N or
// T from whichever of its strides is 1. Batch axes that step as one fold into cuBLASLt's
// strided batch; any others are looped over, a call each. The epilogue takes a
// per-feature bias, a residual (C with beta = 1) and relu.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include <cublasLt.h>

#include "glia/compiler/program.hpp"

namespace glia::detail::cuda::lt {

// An operand as cuBLASLt reads it: a column-major rows x cols matrix with leading
// dimension ld (its batch's matrices batch_stride elements apart) under op N or T.
struct Matrix {
  ValueId value = -1;
  cublasOperation_t op = CUBLAS_OP_N;
  std::int64_t rows = 1, cols = 1, ld = 1;
  std::int64_t batch_stride = 0;
};

// How a MatmulSpec kernel runs on cuBLASLt, or why it does not.
struct Plan {
  std::string declined;  // empty when it runs
  DType dtype = DType::f32;
  bool transposed = true;  // D = outᵀ = rhsᵀ·lhsᵀ, else D = out = lhs·rhs
  Matrix a, b, c, d;       // cuBLASLt's roles; without a residual, c is d (beta = 0)
  bool residual = false;
  ValueId bias = -1;
  bool relu = false;
  std::int64_t batch = 1;  // cuBLASLt's strided batch
  // Per cublasLtMatmul call: the element offsets of a, b, c and d (one call unless some
  // batch axes do not fold with the others).
  std::vector<std::array<std::int64_t, 4>> calls{{0, 0, 0, 0}};

  cublasLtEpilogue_t epilogue() const {
    if (bias >= 0) return relu ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_BIAS;
    return relu ? CUBLASLT_EPILOGUE_RELU : CUBLASLT_EPILOGUE_DEFAULT;
  }
};

// The plan of a MatmulSpec kernel; Plan::declined says why cuBLASLt does not run it.
Plan plan_matmul(const Graph& graph, const Kernel& kernel);

}  // namespace glia::detail::cuda::lt
