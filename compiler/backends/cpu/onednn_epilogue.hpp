// Shared pieces of the oneDNN lowerings: reading a value through the transposes that
// produced it (a transpose is only a strided view to oneDNN), and finding the epilogue
// after a primitive's result (bias, activation, residual add) that oneDNN's post-ops
// compute in the same pass.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include <dnnl.hpp>

#include "backends/cpu/program.hpp"

namespace glia::detail::cpu {

// A value of the graph as a strided view of `base`'s dense row-major storage: dims are
// the value's own, strides say where each of its axes steps in `base`.
struct StridedView {
  ValueId base = 0;
  std::vector<std::int64_t> dims, strides;
  std::vector<ValueId> walked;  // transposes read through that only the reader reads
};

// `id` viewed through its transposes, as far as that is safe: through a transpose whose
// only reader is `reader` (the kernel then covers it), or whose operand is a parameter
// or constant (always bound). Other values are read as they are.
StridedView view_through_transposes(const Lowering& lowering, ValueId id, ValueId reader);

// Swaps the first two axes of a view (batch and feature roles in the backward passes).
StridedView swap_leading(StridedView v);

// With `settle_units`, size-1 dimensions take the outermost stride (as oneDNN's plain
// tags give them, for its matmul); without, they keep theirs (a channels-last view of
// one channel stays channels-last, which its convolutions need to match dst's layout).
dnnl::memory::desc f32_desc(const std::vector<std::int64_t>& dims,
                            const std::vector<std::int64_t>& strides, bool settle_units = true);

// The post-ops after a primitive's result value `start`, whose graph axis i is the
// primitive's destination dimension dst_dim[i] (of dst_dims).
struct Epilogue {
  struct Operand {
    int arg = 0;  // DNNL_ARG_ATTR_MULTIPLE_POST_OP(k) | DNNL_ARG_SRC_1
    ValueId value = 0;
    dnnl::memory::desc desc;
    // Where each destination dimension steps in the operand (0: broadcast along it),
    // for kernels that apply the epilogue themselves.
    std::vector<std::int64_t> dst_strides;
  };
  // The steps in order, for kernels that apply them themselves; an add reads the next
  // operand in turn.
  enum class Step { add, relu, tanh, logistic };
  std::vector<Step> steps;
  ValueId result = 0;            // the last value computed: what the kernel outputs
  std::vector<ValueId> covered;  // the nodes after `start` it computes
  std::vector<Operand> operands;
  dnnl::post_ops ops;
  std::string text;  // " + bias, relu"
};

// Follows `start`'s single readers while they are a per-channel bias add (add of a
// rank-1 broadcast along one axis), an add of a same-typed value (residual), relu
// (max with a zero constant), tanh or logistic; stops at a value something else reads.
Epilogue find_epilogue(Lowering& lowering, ValueId start, const std::vector<int>& dst_dim,
                       const std::vector<std::int64_t>& dst_dims);

// Binds each post-op operand into `args` for one run.
void bind_epilogue(const Epilogue& e, const dnnl::engine& engine, RunContext& ctx,
                   std::unordered_map<int, dnnl::memory>& args);

// A 64-byte aligned offset past `bytes`.
inline std::size_t align64(std::size_t bytes) { return (bytes + 63) / 64 * 64; }

}  // namespace glia::detail::cpu
