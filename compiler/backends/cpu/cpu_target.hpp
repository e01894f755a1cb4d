// Internal: the `cpu` backend's LoweringTarget — it accepts a spec when it can realise it,
// keeping the realisation for the executable (oneDNN primitives are made once), and
// declares which nodes it expects on the reference kernel.
#pragma once

#include <memory>
#include <string>
#include <unordered_map>

#include "backends/cpu/realise.hpp"
#include "glia/compiler/lowering.hpp"

namespace glia::detail::cpu {

class CpuTarget final : public LoweringTarget {
 public:
  explicit CpuTarget(const dnnl::engine& engine) : engine_(engine) {}
  std::string_view name() const override { return "cpu"; }
  bool accepts(const Graph& graph, const Kernel& kernel) const override;
  std::string fallback_reason(const Graph& graph, ValueId node) const override;
  // The realisation made while lowering `kernel`, or a new one (reference kernels).
  std::unique_ptr<CpuKernel> take(const Graph& graph, const Kernel& kernel);

 private:
  const dnnl::engine& engine_;
  // By first output, with the spec's kind (Spec's index): a kernel accepted and then not
  // kept (one of a fused pair whose other the target declined) is not taken for another
  // kind of kernel writing the same value.
  struct Prepared {
    std::size_t kind = 0;
    std::unique_ptr<CpuKernel> kernel;
  };
  mutable std::unordered_map<ValueId, Prepared> prepared_;
};

}  // namespace glia::detail::cpu
