// Internal to the `cuda` backend: its LoweringTarget. It takes the specs whose kernels it
// generates for NVRTC (fused groups and direct kernels) and declares every node that is
// left on the reference kernel. The cuBLASLt and cuDNN realisations of contractions
// join it with the executable; until then they are declared reference fallbacks.
#pragma once

#include "glia/compiler/lowering.hpp"

namespace glia::detail::cuda {

class CudaTarget final : public LoweringTarget {
 public:
  std::string_view name() const override { return "cuda"; }
  bool accepts(const Graph& graph, const Kernel& kernel) const override;
  std::string fallback_reason(const Graph& graph, ValueId node) const override;
};

}  // namespace glia::detail::cuda
