// Direct kernels: the layer ops that neither a library call nor a fused sweep suits, each
// one kernel of its own (window_sum for average pooling, gather and scatter_add for
// embeddings, pad, concatenate, argmax/argmin for accuracy metrics).
#include "lowering/state.hpp"

namespace glia::lowering {

namespace {

bool direct_op(const Node& n) {
  switch (n.op) {
    case Op::window_sum:
    case Op::scatter_add:
      return n.type.dtype != DType::boolean;
    case Op::gather:
    case Op::pad:
    case Op::concatenate:
    case Op::argmax:
    case Op::argmin:
      return true;
    default:
      return false;
  }
}

}  // namespace

void lower_direct(LoweringState& state) {
  const Graph& g = state.graph();
  for (std::int64_t i = 0; i < g.size(); ++i) {
    auto id = static_cast<ValueId>(i);
    const Node& n = state.node(id);
    if (state.claimed(id) || !direct_op(n)) continue;
    DirectSpec spec;
    spec.op = n.op;
    spec.node = id;
    spec.operands = n.inputs;
    if (n.op == Op::gather || n.op == Op::scatter_add || n.op == Op::argmax || n.op == Op::argmin) {
      // Around the axis of the operand: gather's table, scatter_add's target, arg*'s input.
      const Shape& x = n.op == Op::scatter_add ? n.type.shape : g.type(n.inputs[0]).shape;
      spec.split = split_at(x, n.op == Op::argmax || n.op == Op::argmin
                                   ? std::get<ArgReduceAttrs>(n.attrs).axis
                                   : std::get<AxisAttrs>(n.attrs).axis);
    }
    Kernel k;
    for (ValueId in : n.inputs) add_unique(k.inputs, in);
    k.outputs = {id};
    k.covered = {id};
    k.spec = std::move(spec);
    state.offer(std::move(k));
  }
}

}  // namespace glia::lowering
