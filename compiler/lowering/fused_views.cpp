// Index maps of fused loads and the extents of fused reductions.
#include "lowering/fused_views.hpp"

#include <algorithm>

namespace glia {

bool FusedSpec::View::identity() const {
  return offset == 0 && (dims.empty() || (dims.size() == 1 && strides[0] == 1));
}

bool FusedSpec::View::scalar() const {
  return !identity() &&
         std::all_of(strides.begin(), strides.end(), [](std::int64_t s) { return s == 0; });
}

namespace lowering {

FusedSpec::View make_view(const Shape& shape, const std::vector<std::int64_t>& strides,
                          std::int64_t offset) {
  FusedSpec::View v;
  for (int d = 0; d < shape.rank(); ++d) {
    if (shape[d] == 1) continue;
    auto s = strides[std::size_t(d)];
    if (!v.dims.empty() && v.strides.back() == s * shape[d]) {
      v.dims.back() *= shape[d];
      v.strides.back() = s;
    } else {
      v.dims.push_back(shape[d]);
      v.strides.push_back(s);
    }
  }
  v.offset = offset;
  return v;
}

FusedSpec::View contiguous_view(const Shape& shape) { return make_view(shape, shape.strides(), 0); }

FusedSpec::View operand_view(const Node& n, const Shape& in) {
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
  } else {
    check(n.op == Op::reverse, "fused kernel: ", op_name(n.op), " is not a view op");
    st = src;
    for (std::int64_t ax : std::get<AxesAttrs>(n.attrs).axes) {
      auto d = std::size_t(ax);
      offset += (in[int(ax)] - 1) * src[d];
      st[d] = -src[d];
    }
  }
  return make_view(out, st, offset);
}

std::vector<FusedSpec::Extent> reduce_extents(const Shape& in, const Ints& axes) {
  std::vector<FusedSpec::Extent> extents;
  for (int d = 0; d < in.rank(); ++d) {
    if (in[d] == 1) continue;
    bool reduced = std::find(axes.begin(), axes.end(), d) != axes.end();
    if (!extents.empty() && extents.back().reduced == reduced)
      extents.back().size *= in[d];
    else
      extents.push_back({in[d], reduced});
  }
  return extents;
}

}  // namespace lowering
}  // namespace glia
