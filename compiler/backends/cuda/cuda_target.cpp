#include "backends/cuda/cuda_target.hpp"

#include "backends/cuda/cuda_kernel.hpp"
#include "backends/cuda/kernel_source.hpp"

namespace glia::detail::cuda {

bool CudaTarget::accepts(const Graph& graph, const Kernel& kernel) const {
  if (std::holds_alternative<MatmulSpec>(kernel.spec))
    return cublaslt_declines(graph, kernel).empty();
  if (std::holds_alternative<ConvSpec>(kernel.spec)) return cudnn_declines(graph, kernel).empty();
  if (const auto* pool = std::get_if<PoolSpec>(&kernel.spec))
    return pool_declines(graph, *pool).empty();
#ifdef GLIA_HAVE_NCCL
  if (std::holds_alternative<CollectiveSpec>(kernel.spec)) return true;  // NCCL, in place
#endif
  return std::holds_alternative<FusedSpec>(kernel.spec) ||
         std::holds_alternative<DirectSpec>(kernel.spec);
}

std::string CudaTarget::fallback_reason(const Graph& graph, ValueId node) const {
  switch (graph.node(node).op) {
    case Op::dot_general:
      return matmul_fallback(graph, node);
    case Op::convolution:
      return convolution_fallback(graph, node);
    case Op::window_max:
    case Op::select_and_scatter:
      return pool_fallback(graph, node);
    case Op::all_reduce:
      return "all_reduce on host buffers (the communicator's transport, MPI): staged through "
             "the host, this build has no NCCL";
    case Op::scan:
      return "loops run on the reference interpreter on cuda: their bodies are not compiled "
             "for the GPU yet";
    default:
      return "";
  }
}

}  // namespace glia::detail::cuda
