// Why the rules hold (the reference kernels in core/src/kernels/rules_window.cpp):
// select_and_scatter adds each window's source value at one position of x, the window's
// first maximum, whose value is window_max's result for that window (a NaN where the
// window holds one); a window over padding or base-dilation holes only adds nothing,
// and its window_max is the lowest value. So
// - with neither padding nor base dilation, every window adds its value once: the sum
//   over the windows' axes of the scatter is the sum of the source;
// - gt(x, c) at the chosen position is gt(window_max(x), c) for the window, whatever the
//   padding, and where no position is chosen both sides give 0; positions nothing was
//   added at give 0 through the select or the scatter alike.
// Only the order of the additions changes (fewer, and no zeros), as it may in any
// backend's reduction. Axes outside A must keep their extent and index: window 1,
// stride 1, no padding, no dilation.
#include "passes/scatter_sums.hpp"

#include <algorithm>

#include "passes/constants.hpp"

namespace glia::passes {

namespace {

bool contains(const Ints& axes, std::int64_t axis) {
  return std::find(axes.begin(), axes.end(), axis) != axes.end();
}

// Whether the windows' positions over x leave the axes outside `axes` one to one, and,
// when `whole`, whether every window lies on x (no padding, no base dilation).
bool windows_fit(const WindowAttrs& w, const Ints& axes, bool whole) {
  for (std::size_t i = 0; i < w.window.size(); ++i) {
    bool padded = w.padding_low[i] != 0 || w.padding_high[i] != 0 || w.base_dilation[i] != 1;
    if (whole && padded) return false;
    if (contains(axes, static_cast<std::int64_t>(i))) continue;
    if (padded || w.window[i] != 1 || w.strides[i] != 1 || w.window_dilation[i] != 1) return false;
  }
  return true;
}

// A window_max of x over these windows already in the graph: the forward pass's pool.
std::optional<ValueId> pooled_max(const Graph& g, ValueId x, const Attrs& windows) {
  for (ValueId id = 0; id < g.size(); ++id) {
    const Node& n = g.node(id);
    if (n.op == Op::window_max && n.inputs[0] == x && attrs_equal(n.attrs, windows)) return id;
  }
  return std::nullopt;
}

// The splat's value where `id` is a numeric splat of 0.
std::optional<Tensor> zero_splat(const Graph& g, ValueId id) {
  std::optional<Tensor> s = splat_value(g, id);
  if (s && s->dtype() != DType::boolean && s->element(0) == 0) return s;
  return std::nullopt;
}

}  // namespace

std::optional<ValueId> sum_of_scatter(Graph& g, const Node& n) {
  if (n.op != Op::reduce_sum) return std::nullopt;
  const auto& reduce = std::get<ReduceAttrs>(n.attrs);
  const Node& operand = g.node(n.inputs[0]);
  if (operand.op == Op::select_and_scatter) {
    if (!windows_fit(std::get<WindowAttrs>(operand.attrs), reduce.axes, true)) return std::nullopt;
    return g.add(Op::reduce_sum, {operand.inputs[1]}, reduce);
  }
  if (operand.op != Op::select) return std::nullopt;
  std::optional<Tensor> otherwise = zero_splat(g, operand.inputs[2]);
  if (!otherwise) return std::nullopt;
  const Node& test = g.node(operand.inputs[0]);
  const Node& scatter = g.node(operand.inputs[1]);
  if (test.op != Op::gt || scatter.op != Op::select_and_scatter) return std::nullopt;
  const ValueId x = scatter.inputs[0], source = scatter.inputs[1];
  std::optional<Tensor> bound = splat_value(g, test.inputs[1]);
  if (test.inputs[0] != x || !bound) return std::nullopt;
  const auto& windows = std::get<WindowAttrs>(scatter.attrs);
  if (!windows_fit(windows, reduce.axes, false)) return std::nullopt;
  std::optional<ValueId> max = pooled_max(g, x, scatter.attrs);
  if (!max) return std::nullopt;  // pooling anew would read x as the sum does
  const TensorType& pooled = g.type(source);
  ValueId c = add_splat(g, *bound, pooled);
  ValueId kept = g.add(Op::gt, {*max, c});
  ValueId zero = add_splat(g, *otherwise, pooled);
  ValueId masked = g.add(Op::select, {kept, source, zero});
  return g.add(Op::reduce_sum, {masked}, reduce);
}

}  // namespace glia::passes
