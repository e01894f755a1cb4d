// The `cpu` backend's lowering target: realisations made while lowering, and the
// fallbacks it declares.
#include "backends/cpu/cpu_target.hpp"

#include <algorithm>

#include <dnnl.hpp>

namespace glia::detail::cpu {

namespace {

// Which nodes the cpu backend expects on the reference kernel, and why; empty for any
// other node (a fallback nobody declared: the op suite's test fails on it).
std::string fallback(const Graph& g, ValueId id) {
  const Node& n = g.node(id);
  auto zero_size = [&] {
    if (n.type.shape.numel() == 0) return true;
    for (ValueId in : n.inputs)
      if (g.type(in).shape.numel() == 0) return true;
    return false;
  };
  switch (n.op) {
    case Op::dot_general:
      if (n.type.dtype != DType::f32) return "cpu multiplies f32 matrices only";
      if (!matmul_view(std::get<DotAttrs>(n.attrs), g.type(n.inputs[0]).shape,
                       g.type(n.inputs[1]).shape))
        return "zero-size, or axes that do not fold into a strided matmul";
      if (std::get<DotAttrs>(n.attrs).lhs_batch.size() + 2 > std::size_t(DNNL_MAX_NDIMS))
        return "more batch axes than oneDNN takes";
      return "";
    case Op::convolution: {
      const auto& c = std::get<ConvAttrs>(n.attrs);
      bool dilated = std::any_of(c.input_dilation.begin(), c.input_dilation.end(),
                                 [](std::int64_t d) { return d != 1; });
      bool reversed_kernel = g.node(n.inputs[1]).op == Op::reverse;
      if (n.type.dtype != DType::f32) return "cpu convolves f32 only";
      if (zero_size()) return "a zero-size convolution";
      if (n.type.shape.rank() > 5) return "oneDNN convolves at most 3 spatial dimensions";
      if (std::any_of(c.padding_low.begin(), c.padding_low.end(), [](auto p) { return p < 0; }))
        return "negative padding";
      if (c.batch_groups != 1) return "batch groups (a grouped kernel's gradient)";
      if (c.feature_groups != 1 && (dilated || reversed_kernel))
        return "the input gradient of a grouped convolution";
      if (dilated && !reversed_kernel) return "input dilation without autograd's reversed kernel";
      return "";
    }
    case Op::window_max:
    case Op::select_and_scatter: {
      if (n.type.dtype != DType::f32) return "cpu pools f32 only";
      if (zero_size()) return "a zero-size pooling";
      const auto& a = std::get<WindowAttrs>(n.attrs);
      int windowed = 0;
      for (std::size_t i = 0; i < a.window.size(); ++i) {
        if (a.base_dilation[i] != 1) return "base dilation";
        windowed += a.window[i] != 1 || a.strides[i] != 1 || a.padding_low[i] != 0 ||
                    a.padding_high[i] != 0;
      }
      if (std::max(windowed, int(a.window.size()) - 2) > 3)
        return "windows over more than three axes besides batch and channels";
      return "";
    }
    default:
      break;
  }
  // The tile executor's views hold 16 axes.
  bool wide = n.type.shape.rank() > 16;
  for (ValueId in : n.inputs) wide = wide || g.type(in).shape.rank() > 16;
  return wide ? "more than 16 axes in a fused kernel's view" : "";
}

}  // namespace

bool CpuTarget::accepts(const Graph& graph, const Kernel& kernel) const {
  auto made = realise(graph, kernel, engine_);
  if (!made) return false;
  prepared_[kernel.outputs.front()] = {kernel.spec.index(), std::move(made)};
  return true;
}

std::string CpuTarget::fallback_reason(const Graph& graph, ValueId node) const {
  return fallback(graph, node);
}

std::unique_ptr<CpuKernel> CpuTarget::take(const Graph& graph, const Kernel& kernel) {
  auto it = prepared_.find(kernel.outputs.front());
  if (it != prepared_.end() && it->second.kind == kernel.spec.index())
    return std::move(it->second.kernel);
  auto made = realise(graph, kernel, engine_);
  check(made != nullptr, "cpu backend: no realisation of ", kernel.describe(graph));
  return made;
}

}  // namespace glia::detail::cpu
