// A convolution fused with the max pooling that alone reads its output (ConvPoolSpec): the
// forward pass's kernel covers the convolution, its epilogue and the pooling; in a
// training step the kernel gradient's covers pooling's adjoint, relu's mask and the
// kernel-gradient convolution, which then read the pooled gradient instead of an adjoint
// the size of the convolution's output.
#include <algorithm>

#include "lowering/contraction.hpp"

namespace glia::lowering {

namespace {

bool same_view(const StridedView& a, const StridedView& b) {
  return a.value == b.value && a.dims == b.dims && a.strides == b.strides;
}

bool same_geometry(const ConvSpec& a, const ConvSpec& b) {
  return a.strides == b.strides && a.dilations == b.dilations && a.padding_low == b.padding_low &&
         a.padding_high == b.padding_high && a.groups == b.groups &&
         a.weights.dims == b.weights.dims;
}

bool same_windows(const PoolSpec& a, const PoolSpec& b) {
  return a.window == b.window && a.strides == b.strides && a.dilations == b.dilations &&
         a.padding_low == b.padding_low && a.padding_high == b.padding_high;
}

bool contains(const std::vector<ValueId>& list, ValueId v) {
  return std::find(list.begin(), list.end(), v) != list.end();
}

// The kernel-gradient convolution that alone reads `grad` (directly, or through the
// transposes its view walks), as a kernel of the same geometry as `forward`; nullopt
// elsewhere.
std::optional<Kernel> weights_gradient(const LoweringState& s, ValueId grad,
                                       const ConvSpec& forward) {
  if (s.is_output(grad) || s.readers(grad).size() != 1) return std::nullopt;
  ValueId reader = s.readers(grad)[0];
  if (s.node(reader).op == Op::transpose) {
    if (s.is_output(reader) || s.readers(reader).size() != 1) return std::nullopt;
    reader = s.readers(reader)[0];
  }
  if (s.node(reader).op != Op::convolution || s.claimed(reader)) return std::nullopt;
  std::optional<ConvKernels> k = conv_kernels(s, reader);
  if (!k) return std::nullopt;
  const auto& spec = std::get<ConvSpec>(k->plain.spec);
  if (spec.pass != ConvSpec::Pass::backward_weights || spec.dst.value != grad ||
      !same_view(spec.src, forward.src) || spec.dst.dims != forward.dst.dims ||
      spec.dst.strides != forward.dst.strides || !same_geometry(spec, forward))
    return std::nullopt;
  for (ValueId r : s.readers(grad))
    if (!contains(k->plain.covered, r)) return std::nullopt;
  return std::move(k->plain);
}

}  // namespace

bool lower_conv_pool(LoweringState& s, const ConvKernels& ck) {
  const Kernel& conv_kernel = ck.with_epilogue ? *ck.with_epilogue : ck.plain;
  const auto& conv = std::get<ConvSpec>(conv_kernel.spec);
  const ValueId out = conv_kernel.outputs.front();
  if (conv.pass != ConvSpec::Pass::forward || s.is_output(out)) return false;

  // Its readers: one max pooling, and in a training step pooling's adjoint over it and
  // relu's mask.
  ValueId pool = -1, adjoint = -1;
  std::vector<ValueId> others;
  for (ValueId r : s.readers(out)) {
    const Node& n = s.node(r);
    if (s.claimed(r)) return false;
    if (n.op == Op::window_max && pool < 0)
      pool = r;
    else if (n.op == Op::select_and_scatter && n.inputs[0] == out && n.inputs[1] != out &&
             adjoint < 0)
      adjoint = r;
    else
      others.push_back(r);
  }
  if (pool < 0) return false;
  std::optional<PoolKernels> pk = pool_kernels(s, pool);
  if (!pk) return false;
  const auto& pooling = std::get<PoolSpec>(pk->plain.spec);
  if (pooling.input.dims != conv.dst.dims || pooling.input.strides != conv.dst.strides)
    return false;

  Kernel forward = conv_kernel;
  forward.covered.push_back(pool);
  forward.outputs = {pool};
  ConvPoolSpec fs;
  fs.conv = conv;
  fs.pool = pooling;
  forward.spec = fs;
  if (adjoint < 0) return others.empty() && s.offer(std::move(forward));

  std::optional<PoolKernels> ak = pool_kernels(s, adjoint);
  if (!ak) return false;
  Kernel& adj = ak->masked ? *ak->masked : ak->plain;
  const auto& adj_spec = std::get<PoolSpec>(adj.spec);
  if (!same_windows(adj_spec, pooling) || adj_spec.input.dims != pooling.input.dims ||
      adj_spec.source.dims != pooling.output.dims)
    return false;
  for (ValueId o : others)  // relu's mask's comparison, covered by the masked adjoint
    if (!contains(adj.covered, o)) return false;
  std::optional<Kernel> wk = weights_gradient(s, adj.outputs.front(), conv);
  if (!wk) return false;

  Kernel backward;
  backward.covered = adj.covered;
  backward.covered.insert(backward.covered.end(), wk->covered.begin(), wk->covered.end());
  for (ValueId v : backward.covered)
    if (s.claimed(v) || contains(forward.covered, v)) return false;
  backward.inputs = conv_kernel.inputs;
  add_unique(backward.inputs, adj_spec.source.value);
  backward.outputs = wk->outputs;
  ConvPoolSpec bs = fs;
  bs.pass = ConvPoolSpec::Pass::backward_weights;
  bs.pooled_grad = adj_spec.source;
  bs.weight_grad = std::get<ConvSpec>(wk->spec).weights;
  bs.positive_only = adj_spec.positive_input_only;
  backward.spec = std::move(bs);
  // Both or neither: the forward kernel stores nothing the unfused adjoint could read.
  if (!s.target().accepts(s.graph(), backward) || !s.offer(std::move(forward))) return false;
  s.add(std::move(backward));
  return true;
}

}  // namespace glia::lowering
