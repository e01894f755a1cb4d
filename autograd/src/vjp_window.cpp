// Gradient rules of the window reductions (pooling). window_sum's adjoint spreads each
// output's cotangent back over its window: a window sum over the cotangent padded
// with the strides as interior holes. window_max's is select_and_scatter.
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

}  // namespace

void add_window_vjps(VjpTable& t) {
  set_vjp(t, Op::window_sum, &window_sum_vjp);
  set_vjp(t, Op::window_max, &window_max_vjp);
}

}  // namespace glia::detail
