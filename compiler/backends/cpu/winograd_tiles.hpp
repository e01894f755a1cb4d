// Internal: the AVX2 loops of glia's Winograd F(2x2, 3x3) convolution (winograd_conv.cpp):
// a tile's transforms and their adjoints, eight channels a vector, and the small matrix
// products between them. Callers check vector_isa() first.
//
// A 2x2 output tile y of a 3x3 correlation reads a 4x4 input tile d:
//   y = A' [(G g G') * (B' d B)] A,  with  B' = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1],
//   G = [1 0 0; .5 .5 .5; .5 -.5 .5; 0 0 1],  A' = [1 1 1 0; 0 1 -1 -1],
// 16 products per channel pair where a direct sum takes 36. The gradients are the adjoints
// of the same linear maps: the input's B dU B' and the output's A dY A', and the kernel's
// G' dW G. In every 16-position buffer, position xi (row-major over the 4x4) is `step`
// floats after the one before.
#pragma once

#include <cstdint>

namespace glia::detail::cpu::winograd {

// What the forward pass's output transform adds and applies: steps in order, each add
// reading base + n s[0] + k s[1] + y s[2] + x s[3] for output (n, k, y, x), with s[1]
// 0 or 1.
struct TileEpilogue {
  enum class Step : std::uint8_t { add, relu };
  static constexpr int kMaxSteps = 8;
  int steps = 0;
  Step step[kMaxSteps] = {};
  const float* base[kMaxSteps] = {};
  std::int64_t strides[kMaxSteps][4] = {};
};

// u[xi step + c] = (B' d B)[xi] for c in [0, channels), a multiple of 8; d: the 16 pixels'
// first channel, row-major (a row of zeros for pixels outside the input).
void input_tile(const float* const* d, std::int64_t channels, float* u, std::int64_t step);

// The adjoint: out[i] += (B du B')[i] for each pixel i whose pointer is not null.
void input_adjoint(const float* du, std::int64_t step, std::int64_t channels, float* const* out);

// y[i] = epilogue(A' m A)[i] for the 2x2 pixels i whose pointer is not null; (n, oy, ox):
// the tile's first output, for the epilogue's operands.
void output_tile(const float* m, std::int64_t step, std::int64_t channels, float* const* y,
                 const TileEpilogue& e, std::int64_t n, std::int64_t oy, std::int64_t ox);

// The adjoint: m[xi step + c] = (A dy A')[xi], a null pixel pointer reading zeros.
void output_adjoint(const float* const* dy, std::int64_t channels, float* m, std::int64_t step);

// The kernel's transform, scalar (once a run): w[xi step] = (G g G')[xi] for the 3x3
// kernel g, g(u, v) at g[u gu + v gv].
void weight_tile(const float* g, std::int64_t gu, std::int64_t gv, float* w, std::int64_t step);
// The adjoint: g(u, v) = (G' dw G)(u, v), written at g[u gu + v gv].
void weight_adjoint(const float* dw, std::int64_t step, float* g, std::int64_t gu, std::int64_t gv);

// c[i, j] (+)= sum_p a[i ar + p ac] b[p ldb + j] for i < m, j < n (a multiple of 8),
// p < depth; accumulating where `accumulate`, else overwriting.
void gemm(std::int64_t m, std::int64_t n, std::int64_t depth, const float* a, std::int64_t ar,
          std::int64_t ac, const float* b, std::int64_t ldb, float* c, std::int64_t ldc,
          bool accumulate);

}  // namespace glia::detail::cpu::winograd
