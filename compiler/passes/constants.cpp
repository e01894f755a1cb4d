// Splats and constants behind broadcasts, as the simplifier's folding sees them.
#include "passes/constants.hpp"

#include <vector>

namespace glia::passes {

std::optional<Tensor> splat_value(const Graph& g, ValueId id) {
  const Node& n = g.node(id);
  switch (n.op) {
    case Op::constant: {
      const Tensor& v = std::get<ConstantAttrs>(n.attrs).value;
      if (v.numel() != 1) return std::nullopt;
      return v.reshape(Shape{});
    }
    case Op::broadcast:
    case Op::reshape:
      // Both keep every element's value; a one-element operand stays one value.
      return splat_value(g, n.inputs[0]);
    default:
      return std::nullopt;
  }
}

bool constant_valued(const Graph& g, ValueId id) {
  const Node& n = g.node(id);
  if (n.op == Op::constant) return true;
  return n.op == Op::broadcast && constant_valued(g, n.inputs[0]);
}

std::optional<Tensor> materialize(const Graph& g, ValueId id, std::int64_t limit) {
  const Node& n = g.node(id);
  if (n.op == Op::constant) return std::get<ConstantAttrs>(n.attrs).value;
  if (n.op != Op::broadcast || n.type.shape.numel() > limit) return std::nullopt;
  std::optional<Tensor> operand = materialize(g, n.inputs[0], limit);
  if (!operand) return std::nullopt;
  std::vector<Tensor> args{*operand};
  return op_info(Op::broadcast).kernel(args, n.attrs, n.type);
}

ValueId add_splat(Graph& g, const Tensor& scalar, const TensorType& type) {
  ValueId c = g.add(Op::constant, {}, ConstantAttrs{scalar});
  if (type.shape.rank() == 0) return c;
  return g.add(Op::broadcast, {c}, BroadcastAttrs{type.shape, {}});
}

}  // namespace glia::passes
