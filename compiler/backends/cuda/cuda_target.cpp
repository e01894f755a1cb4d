#include "backends/cuda/cuda_target.hpp"

namespace glia::detail::cuda {

bool CudaTarget::accepts(const Graph&, const Kernel& kernel) const {
  return std::holds_alternative<FusedSpec>(kernel.spec) ||
         std::holds_alternative<DirectSpec>(kernel.spec);
}

std::string CudaTarget::fallback_reason(const Graph& graph, ValueId node) const {
  switch (graph.node(node).op) {
    case Op::dot_general:
      return "matmul: the cuBLASLt realisation is not built yet";
    case Op::convolution:
      return "convolution: the cuDNN realisation is not built yet";
    case Op::window_max:
    case Op::select_and_scatter:
      return "max pooling: its generated kernel is not built yet";
    default:
      return "";
  }
}

}  // namespace glia::detail::cuda
