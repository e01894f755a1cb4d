// Lowering of a dot_general node onto oneDNN's matmul primitive. A dot_general is a
// (batched) matmul when its axes fold into [batch..., M, K] x [batch..., K, N] through
// strides alone; the primitive and its memory descriptors are made once, at compile time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include <dnnl.hpp>

#include "backends/cpu/program.hpp"
#include "glia/core/graph.hpp"

namespace glia::detail::cpu {

// The strided view of a dot_general as a matmul: dims and strides (in elements) of
// src [batch..., M, K], weights [batch..., K, N] and dst [batch..., M, N].
struct MatmulShape {
  std::vector<std::int64_t> batch;
  std::int64_t m = 1, k = 1, n = 1;
  std::vector<std::int64_t> src_strides, weights_strides, dst_strides;
};

// The matmul view of a dot_general on operands of these shapes, or nullopt when its axes
// do not fold (free or contracting axes that are not contiguous), when it has more
// batch axes than oneDNN takes, or when some dimension is zero.
std::optional<MatmulShape> matmul_shape(const DotAttrs& attrs, const Shape& lhs, const Shape& rhs);

class MatmulStep {
 public:
  // nullopt when the node is not an f32 matmul in the sense of matmul_shape, or when
  // oneDNN has no implementation for it; the node then runs its reference kernel.
  // `post_ops` run on the product in the same pass (an epilogue).
  static std::optional<MatmulStep> create(const Graph& graph, const Node& node,
                                          const dnnl::engine& engine,
                                          const dnnl::post_ops& post_ops = {});

  // The arguments' memory objects, made once (per workspace) and repointed each run:
  // making them per run costs more than a small product. The caller adds the post-ops'
  // operands to `args`.
  struct Bound {
    dnnl::memory src, weights, dst, scratchpad;
    std::unordered_map<int, dnnl::memory> args;  // the above and any post-op operands
  };
  Bound bind() const;
  // Writes lhs . rhs into out (already of the node's type); `scratchpad` holds at
  // least scratchpad_bytes(), so concurrent runs never share oneDNN's scratch memory.
  void execute(const dnnl::stream& stream, Bound& bound, const Tensor& lhs, const Tensor& rhs,
               Tensor& out, void* scratchpad) const;
  const MatmulShape& shape() const { return shape_; }
  const dnnl::engine& engine() const { return engine_; }
  std::size_t scratchpad_bytes() const { return scratchpad_bytes_; }
  // "onednn matmul 2 x [17x33]·[33x3] (brg:avx512_core)"
  std::string describe() const;

 private:
  MatmulShape shape_;
  dnnl::engine engine_;
  dnnl::memory::desc src_, weights_, dst_, scratchpad_;
  dnnl::matmul primitive_;
  std::size_t scratchpad_bytes_ = 0;
  std::string impl_;
  int threads_ = 0;  // 1 for small products (see kSingleThreadFlops), else the program's
};

// The kernel for dot_general `id` with the epilogue after it (bias, activation,
// residual add as post-ops), or null when it is not a matmul in the sense above.
std::unique_ptr<Kernel> make_matmul_kernel(Lowering& lowering, ValueId id);

}  // namespace glia::detail::cpu
