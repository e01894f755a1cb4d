#include "backends/cuda/generate.hpp"

#include "glia/core/error.hpp"

namespace glia::detail::cuda {

ProgramKernels generate(const Program& program) {
  ProgramKernels out;
  std::vector<GeneratedKernel> all;
  for (std::size_t i = 0; i < program.kernels.size(); ++i) {
    const Kernel& k = program.kernels[i];
    const std::string stem = cat("glia_k", i);
    std::vector<GeneratedKernel> made;
    if (const auto* fused = std::get_if<FusedSpec>(&k.spec))
      made = fused_kernels(program.graph, *fused, stem);
    else if (const auto* direct = std::get_if<DirectSpec>(&k.spec))
      made = direct_kernels(program.graph, *direct, stem);
    else if (const auto* pool = std::get_if<PoolSpec>(&k.spec))
      made = pool_kernels(program.graph, *pool, stem);
    all.insert(all.end(), made.begin(), made.end());
    out.count += made.size();
    out.by_kernel.push_back(std::move(made));
  }
  out.source = kernel_program(all);
  return out;
}

}  // namespace glia::detail::cuda
