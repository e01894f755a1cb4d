// Convolution nodes as ConvSpecs: which pass a node is (forward; the input gradient — a
// convolution of the output gradient with the reversed, transposed kernel; the kernel
// gradient — batch and feature roles swapped), its operands as strided views through
// transposes (NHWC data and HWIO kernels need no copies), and the epilogue.
#include <algorithm>
#include <numeric>

#include "lowering/contraction.hpp"

namespace glia {

std::int64_t ConvSpec::multiply_adds() const {
  std::int64_t n = 1;
  for (std::int64_t d : dst.dims) n *= d;
  // weights: [O, C, window...], or [G, O/G, C/G, window...]
  for (std::size_t i = groups > 1 ? 2 : 1; i < weights.dims.size(); ++i) n *= weights.dims[i];
  return n;
}

}  // namespace glia

namespace glia::lowering {

namespace {

bool all_equal(const Ints& v, std::int64_t x) {
  return std::all_of(v.begin(), v.end(), [x](std::int64_t e) { return e == x; });
}

std::int64_t window(std::int64_t k, std::int64_t dilation) { return (k - 1) * dilation + 1; }

// High padding that makes the output size formula give `out` exactly.
std::int64_t pad_high(std::int64_t in, std::int64_t out, std::int64_t win, std::int64_t stride,
                      std::int64_t pad_low) {
  return (out - 1) * stride + win - in - pad_low;
}

std::int64_t spatial_numel(const std::vector<std::int64_t>& dims) {
  return std::accumulate(dims.begin() + 2, dims.end(), std::int64_t{1}, std::multiplies<>());
}

// A ConvSpec whose written operand is still to be filled, and the nodes it covers.
struct Plan {
  ConvSpec spec;
  std::vector<ValueId> covered;
};

void take(Plan& p, StridedView& slot, WalkedView w) {
  slot = std::move(w.view);
  p.covered.insert(p.covered.end(), w.walked.begin(), w.walked.end());
}

// The input gradient: conv(ct, reverse(kernel with O and I swapped)) at unit strides.
std::optional<Plan> backward_data_plan(const LoweringState& s, ValueId id) {
  const Node& n = s.node(id);
  const auto& c = std::get<ConvAttrs>(n.attrs);
  const Node& rev = s.node(n.inputs[1]);
  const int rank = n.type.shape.rank();
  if (rev.op != Op::reverse || c.feature_groups != 1 || c.batch_groups != 1 ||
      !all_equal(c.strides, 1))
    return std::nullopt;
  // Every spatial axis reversed (the tracer leaves out axes of size 1), nothing else.
  const Ints& axes = std::get<AxesAttrs>(rev.attrs).axes;
  for (int i = 0; i < rank; ++i) {
    bool reversed = std::find(axes.begin(), axes.end(), i) != axes.end();
    if (reversed ? i < 2 : i >= 2 && rev.type.shape[i] != 1) return std::nullopt;
  }
  Plan p;
  ConvSpec& spec = p.spec;
  spec.pass = ConvSpec::Pass::backward_data;
  bool own_reverse = s.only_read_by(n.inputs[1], id);
  WalkedView w = view_through_transposes(s, rev.inputs[0], own_reverse ? n.inputs[1] : -1);
  w.view = swap_leading(std::move(w.view));
  take(p, spec.weights, std::move(w));
  if (own_reverse) p.covered.push_back(n.inputs[1]);
  spec.src.dims = n.type.shape.dims();  // the result
  take(p, spec.dst, view_through_transposes(s, n.inputs[0], id));
  for (std::size_t i = 0; i + 2 < std::size_t(rank); ++i) {
    std::int64_t win = window(spec.weights.dims[i + 2], c.kernel_dilation[i]);
    std::int64_t low = win - 1 - c.padding_low[i];
    if (low < 0) return std::nullopt;
    spec.strides.push_back(c.input_dilation[i]);
    spec.dilations.push_back(c.kernel_dilation[i]);
    spec.padding_low.push_back(low);
    spec.padding_high.push_back(
        pad_high(spec.src.dims[i + 2], spec.dst.dims[i + 2], win, c.input_dilation[i], low));
  }
  return p;
}

// The kernel gradient: conv(x with N and C swapped, ct with N and O swapped), whose result
// (the kernel's size) is smaller than the "kernel" operand it reads.
std::optional<Plan> backward_weights_plan(const LoweringState& s, ValueId id) {
  const Node& n = s.node(id);
  const auto& c = std::get<ConvAttrs>(n.attrs);
  if (c.feature_groups != 1 || c.batch_groups != 1 || !all_equal(c.input_dilation, 1) ||
      spatial_numel(n.type.shape.dims()) >= spatial_numel(s.graph().type(n.inputs[1]).shape.dims()))
    return std::nullopt;
  Plan p;
  ConvSpec& spec = p.spec;
  spec.pass = ConvSpec::Pass::backward_weights;
  WalkedView src = view_through_transposes(s, n.inputs[0], id);
  src.view = swap_leading(std::move(src.view));
  take(p, spec.src, std::move(src));
  WalkedView dst = view_through_transposes(s, n.inputs[1], id);
  dst.view = swap_leading(std::move(dst.view));
  take(p, spec.dst, std::move(dst));
  spec.weights.dims = n.type.shape.dims();
  std::swap(spec.weights.dims[0], spec.weights.dims[1]);
  for (std::size_t i = 0; i + 2 < spec.weights.dims.size(); ++i) {
    std::int64_t win = window(spec.weights.dims[i + 2], c.strides[i]);
    spec.strides.push_back(c.kernel_dilation[i]);
    spec.dilations.push_back(c.strides[i]);
    spec.padding_low.push_back(c.padding_low[i]);
    spec.padding_high.push_back(pad_high(spec.src.dims[i + 2], spec.dst.dims[i + 2], win,
                                         c.kernel_dilation[i], c.padding_low[i]));
  }
  return p;
}

std::optional<Plan> forward_plan(const LoweringState& s, ValueId id) {
  const Node& n = s.node(id);
  const auto& c = std::get<ConvAttrs>(n.attrs);
  if (c.batch_groups != 1 || !all_equal(c.input_dilation, 1)) return std::nullopt;
  Plan p;
  ConvSpec& spec = p.spec;
  take(p, spec.src, view_through_transposes(s, n.inputs[0], id));
  take(p, spec.weights, view_through_transposes(s, n.inputs[1], id));
  spec.dst.dims = n.type.shape.dims();
  if (std::int64_t g = c.feature_groups; g > 1) {  // [O, ...] -> [G, O/G, ...]
    auto& w = spec.weights;
    w.dims[0] /= g;
    w.dims.insert(w.dims.begin(), g);
    w.strides.insert(w.strides.begin(), w.strides[0] * w.dims[1]);
    spec.groups = g;
  }
  std::size_t k0 = spec.weights.dims.size() - (spec.dst.dims.size() - 2);
  for (std::size_t i = 0; i + 2 < spec.dst.dims.size(); ++i) {
    std::int64_t win = window(spec.weights.dims[k0 + i], c.kernel_dilation[i]);
    spec.strides.push_back(c.strides[i]);
    spec.dilations.push_back(c.kernel_dilation[i]);
    spec.padding_low.push_back(c.padding_low[i]);
    spec.padding_high.push_back(
        pad_high(spec.src.dims[i + 2], spec.dst.dims[i + 2], win, c.strides[i], c.padding_low[i]));
  }
  return p;
}

}  // namespace

std::optional<ConvKernels> conv_kernels(const LoweringState& s, ValueId id) {
  const Node& n = s.node(id);
  const Graph& g = s.graph();
  const auto& c = std::get<ConvAttrs>(n.attrs);
  const int rank = n.type.shape.rank();
  if (rank < 3 || n.type.shape.numel() == 0 || g.type(n.inputs[0]).shape.numel() == 0 ||
      g.type(n.inputs[1]).shape.numel() == 0 ||
      std::any_of(c.padding_low.begin(), c.padding_low.end(), [](auto p) { return p < 0; }))
    return std::nullopt;
  std::optional<Plan> plan = backward_data_plan(s, id);
  if (!plan) plan = backward_weights_plan(s, id);
  if (!plan) plan = forward_plan(s, id);
  if (!plan) return std::nullopt;
  plan->spec.dtype = n.type.dtype;

  // The result, written through a transpose that only reads it (NCHW -> NHWC).
  ValueId out = id;
  std::vector<std::int64_t> out_strides = n.type.shape.strides();
  std::vector<int> dst_dim(static_cast<std::size_t>(rank));  // graph axis -> spec dim
  std::iota(dst_dim.begin(), dst_dim.end(), 0);
  if (!s.is_output(id) && s.uses(id) == 1 && s.node(s.readers(id)[0]).op == Op::transpose &&
      !s.claimed(s.readers(id)[0])) {
    out = s.readers(id)[0];
    const Ints& perm = std::get<TransposeAttrs>(s.node(out).attrs).perm;
    std::vector<std::int64_t> t_strides = g.type(out).shape.strides();
    for (std::size_t i = 0; i < perm.size(); ++i) {
      out_strides[static_cast<std::size_t>(perm[i])] = t_strides[i];
      dst_dim[i] = int(perm[i]);
    }
  }
  std::vector<std::int64_t> out_dims = n.type.shape.dims();
  if (plan->spec.pass == ConvSpec::Pass::backward_weights) {
    std::swap(out_dims[0], out_dims[1]);
    std::swap(out_strides[0], out_strides[1]);
  }
  Kernel base;
  base.covered = plan->covered;
  base.covered.push_back(id);
  if (out != id) base.covered.push_back(out);
  ConvSpec& spec = plan->spec;
  StridedView& written = spec.written();
  written.dims = out_dims;
  written.strides = out_strides;
  for (const StridedView* v : {&spec.src, &spec.weights, &spec.dst})
    if (v != &written) add_unique(base.inputs, v->value);

  auto make = [&](FoundEpilogue e) {
    Kernel k = base;
    ConvSpec sp = spec;
    for (const auto& o : e.spec.operands) add_unique(k.inputs, o.value);
    k.covered.insert(k.covered.end(), e.covered.begin(), e.covered.end());
    k.outputs = {e.result};
    sp.written().value = e.result;
    sp.epilogue = std::move(e.spec);
    k.spec = std::move(sp);
    return k;
  };
  ConvKernels kernels;
  FoundEpilogue none;
  none.result = out;
  kernels.plain = make(std::move(none));
  if (spec.pass == ConvSpec::Pass::forward) {
    FoundEpilogue e = find_epilogue(s, out, dst_dim, out_dims);
    if (!e.spec.empty()) kernels.with_epilogue = make(std::move(e));
  }
  return kernels;
}

bool lower_convolution(LoweringState& s, ValueId id) {
  std::optional<ConvKernels> k = conv_kernels(s, id);
  if (!k) return false;
  if (lower_conv_pool(s, *k)) return true;
  if (k->with_epilogue && s.offer(std::move(*k->with_epilogue))) return true;
  return s.offer(std::move(k->plain));
}

}  // namespace glia::lowering
