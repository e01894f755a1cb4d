// Internal to the `cuda` backend: the generated kernels of a whole Program, by kernel
// position, and the one NVRTC program (module) that holds them all.
#pragma once

#include <string>
#include <vector>

#include "backends/cuda/kernel_source.hpp"

namespace glia::detail::cuda {

struct ProgramKernels {
  std::vector<std::vector<GeneratedKernel>> by_kernel;  // by the Program's kernel position
  std::string source;                                   // every kernel, for NVRTC
  std::size_t count = 0;                                // generated kernels in all
};

ProgramKernels generate(const Program& program);

}  // namespace glia::detail::cuda
