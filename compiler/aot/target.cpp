// The C target: which kernel specs the emitter writes, and which reference kernels it still
// writes as loops of their own.
#include "glia/compiler/aot.hpp"
#include "glia/core/attrs.hpp"

namespace glia::aot {

namespace {

bool plain_dtype(DType d) { return d != DType::f16 && d != DType::bf16; }

// Reference kernels with loops of their own in exported C: general f32 convolutions (a
// transposed-convolution layer's input dilation) and f32/f64 dot_generals that fold into
// no strided matmul (a bilinear layer).
bool writable(const Graph& g, const ReferenceSpec& r) {
  const DType t = g.type(r.node).dtype;
  if (r.op == Op::dot_general) return t == DType::f32 || t == DType::f64;
  return r.op == Op::convolution && t == DType::f32 &&
         std::get<ConvAttrs>(g.node(r.node).attrs).batch_groups == 1;
}

}  // namespace

bool CTarget::accepts(const Graph& graph, const Kernel& kernel) const {
  for (const auto* list : {&kernel.inputs, &kernel.outputs, &kernel.temporaries, &kernel.covered})
    for (ValueId v : *list)
      if (!plain_dtype(graph.type(v).dtype)) return false;
  return std::visit(
      [&](const auto& s) {
        using S = std::decay_t<decltype(s)>;
        if constexpr (std::is_same_v<S, MatmulSpec>) {
          return s.dtype == DType::f32;
        } else if constexpr (std::is_same_v<S, ConvSpec>) {
          return s.pass != ConvSpec::Pass::backward_weights && s.dtype == DType::f32;
        } else if constexpr (std::is_same_v<S, PoolSpec>) {
          return s.kind == PoolSpec::Kind::max && s.dtype == DType::f32;
        } else if constexpr (std::is_same_v<S, DirectSpec>) {
          return s.op != Op::scatter_add;
        } else if constexpr (std::is_same_v<S, FusedSpec>) {
          for (const auto& sweep : s.sweeps) {
            for (const auto& in : sweep.code)
              if (in.code == FusedSpec::Code::random) return false;
            for (const auto& r : sweep.reductions)
              if (r.dtype == DType::boolean) return false;
          }
          return true;
        } else {
          return false;
        }
      },
      kernel.spec);
}

std::string CTarget::fallback_reason(const Graph& graph, ValueId node) const {
  const Node& n = graph.node(node);
  if (!plain_dtype(n.type.dtype)) return "exported C computes no 16-bit floats";
  for (ValueId in : n.inputs)
    if (!plain_dtype(graph.type(in).dtype)) return "exported C computes no 16-bit floats";
  switch (n.op) {
    case Op::random_bits:
      return "random bits (a stochastic layer in train mode)";
    case Op::all_reduce:
      return "a collective across processes (a training step's gradient sum)";
    case Op::scatter_add:
    case Op::select_and_scatter:
      return "a gradient op, which predict does not need";
    case Op::convolution:
      return n.type.dtype == DType::f32 ? "a convolution gradient form" : "a non-f32 convolution";
    case Op::dot_general:
      return n.type.dtype == DType::f32 ? "axes that do not fold into a strided matmul"
                                        : "a non-f32 matrix product";
    case Op::window_max:
      return "a non-f32 max pool";
    case Op::scan:
      return "a loop (scan): exported C has no loops over a body function yet";
    default:
      return "no C kernel for this op";
  }
}

const ReferenceSpec* unwritable(const Program& program) {
  for (const Kernel& k : program.kernels)
    if (const auto* r = std::get_if<ReferenceSpec>(&k.spec);
        r != nullptr && !writable(program.graph, *r))
      return r;
  return nullptr;
}

}  // namespace glia::aot
