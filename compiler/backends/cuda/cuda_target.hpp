// Internal to the `cuda` backend: its LoweringTarget. It takes matmuls cuBLASLt realises
// (with the epilogues it has), convolutions cuDNN realises, and the specs whose kernels it
// generates for NVRTC (fused groups, direct kernels, max pooling); it declares why every
// node left on the reference kernel is there. Its decisions need no device.
#pragma once

#include "glia/compiler/lowering.hpp"

namespace glia::detail::cuda {

class CudaTarget final : public LoweringTarget {
 public:
  std::string_view name() const override { return "cuda"; }
  bool accepts(const Graph& graph, const Kernel& kernel) const override;
  std::string fallback_reason(const Graph& graph, ValueId node) const override;
  // A GPU's special-function units compute an exp for less than a store and a reload of
  // the element through device memory: recomputed (a choice not yet measured on a GPU).
  bool stores_costly_values() const override { return false; }
};

}  // namespace glia::detail::cuda
