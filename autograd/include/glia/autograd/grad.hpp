// Reverse-mode automatic differentiation as a transform on the graph being traced:
// gradients() appends the backward pass as ordinary IR nodes, so it composes with
// itself (higher order), with jit, and with the compiler's fusion.
//   auto df = glia::grad([](const glia::Expr& x) { return glia::sum(x * x); });
//   glia::Expr g = df(x);  // 2x, inside a trace
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "glia/core/expr.hpp"

namespace glia {

// d(y)/d(x_i) for each x_i, appended to y's graph. y must be a floating-point scalar;
// each x_i a floating-point traced value of the same graph (not a constant). An x that
// y does not depend on gets zeros. Only nodes on a path from some x to y are
// differentiated.
std::vector<Expr> gradients(const Expr& y, const std::vector<Expr>& xs);

// The identity whose gradient is zero.
Expr stop_grad(const Expr& x);

// The value x, whose gradient is given by `vjp` instead of x's own rule: on the
// backward pass, vjp(cotangent of x) returns one cotangent per entry of `inputs`
// (an undefined Expr for none), and nothing flows into x's own computation.
using CustomVjp = std::function<std::vector<Expr>(const Expr& cotangent)>;
Expr custom_grad(const Expr& x, const std::vector<Expr>& inputs, CustomVjp vjp);

}  // namespace glia
