// The window functions of the tracing API (pooling): fills in WindowOptions' defaults
// (strides equal to the window, no padding, no dilation) and emits window_sum,
// window_max and select_and_scatter; the ops' inference checks everything else.
#include "glia/core/expr.hpp"

namespace glia {

namespace {

Graph& graph_of(const Expr& x, std::string_view what) {
  check(x.defined(), what, ": the operand is an undefined Expr");
  return *x.graph();
}

WindowAttrs window_attrs(const Expr& x, const Ints& window, const WindowOptions& o) {
  auto rank = static_cast<std::size_t>(x.rank());
  auto or_default = [&](const Ints& v, std::int64_t value) {
    return v.empty() ? Ints(rank, value) : v;
  };
  WindowAttrs a;
  a.window = window;
  a.strides = o.strides.empty() ? window : o.strides;
  a.padding_low = or_default(o.padding_low, 0);
  a.padding_high = or_default(o.padding_high, 0);
  a.base_dilation = or_default(o.base_dilation, 1);
  a.window_dilation = or_default(o.window_dilation, 1);
  return a;
}

Expr window_reduce(Op op, const Expr& x, const Ints& window, const WindowOptions& options) {
  Graph& g = graph_of(x, op_name(op));
  return Expr(&g, g.add(op, {x.id()}, window_attrs(x, window, options)));
}

}  // namespace

Expr window_sum(const Expr& x, const Ints& window, const WindowOptions& options) {
  return window_reduce(Op::window_sum, x, window, options);
}

Expr window_max(const Expr& x, const Ints& window, const WindowOptions& options) {
  return window_reduce(Op::window_max, x, window, options);
}

Expr select_and_scatter(const Expr& x, const Expr& source, const Ints& window,
                        const WindowOptions& options) {
  Graph& g = graph_of(x, "select_and_scatter");
  graph_of(source, "select_and_scatter");
  check(source.graph() == &g, "select_and_scatter: operands come from different traces");
  // The source takes x's dtype: x is never rounded (which could move its maxima), and
  // the result, x's gradient in max pooling, has x's dtype.
  Expr src = cast(source, x.dtype());
  return Expr(&g,
              g.add(Op::select_and_scatter, {x.id(), src.id()}, window_attrs(x, window, options)));
}

}  // namespace glia
