// Gradient rules of the window reductions (pooling). window_sum's adjoint spreads each
// output's cotangent back over its window: a window sum over the cotangent padded
// with the strides as interior holes. window_max's is select_and_scatter, whose own
// rule (for second derivatives of max pooling) reads the cotangent back at each
// window's selected element.
#include <limits>

#include "glia/core/attrs.hpp"
#include "vjp_rules.hpp"

namespace glia::detail {

namespace {

using Cts = std::vector<Expr>;

Cts window_sum_vjp(const VjpArgs& a) {
  const auto& w = std::get<WindowAttrs>(a.node.attrs);
  const Shape& x = a.inputs[0].shape();
  const Shape& out = a.output.shape();
  Ints low, high, interior;
  for (int i = 0; i < x.rank(); ++i) {
    auto k = static_cast<std::size_t>(i);
    std::int64_t in = dilated(x[i], w.base_dilation[k]);
    std::int64_t win = dilated(w.window[k], w.window_dilation[k]);
    std::int64_t before = win - w.padding_low[k] - 1;
    low.push_back(before);
    high.push_back(in + win - 1 - dilated(out[i], w.strides[k]) - before);
    interior.push_back(w.strides[k] - 1);
  }
  Expr padded = pad(a.cotangent, 0.0, low, high, interior);
  WindowOptions opts;
  opts.strides = w.base_dilation;
  opts.window_dilation = w.window_dilation;
  return {window_sum(padded, w.window, opts)};
}

Cts window_max_vjp(const VjpArgs& a) {
  const auto& w = std::get<WindowAttrs>(a.node.attrs);
  WindowOptions opts{w.strides, w.padding_low, w.padding_high, w.base_dilation, w.window_dilation};
  return {select_and_scatter(a.inputs[0], a.cotangent, w.window, opts)};
}

// Every window's elements along a new last axis, [windows..., K] for a window of K
// elements in row-major order; padding and base-dilation holes read `fill`. Slice k is
// window element k of every window: a strided slice of the padded, dilated operand.
Expr window_elements(const Expr& x, double fill, const WindowAttrs& w, const Shape& windows) {
  Ints interior;
  for (std::int64_t b : w.base_dilation) interior.push_back(b - 1);
  Expr padded = pad(x, fill, w.padding_low, w.padding_high, interior);
  const Shape window(w.window);
  const std::vector<std::int64_t> steps = window.strides();  // row-major, in elements
  std::vector<Expr> elements;
  for (std::int64_t k = 0; k < window.numel(); ++k) {
    Ints start, limit;
    for (std::size_t i = 0; i < steps.size(); ++i) {
      start.push_back(k / steps[i] % w.window[i] * w.window_dilation[i]);
      limit.push_back(start.back() + dilated(windows[static_cast<int>(i)], w.strides[i]));
    }
    elements.push_back(slice(padded, start, limit, w.strides));
  }
  return stack(elements, -1);
}

// select_and_scatter(x, s) is linear in s: s[i] lands on window i's first maximum of x
// (a NaN the largest; padding never). Its transpose reads the cotangent there. The
// selection is piecewise constant in x: x gets no cotangent (zero almost everywhere).
Cts select_and_scatter_vjp(const VjpArgs& a) {
  const auto& w = std::get<WindowAttrs>(a.node.attrs);
  const Expr& x = a.inputs[0];
  const Shape& windows = a.inputs[1].shape();
  const auto axis = static_cast<std::int64_t>(windows.rank());
  const double inf = std::numeric_limits<double>::infinity();
  Expr xs = window_elements(x, -inf, w, windows);  // [windows..., K]
  Expr cts = window_elements(a.cotangent, 0.0, w, windows);
  // argmax takes the first maximum, a NaN first, as the kernel does; padding is -inf and
  // so never wins, except where the window's largest element is -inf: then the kernel
  // takes the window's first element inside the operand (none: padding's zero cotangent).
  Expr inside = window_elements(ones(x.shape(), x.dtype()), 0.0, w, windows);
  Expr chosen = select(equal(reduce_max(xs, {axis}, true), -inf), argmax(inside, axis, true),
                       argmax(xs, axis, true));  // [windows..., 1]
  Expr picked = equal(iota(xs.shape(), static_cast<int>(axis)), chosen);
  return {Expr(), sum(select(picked, cts, 0.0), {axis})};
}

}  // namespace

void add_window_vjps(VjpTable& t) {
  set_vjp(t, Op::window_sum, &window_sum_vjp);
  set_vjp(t, Op::window_max, &window_max_vjp);
  set_vjp(t, Op::select_and_scatter, &select_and_scatter_vjp);
}

}  // namespace glia::detail
