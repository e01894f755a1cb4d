// glia::cuda::compile_kernels: the cuda backend's kernel generation and NVRTC compile,
// runnable without a GPU.
#include "backends/cuda/cuda_target.hpp"
#include "backends/cuda/device.hpp"
#include "backends/cuda/generate.hpp"
#include "backends/cuda/nvrtc.hpp"
#include "glia/compiler/cuda.hpp"
#include "glia/compiler/passes.hpp"

namespace glia::cuda {

bool built() { return true; }

int device_count() {
  if (!detail::cuda::unavailable_reason().empty()) return 0;
  detail::cuda::register_allocators();
  return detail::cuda::device_count();
}

std::string unavailable() { return detail::cuda::unavailable_reason(); }

#ifndef GLIA_HAVE_NCCL
int nccl_version() { return 0; }  // built without nccl.h (nccl.cpp otherwise)
#endif

KernelReport compile_kernels(const Graph& graph, const std::string& arch) {
  verify(graph);
  KernelReport report;
  report.program = lower(optimize(graph), detail::cuda::CudaTarget());
  detail::cuda::ProgramKernels made = detail::cuda::generate(report.program);
  report.source = std::move(made.source);
  report.kernels = made.count;
  if (made.count == 0) return report;
  detail::cuda::CacheHit hit = detail::cuda::CacheHit::none;
  report.cubin_bytes = detail::cuda::compile_cubin(report.source, arch, &hit).size();
  report.cache = hit == detail::cuda::CacheHit::memory ? "memory"
                 : hit == detail::cuda::CacheHit::disk ? "disk"
                                                       : "nvrtc";
  return report;
}

}  // namespace glia::cuda
