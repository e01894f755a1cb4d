// Gradient rules of the layout and indexing ops: each moves the cotangent back to
// where its input's elements came from.
#include <algorithm>

#include "glia/core/attrs.hpp"
#include "vjp_rules.hpp"

namespace glia::detail {

namespace {

using Cts = std::vector<Expr>;

template <class A>
const A& attrs_of(const VjpArgs& a) {
  return std::get<A>(a.node.attrs);
}

// Sums over the axes the broadcast created or stretched, then restores x's shape.
Cts broadcast_vjp(const VjpArgs& a) {
  const auto& attrs = attrs_of<BroadcastAttrs>(a);
  const Shape& x = a.inputs[0].shape();
  std::vector<bool> keep(static_cast<std::size_t>(attrs.shape.rank()), false);
  for (std::size_t i = 0; i < attrs.dims.size(); ++i)
    if (x[static_cast<int>(i)] == attrs.shape[static_cast<int>(attrs.dims[i])])
      keep[static_cast<std::size_t>(attrs.dims[i])] = true;
  Ints axes;
  for (std::size_t i = 0; i < keep.size(); ++i)
    if (!keep[i]) axes.push_back(static_cast<std::int64_t>(i));
  Expr summed = axes.empty() ? a.cotangent : sum(a.cotangent, axes);
  return {reshape(summed, x.dims())};
}

Cts reshape_vjp(const VjpArgs& a) { return {reshape(a.cotangent, a.inputs[0].shape().dims())}; }

Cts transpose_vjp(const VjpArgs& a) {
  const Ints& perm = attrs_of<TransposeAttrs>(a).perm;
  Ints inverse(perm.size());
  for (std::size_t i = 0; i < perm.size(); ++i)
    inverse[static_cast<std::size_t>(perm[i])] = static_cast<std::int64_t>(i);
  return {transpose(a.cotangent, inverse)};
}

// Pads the cotangent back into the sliced positions (interior padding undoes strides).
Cts slice_vjp(const VjpArgs& a) {
  const auto& s = attrs_of<SliceAttrs>(a);
  const Shape& x = a.inputs[0].shape();
  const Shape& out = a.output.shape();
  Ints low, high, interior;
  for (int i = 0; i < x.rank(); ++i) {
    std::int64_t used = dilated(out[i], s.strides[static_cast<std::size_t>(i)]);
    low.push_back(s.start[static_cast<std::size_t>(i)]);
    high.push_back(x[i] - s.start[static_cast<std::size_t>(i)] - used);
    interior.push_back(out[i] > 1 ? s.strides[static_cast<std::size_t>(i)] - 1 : 0);
  }
  return {pad(a.cotangent, 0.0, low, high, interior)};
}

// The operand's cotangent is a strided slice of the output's (after restoring any
// cropped edges with zeros); the pad value collects everything else.
Cts pad_vjp(const VjpArgs& a) {
  const auto& p = attrs_of<PadAttrs>(a);
  const Shape& x = a.inputs[0].shape();
  Ints restore_low, restore_high, start, limit, strides;
  bool cropped = false;
  for (int i = 0; i < x.rank(); ++i) {
    auto k = static_cast<std::size_t>(i);
    restore_low.push_back(std::max<std::int64_t>(-p.low[k], 0));
    restore_high.push_back(std::max<std::int64_t>(-p.high[k], 0));
    cropped = cropped || p.low[k] < 0 || p.high[k] < 0;
    start.push_back(std::max<std::int64_t>(p.low[k], 0));
    limit.push_back(start.back() + dilated(x[i], p.interior[k] + 1));
    strides.push_back(p.interior[k] + 1);
  }
  Expr full = cropped ? pad(a.cotangent, 0.0, restore_low, restore_high) : a.cotangent;
  Expr ct_x = slice(full, start, limit, strides);
  Expr ct_value = sum(a.cotangent) - sum(ct_x);
  return {ct_x, ct_value};
}

Cts concatenate_vjp(const VjpArgs& a) {
  std::int64_t axis = attrs_of<AxisAttrs>(a).axis, offset = 0;
  Cts cts;
  for (const Expr& x : a.inputs) {
    std::int64_t size = x.shape()[static_cast<int>(axis)];
    cts.push_back(slice_axis(a.cotangent, offset, size, axis));
    offset += size;
  }
  return cts;
}

Cts reverse_vjp(const VjpArgs& a) { return {reverse(a.cotangent, attrs_of<AxesAttrs>(a).axes)}; }

Cts gather_vjp(const VjpArgs& a) {
  std::int64_t axis = attrs_of<AxisAttrs>(a).axis;
  return {scatter_add(zeros_like(a.inputs[0]), a.inputs[1], a.cotangent, axis), Expr()};
}

Cts scatter_add_vjp(const VjpArgs& a) {
  std::int64_t axis = attrs_of<AxisAttrs>(a).axis;
  return {a.cotangent, Expr(), take(a.cotangent, a.inputs[1], axis)};
}

}  // namespace

void add_structure_vjps(VjpTable& t) {
  set_vjp(t, Op::broadcast, &broadcast_vjp);
  set_vjp(t, Op::reshape, &reshape_vjp);
  set_vjp(t, Op::transpose, &transpose_vjp);
  set_vjp(t, Op::slice, &slice_vjp);
  set_vjp(t, Op::pad, &pad_vjp);
  set_vjp(t, Op::concatenate, &concatenate_vjp);
  set_vjp(t, Op::reverse, &reverse_vjp);
  set_vjp(t, Op::gather, &gather_vjp);
  set_vjp(t, Op::scatter_add, &scatter_add_vjp);
}

}  // namespace glia::detail
