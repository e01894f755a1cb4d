// glia::cuda::compile_kernels where glia was built without the cuda backend.
#include "glia/compiler/cuda.hpp"
#include "glia/core/error.hpp"

namespace glia::cuda {

bool built() { return false; }

int device_count() { return 0; }

int nccl_version() { return 0; }

std::string unavailable() {
  return "no CUDA device: glia was built without the cuda backend (configure with the CUDA "
         "toolkit installed and GLIA_CUDA=AUTO or ON)";
}

KernelReport compile_kernels(const Graph& graph, const std::string&) {
  throw Error(cat("compile_kernels '", graph.name(),
                  "': glia was built without the cuda backend (configure with the CUDA toolkit "
                  "installed and GLIA_CUDA=AUTO or ON)"));
}

}  // namespace glia::cuda
