// The `cuda` backend's generated kernels, without a GPU: a graph lowered as the backend
// lowers it, the CUDA source of every kernel it generates from the Program (fused groups
// from FusedSpecs with core's element-wise source, direct kernels), compiled by NVRTC to
// CUBIN for a GPU architecture. NVRTC needs no device, so this runs wherever the CUDA
// toolkit is. Compiled modules are cached on disk ($GLIA_CUDA_CACHE, else
// ~/.cache/glia/cuda; GLIA_CUDA_CACHE=off turns the cache off).
//   glia::cuda::KernelReport r = glia::cuda::compile_kernels(graph, "sm_90");
//   std::cout << r.kernels << " kernels, " << r.cubin_bytes << " bytes of CUBIN\n";
#pragma once

#include <cstddef>
#include <string>

#include "glia/compiler/program.hpp"

namespace glia::cuda {

// Whether this glia was built with the cuda backend's code (CMake's GLIA_CUDA found the
// toolkit).
bool built();

// The CUDA devices the driver sees; 0 where there is no driver or no GPU (or the cuda
// backend is not built). Once one is seen, Tensor::to(Device::cuda(i)) works.
int device_count();
// Why the cuda backend cannot run here ("no CUDA device: the NVIDIA driver is not
// installed (...)"), or empty when it can.
std::string unavailable();

struct KernelReport {
  Program program;              // the lowering for the cuda target
  std::string source;           // the generated CUDA source (one module for the program)
  std::size_t kernels = 0;      // generated kernel functions in it
  std::size_t cubin_bytes = 0;  // its compiled size; 0 when it has no kernels
  std::string cache;            // where the module came from: "nvrtc", "memory" or "disk"
};

// Lowers `graph` (optimized first) for the cuda target, generates its kernels and compiles
// them with NVRTC for `arch` ("sm_90": H100). glia::Error when glia was built without the
// cuda backend, NVRTC cannot be loaded, or a generated kernel does not compile (with
// NVRTC's log).
KernelReport compile_kernels(const Graph& graph, const std::string& arch = "sm_90");

// NCCL's version (2.28.9: 22809) where glia was built with nccl.h and libnccl loads (no
// GPU needed); 0 otherwise. With it, the cuda backend sums all_reduce nodes on device
// buffers; without, it stages them through the host.
int nccl_version();

}  // namespace glia::cuda
