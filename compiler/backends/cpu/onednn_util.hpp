// Internal: what the oneDNN realisations share — memory descriptors of strided views
// (oneDNN's layouts for size-1 dimensions), an epilogue as post-ops, and the descriptors
// bound per run.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include <dnnl.hpp>

#include "backends/cpu/realise.hpp"

namespace glia::detail::cpu {

// With `settle_units`, size-1 dimensions take the outermost stride (as oneDNN's plain
// tags give them, so that its optimised matmul kernels recognise the layout); without,
// they keep theirs (a channels-last view of one channel stays channels-last, which its
// convolutions need to match dst's layout).
dnnl::memory::desc f32_desc(const std::vector<std::int64_t>& dims,
                            const std::vector<std::int64_t>& strides, bool settle_units = true);
inline dnnl::memory::desc f32_desc(const StridedView& v, bool settle_units = true) {
  return f32_desc(v.dims, v.strides, settle_units);
}

// An epilogue on a primitive with destination dims `dst_dims`: its post-ops, and each
// operand's argument slot and descriptor.
struct PostOps {
  struct Operand {
    int arg = 0;  // DNNL_ARG_ATTR_MULTIPLE_POST_OP(k) | DNNL_ARG_SRC_1
    ValueId value = 0;
    dnnl::memory::desc desc;
  };
  dnnl::post_ops ops;
  std::vector<Operand> operands;
};
PostOps post_ops(const EpilogueSpec& epilogue, const std::vector<std::int64_t>& dst_dims);

// A 64-byte aligned offset past `bytes`.
inline std::size_t align64(std::size_t bytes) { return (bytes + 63) / 64 * 64; }

}  // namespace glia::detail::cpu
