// Shape and layout functions of the tracing API.
#include "glia/core/expr.hpp"

namespace glia {

Expr reshape(const Expr& x, const Ints& shape) {
  check(x.defined(), "reshape: the operand is an undefined Expr");
  Ints dims = shape;
  int unknown = -1;
  std::int64_t known = 1;
  for (std::size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] == -1) {
      check(unknown < 0, "reshape: at most one dimension may be -1, got ",
            Shape(Ints{}).to_string());
      unknown = static_cast<int>(i);
    } else {
      check(dims[i] >= 0, "reshape: dimension ", dims[i], " is negative");
      known *= dims[i];
    }
  }
  if (unknown >= 0) {
    check(known > 0 && x.shape().numel() % known == 0, "reshape: cannot reshape ",
          x.type().to_string(), " to a shape with ", known, " elements times -1");
    dims[static_cast<std::size_t>(unknown)] = x.shape().numel() / known;
  }
  Shape target(dims);
  if (target == x.shape()) return x;
  return Expr(x.graph(), x.graph()->add(Op::reshape, {x.id()}, ReshapeAttrs{target}));
}

}  // namespace glia
