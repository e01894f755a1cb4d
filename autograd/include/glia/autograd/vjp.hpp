// The gradient rule table: one entry per primitive of the op table, saying whether the
// op is differentiable and, if so, its vector-Jacobian product written with Expr ops.
//   const glia::VjpRule& r = glia::vjp_rule(glia::Op::exp);  // r.kind == differentiable
#pragma once

#include <string_view>
#include <vector>

#include "glia/core/expr.hpp"

namespace glia {

// What reverse mode does at a node.
enum class GradKind : std::uint8_t {
  differentiable,      // the rule gives each input's cotangent
  zero,                // piecewise constant (floor, sign, stop_gradient ...): zero gradient
  non_differentiable,  // integer or boolean results, indices, random bits: no gradient flows
  leaf                 // parameters and constants: where gradients stop
};

struct VjpArgs {
  const Node& node;
  std::vector<Expr> inputs;  // the node's inputs, in order
  Expr output;               // the node's own value
  Expr cotangent;            // d(loss)/d(output), same type as output
};
// Returns one cotangent per input; an undefined Expr means "no gradient to that input".
using VjpFn = std::vector<Expr> (*)(const VjpArgs& args);

struct VjpRule {
  GradKind kind = GradKind::non_differentiable;
  VjpFn vjp = nullptr;
  std::string_view why;  // for zero / non_differentiable: one line of explanation
};

const VjpRule& vjp_rule(Op op);
std::string_view grad_kind_name(GradKind kind);

}  // namespace glia
