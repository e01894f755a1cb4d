// Strided views through transposes, and epilogues after a contraction's result.
#include <algorithm>

#include "lowering/contraction.hpp"

namespace glia::lowering {

// A constant of zeros, or a broadcast of one.
bool is_zero_splat(const LoweringState& s, ValueId id) {
  const Node* n = &s.node(id);
  if (n->op == Op::broadcast) n = &s.node(n->inputs[0]);
  if (n->op != Op::constant || n->type.dtype != DType::f32) return false;
  const Tensor& t = std::get<ConstantAttrs>(n->attrs).value;
  const float* v = t.data<float>();
  return std::all_of(v, v + t.numel(), [](float x) { return x == 0.0f; });
}

WalkedView view_through_transposes(const LoweringState& state, ValueId id, ValueId reader) {
  WalkedView w;
  w.view.dims = state.graph().type(id).shape.dims();
  std::vector<int> axis(w.view.dims.size());  // axis of the current base behind each view axis
  for (std::size_t i = 0; i < axis.size(); ++i) axis[i] = int(i);
  ValueId cur = id, sole_reader = reader;
  while (state.node(cur).op == Op::transpose && !state.is_output(cur)) {
    const Node& t = state.node(cur);
    bool only_ours = sole_reader >= 0 && state.only_read_by(cur, sole_reader);
    if (!only_ours && !is_bound(state.node(t.inputs[0]).op)) break;
    const Ints& perm = std::get<TransposeAttrs>(t.attrs).perm;
    for (int& a : axis) a = int(perm[static_cast<std::size_t>(a)]);
    if (only_ours) w.walked.push_back(cur);
    sole_reader = only_ours ? cur : ValueId(-1);
    cur = t.inputs[0];
  }
  w.view.value = cur;
  std::vector<std::int64_t> base_strides = state.graph().type(cur).shape.strides();
  for (int a : axis) w.view.strides.push_back(base_strides[static_cast<std::size_t>(a)]);
  return w;
}

StridedView swap_leading(StridedView v) {
  std::swap(v.dims[0], v.dims[1]);
  std::swap(v.strides[0], v.strides[1]);
  return v;
}

FoundEpilogue find_epilogue(const LoweringState& s, ValueId start, const std::vector<int>& dst_dim,
                            const std::vector<std::int64_t>& dst_dims) {
  FoundEpilogue e;
  e.result = start;
  const TensorType type = s.graph().type(start);
  const std::vector<std::int64_t> strides = type.shape.strides();
  while (type.dtype == DType::f32 && !s.is_output(e.result) && s.uses(e.result) == 1) {
    ValueId r = s.readers(e.result)[0];
    const Node& n = s.node(r);
    if (s.claimed(r) || n.type != type) break;
    ValueId other = n.inputs.size() == 2 ? n.inputs[n.inputs[0] == e.result ? 1 : 0] : r;
    if (n.op == Op::add && other != e.result) {
      const Node& o = s.node(other);
      const auto* b = std::get_if<BroadcastAttrs>(&o.attrs);
      if (o.op == Op::broadcast && b->dims.size() == 1 &&
          s.graph().type(o.inputs[0]).shape.rank() == 1 &&
          s.graph().type(o.inputs[0]).dtype == DType::f32 &&
          s.graph().type(o.inputs[0]).shape[0] == type.shape[int(b->dims[0])]) {
        // Per-channel: steps along the destination dimension of the broadcast axis.
        std::vector<std::int64_t> at(dst_dims.size(), 0);
        at[static_cast<std::size_t>(dst_dim[static_cast<std::size_t>(b->dims[0])])] = 1;
        e.spec.operands.push_back({o.inputs[0], std::move(at), true});
        if (s.only_read_by(other, r)) e.covered.push_back(other);
      } else if (s.graph().type(other) == type) {
        std::vector<std::int64_t> at(dst_dims.size());
        for (std::size_t i = 0; i < dst_dim.size(); ++i)
          at[static_cast<std::size_t>(dst_dim[i])] = strides[i];
        e.spec.operands.push_back({other, std::move(at), false});
      } else {
        break;
      }
      e.spec.steps.push_back(EpilogueSpec::Step::add);
    } else if (n.op == Op::max && other != e.result && is_zero_splat(s, other)) {
      if (s.only_read_by(other, r)) e.covered.push_back(other);
      e.spec.steps.push_back(EpilogueSpec::Step::relu);
    } else if (n.op == Op::tanh || n.op == Op::logistic) {
      e.spec.steps.push_back(n.op == Op::tanh ? EpilogueSpec::Step::tanh
                                              : EpilogueSpec::Step::logistic);
    } else {
      break;
    }
    e.covered.push_back(r);
    e.result = r;
  }
  return e;
}

}  // namespace glia::lowering
