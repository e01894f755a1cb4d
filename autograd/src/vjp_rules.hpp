// Internal: how the gradient rule table is filled, one file per group of ops (as the
// op table in core). A test checks that every op has a rule or a stated reason.
#pragma once

#include <array>

#include "glia/autograd/vjp.hpp"

namespace glia::detail {

using VjpTable = std::array<VjpRule, kOpCount>;

inline void set_vjp(VjpTable& t, Op op, VjpFn fn) {
  t[static_cast<std::size_t>(op)] = {GradKind::differentiable, fn, {}};
}
inline void set_no_vjp(VjpTable& t, Op op, GradKind kind, std::string_view why) {
  t[static_cast<std::size_t>(op)] = {kind, nullptr, why};
}

void add_elementwise_vjps(VjpTable& t);
void add_structure_vjps(VjpTable& t);  // layout and indexing
void add_reduction_vjps(VjpTable& t);
void add_contraction_vjps(VjpTable& t);  // dot_general, convolution
void add_window_vjps(VjpTable& t);
void add_control_vjps(VjpTable& t);  // scan

// Zero cotangent of x's type.
Expr zeros_like(const Expr& x);
// The size of d elements with factor - 1 holes between neighbours (0 stays 0).
inline std::int64_t dilated(std::int64_t d, std::int64_t factor) {
  return d == 0 ? 0 : (d - 1) * factor + 1;
}
// The shape x has after reducing `axes` with keep_axes (reduced axes become 1).
Ints kept_dims(const Shape& x, const Ints& axes);

}  // namespace glia::detail
