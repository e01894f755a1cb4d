// Memory descriptors of strided views and epilogues as oneDNN post-ops.
#include "backends/cpu/onednn_util.hpp"

#include <algorithm>

namespace glia::detail::cpu {

dnnl::memory::desc f32_desc(const std::vector<std::int64_t>& dims,
                            const std::vector<std::int64_t>& strides, bool settle_units) {
  std::vector<std::int64_t> s = strides;
  if (settle_units) {
    std::int64_t outer = 1;
    for (std::size_t i = 0; i < dims.size(); ++i)
      if (dims[i] != 1) outer = std::max(outer, s[i] * dims[i]);
    for (std::size_t i = 0; i < dims.size(); ++i)
      if (dims[i] == 1) s[i] = outer;
  }
  return dnnl::memory::desc(dims, dnnl::memory::data_type::f32, s);
}

PostOps post_ops(const EpilogueSpec& e, const std::vector<std::int64_t>& dst_dims) {
  PostOps p;
  std::size_t next = 0;
  for (std::size_t k = 0; k < e.steps.size(); ++k) {
    switch (e.steps[k]) {
      case EpilogueSpec::Step::add: {
        const EpilogueSpec::Operand& o = e.operands[next++];
        dnnl::memory::desc d;
        if (o.bias) {  // [1, ..., C, ..., 1] in the destination's dimension order, dense
          std::vector<std::int64_t> dims(dst_dims.size(), 1);
          for (std::size_t i = 0; i < dims.size(); ++i)
            if (o.strides[i] != 0) dims[i] = dst_dims[i];
          d = f32_desc(dims, Shape(dims).strides());
        } else {
          d = f32_desc(dst_dims, o.strides);
        }
        p.ops.append_binary(dnnl::algorithm::binary_add, d);
        p.operands.push_back({DNNL_ARG_ATTR_MULTIPLE_POST_OP(int(k)) | DNNL_ARG_SRC_1, o.value, d});
        break;
      }
      case EpilogueSpec::Step::relu:
        p.ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
        break;
      case EpilogueSpec::Step::tanh:
        p.ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_tanh, 0.0f, 0.0f);
        break;
      case EpilogueSpec::Step::logistic:
        p.ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_logistic, 0.0f, 0.0f);
        break;
    }
  }
  return p;
}

}  // namespace glia::detail::cpu
