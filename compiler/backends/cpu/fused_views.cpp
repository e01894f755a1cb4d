// Index maps of fused loads and reductions: how a fused kernel reads an operand through
// a layout op (broadcast, transpose, slice, reverse) or maps a reduction's input onto its
// result, as a View of merged axes (fused_program.hpp).
#include <algorithm>

#include "backends/cpu/fused_program.hpp"

namespace glia::detail::cpu::fused {

// A view over `shape` with these element strides: size-1 axes dropped, axes that step
// as one merged.
View make_view(const Shape& shape, const std::vector<std::int64_t>& strides, std::int64_t offset) {
  std::vector<std::int64_t> dims, steps;
  for (int d = 0; d < shape.rank(); ++d) {
    if (shape[d] == 1) continue;
    auto s = strides[std::size_t(d)];
    if (!dims.empty() && steps.back() == s * shape[d]) {
      dims.back() *= shape[d];
      steps.back() = s;
    } else {
      dims.push_back(shape[d]);
      steps.push_back(s);
    }
  }
  check(dims.size() <= std::size_t(kMaxViewRank), "fused kernel: a view of rank ", dims.size(),
        " exceeds ", kMaxViewRank);
  View v;
  v.rank = int(dims.size());
  for (std::size_t i = 0; i < dims.size(); ++i) v.dims[i] = dims[i], v.strides[i] = steps[i];
  v.offset = offset;
  v.identity = offset == 0 && (v.rank == 0 || (v.rank == 1 && steps[0] == 1));
  return v;
}

View contiguous(const Shape& shape) { return make_view(shape, shape.strides(), 0); }

// How the result of view op `n` reads its operand (element strides into the operand).
View operand_view(const Node& n, const Shape& in) {
  const Shape& out = n.type.shape;
  std::vector<std::int64_t> src = in.strides(), st(std::size_t(out.rank()), 0);
  std::int64_t offset = 0;
  if (n.op == Op::broadcast) {
    const auto& a = std::get<BroadcastAttrs>(n.attrs);
    for (std::size_t i = 0; i < a.dims.size(); ++i)
      if (in[int(i)] != 1) st[std::size_t(a.dims[i])] = src[i];
  } else if (n.op == Op::transpose) {
    const auto& a = std::get<TransposeAttrs>(n.attrs);
    for (std::size_t i = 0; i < a.perm.size(); ++i) st[i] = src[std::size_t(a.perm[i])];
  } else if (n.op == Op::slice) {
    const auto& a = std::get<SliceAttrs>(n.attrs);
    for (std::size_t d = 0; d < st.size(); ++d) {
      st[d] = src[d] * a.strides[d];
      offset += a.start[d] * src[d];
    }
  } else {  // reverse
    st = src;
    for (std::int64_t ax : std::get<AxesAttrs>(n.attrs).axes) {
      auto d = std::size_t(ax);
      offset += (in[int(ax)] - 1) * src[d];
      st[d] = -src[d];
    }
  }
  return make_view(out, st, offset);
}

// The map from a reduction input's flat index to its result's flat index.
View reduce_map(const Shape& in, const Ints& axes) {
  std::vector<std::int64_t> st(std::size_t(in.rank()), 0);
  std::int64_t step = 1;
  for (int d = in.rank() - 1; d >= 0; --d) {
    if (std::find(axes.begin(), axes.end(), d) != axes.end()) continue;
    st[std::size_t(d)] = step;
    step *= in[d];
  }
  return make_view(in, st, 0);
}

}  // namespace glia::detail::cpu::fused
