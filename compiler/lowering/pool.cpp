// Max pooling as PoolSpecs: a window op's axes mapped onto [N, C, spatial...] (NHWC needs
// no copy: strides say where each axis is); window_max is the forward pass and
// select_and_scatter, its adjoint, the backward pass.
#include "lowering/contraction.hpp"

namespace glia::lowering {

namespace {

// Which operand axis is N, which is C (-1: a unit axis stands in), which are spatial.
struct PoolLayout {
  int n = -1, c = -1;
  std::vector<int> spatial;
};

// Null unless the windows span one to three axes besides a batch and a channel axis
// (every other axis: window 1, stride 1, no padding) without base dilation.
std::optional<PoolLayout> pool_layout(const WindowAttrs& a, int rank) {
  std::vector<int> trivial;
  for (int i = 0; i < rank; ++i) {
    auto u = static_cast<std::size_t>(i);
    if (a.base_dilation[u] != 1) return std::nullopt;
    if (a.window[u] == 1 && a.strides[u] == 1 && a.padding_low[u] == 0 && a.padding_high[u] == 0)
      trivial.push_back(i);
  }
  PoolLayout p;
  if (!trivial.empty()) p.n = trivial.front();
  if (trivial.size() >= 2) p.c = trivial.back();
  for (int i = 0; i < rank; ++i)
    if (i != p.n && i != p.c) p.spatial.push_back(i);
  if (p.spatial.empty() || p.spatial.size() > 3) return std::nullopt;
  return p;
}

// A tensor of `shape` laid out as `p`: [N, C, spatial...] dims and strides.
StridedView pool_view(ValueId value, const PoolLayout& p, const Shape& shape) {
  StridedView v;
  v.value = value;
  std::vector<std::int64_t> s = shape.strides();
  for (int axis : {p.n, p.c}) {
    v.dims.push_back(axis < 0 ? 1 : shape[axis]);
    v.strides.push_back(axis < 0 ? 0 : s[static_cast<std::size_t>(axis)]);
  }
  for (int axis : p.spatial) {
    v.dims.push_back(shape[axis]);
    v.strides.push_back(s[static_cast<std::size_t>(axis)]);
  }
  return v;
}

// The node `adjoint` (select_and_scatter over `input`) alone reads, where it is relu's
// gradient mask over the pooling's input, select(gt(input, 0), adjoint, 0), with the
// mask's comparison where only that select reads it; -1 elsewhere.
struct ReluMask {
  ValueId select = -1, compare = -1;
};
ReluMask relu_mask(const LoweringState& s, ValueId adjoint, ValueId input) {
  ReluMask m;
  if (s.is_output(adjoint) || s.readers(adjoint).size() != 1) return m;
  const ValueId sel = s.readers(adjoint)[0];
  const Node& n = s.node(sel);
  if (n.op != Op::select || !s.only_read_by(adjoint, sel) || n.inputs[1] != adjoint ||
      !is_zero_splat(s, n.inputs[2]) || s.claimed(sel))
    return m;
  const Node& gt = s.node(n.inputs[0]);
  if (gt.op != Op::gt || gt.inputs[0] != input || !is_zero_splat(s, gt.inputs[1])) return m;
  m.select = sel;
  if (s.only_read_by(n.inputs[0], sel)) m.compare = n.inputs[0];
  return m;
}

}  // namespace

std::optional<PoolKernels> pool_kernels(const LoweringState& s, ValueId id) {
  const Node& n = s.node(id);
  const Graph& g = s.graph();
  if (n.type.shape.numel() == 0 || g.type(n.inputs.back()).shape.numel() == 0) return std::nullopt;
  const auto& a = std::get<WindowAttrs>(n.attrs);
  auto layout = pool_layout(a, n.type.shape.rank());
  if (!layout) return std::nullopt;
  PoolSpec spec;
  spec.dtype = n.type.dtype;
  Kernel k;
  k.covered = {id};
  k.outputs = {id};
  for (ValueId in : n.inputs) add_unique(k.inputs, in);
  if (n.op == Op::window_max) {
    spec.kind = PoolSpec::Kind::max;
    spec.input = pool_view(n.inputs[0], *layout, g.type(n.inputs[0]).shape);
  } else {
    spec.kind = PoolSpec::Kind::max_backward;
    spec.input = pool_view(n.inputs[0], *layout, g.type(n.inputs[0]).shape);
    spec.source = pool_view(n.inputs[1], *layout, g.type(n.inputs[1]).shape);
  }
  spec.output = pool_view(id, *layout, n.type.shape);
  const StridedView& out = spec.kind == PoolSpec::Kind::max ? spec.output : spec.source;
  for (std::size_t i = 0; i < layout->spatial.size(); ++i) {
    auto ax = static_cast<std::size_t>(layout->spatial[i]);
    std::int64_t win = (a.window[ax] - 1) * a.window_dilation[ax] + 1;
    spec.window.push_back(a.window[ax]);
    spec.strides.push_back(a.strides[ax]);
    spec.dilations.push_back(a.window_dilation[ax]);
    spec.padding_low.push_back(a.padding_low[ax]);
    spec.padding_high.push_back((out.dims[i + 2] - 1) * a.strides[ax] + win -
                                spec.input.dims[i + 2] - a.padding_low[ax]);
  }
  PoolKernels kernels;
  if (const ReluMask m =
          spec.kind == PoolSpec::Kind::max_backward ? relu_mask(s, id, n.inputs[0]) : ReluMask{};
      m.select >= 0) {
    Kernel masked = k;
    PoolSpec ms = spec;
    ms.positive_input_only = true;
    ms.output.value = m.select;
    masked.covered.push_back(m.select);
    if (m.compare >= 0) masked.covered.push_back(m.compare);
    masked.outputs = {m.select};
    masked.spec = std::move(ms);
    kernels.masked = std::move(masked);
  }
  k.spec = std::move(spec);
  kernels.plain = std::move(k);
  return kernels;
}

bool lower_pooling(LoweringState& s, ValueId id) {
  std::optional<PoolKernels> k = pool_kernels(s, id);
  if (!k) return false;
  // relu's mask folded in where the target takes it, else the plain adjoint.
  if (k->masked && s.offer(std::move(*k->masked))) return true;
  return s.offer(std::move(k->plain));
}

void lower_contractions(LoweringState& state) {
  // In graph order: a kernel's epilogue and output transpose come after its node, and the
  // transposes it reads through before it, so no later kernel claims them first.
  for (std::int64_t i = 0; i < state.graph().size(); ++i) {
    auto id = static_cast<ValueId>(i);
    if (state.claimed(id)) continue;
    switch (state.node(id).op) {
      case Op::convolution:
        lower_convolution(state, id);
        break;
      case Op::window_max:
      case Op::select_and_scatter:
        lower_pooling(state, id);
        break;
      case Op::dot_general:
        lower_matmul(state, id);
        break;
      default:
        break;
    }
  }
}

}  // namespace glia::lowering
