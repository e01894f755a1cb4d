// Strided views through transposes, and epilogues (bias, activation, residual add)
// turned into oneDNN post-ops, for the matmul and convolution lowerings.
#include "backends/cpu/onednn_epilogue.hpp"

#include <algorithm>

namespace glia::detail::cpu {

namespace {

bool is_bound(Op op) { return op == Op::parameter || op == Op::constant; }

// A constant of zeros, or a broadcast of one.
bool is_zero_splat(const Lowering& l, ValueId id) {
  const Node* n = &l.node(id);
  if (n->op == Op::broadcast) n = &l.node(n->inputs[0]);
  if (n->op != Op::constant || n->type.dtype != DType::f32) return false;
  const Tensor& t = std::get<ConstantAttrs>(n->attrs).value;
  const float* v = t.data<float>();
  return std::all_of(v, v + t.numel(), [](float x) { return x == 0.0f; });
}

}  // namespace

StridedView view_through_transposes(const Lowering& lowering, ValueId id, ValueId reader) {
  StridedView v;
  const Shape& shape = lowering.graph().type(id).shape;
  v.dims = shape.dims();
  std::vector<int> axis(v.dims.size());  // axis of the current base behind each view axis
  for (std::size_t i = 0; i < axis.size(); ++i) axis[i] = int(i);
  ValueId cur = id, sole_reader = reader;
  std::vector<ValueId> walked;
  while (lowering.node(cur).op == Op::transpose && !lowering.is_output(cur)) {
    const Node& t = lowering.node(cur);
    bool only_ours = lowering.uses(cur) == 1 && lowering.readers(cur)[0] == sole_reader &&
                     !lowering.claimed(cur);
    if (!only_ours && !is_bound(lowering.node(t.inputs[0]).op)) break;
    const Ints& perm = std::get<TransposeAttrs>(t.attrs).perm;
    for (int& a : axis) a = int(perm[static_cast<std::size_t>(a)]);
    if (only_ours) walked.push_back(cur);
    sole_reader = only_ours ? cur : ValueId(-1);
    cur = t.inputs[0];
  }
  v.base = cur;
  v.walked = std::move(walked);
  std::vector<std::int64_t> base_strides = lowering.graph().type(cur).shape.strides();
  for (int a : axis) v.strides.push_back(base_strides[static_cast<std::size_t>(a)]);
  return v;
}

StridedView swap_leading(StridedView v) {
  std::swap(v.dims[0], v.dims[1]);
  std::swap(v.strides[0], v.strides[1]);
  return v;
}

dnnl::memory::desc f32_desc(const std::vector<std::int64_t>& dims,
                            const std::vector<std::int64_t>& strides, bool settle_units) {
  std::vector<std::int64_t> s = strides;
  if (!settle_units) return dnnl::memory::desc(dims, dnnl::memory::data_type::f32, s);
  std::int64_t outer = 1;
  for (std::size_t i = 0; i < dims.size(); ++i)
    if (dims[i] != 1) outer = std::max(outer, s[i] * dims[i]);
  for (std::size_t i = 0; i < dims.size(); ++i)
    if (dims[i] == 1) s[i] = outer;
  return dnnl::memory::desc(dims, dnnl::memory::data_type::f32, s);
}

Epilogue find_epilogue(Lowering& l, ValueId start, const std::vector<int>& dst_dim,
                       const std::vector<std::int64_t>& dst_dims) {
  Epilogue e;
  e.result = start;
  const TensorType type = l.graph().type(start);
  const std::vector<std::int64_t> strides = type.shape.strides();
  int count = 0;
  auto note = [&](const char* part) { e.text += cat(e.text.empty() ? " + " : ", ", part); };
  auto operand_arg = [&] { return DNNL_ARG_ATTR_MULTIPLE_POST_OP(count) | DNNL_ARG_SRC_1; };
  while (type.dtype == DType::f32 && !l.is_output(e.result) && l.uses(e.result) == 1) {
    ValueId r = l.readers(e.result)[0];
    const Node& n = l.node(r);
    if (l.claimed(r) || n.type != type) break;
    ValueId other = n.inputs.size() == 2 ? n.inputs[n.inputs[0] == e.result ? 1 : 0] : r;
    if (n.op == Op::add && other != e.result) {
      const Node& o = l.node(other);
      const auto* b = std::get_if<BroadcastAttrs>(&o.attrs);
      if (o.op == Op::broadcast && b->dims.size() == 1 &&
          l.graph().type(o.inputs[0]).shape.rank() == 1 &&
          l.graph().type(o.inputs[0]).dtype == DType::f32 &&
          l.graph().type(o.inputs[0]).shape[0] == type.shape[int(b->dims[0])]) {
        // Per-channel: [1, ..., C, ..., 1] in the destination's dimension order.
        std::vector<std::int64_t> dims(dst_dims.size(), 1);
        dims[static_cast<std::size_t>(dst_dim[static_cast<std::size_t>(b->dims[0])])] =
            type.shape[int(b->dims[0])];
        dnnl::memory::desc d = f32_desc(dims, Shape(dims).strides());
        e.ops.append_binary(dnnl::algorithm::binary_add, d);
        std::vector<std::int64_t> at(dst_dims.size(), 0);
        at[static_cast<std::size_t>(dst_dim[static_cast<std::size_t>(b->dims[0])])] = 1;
        e.operands.push_back({operand_arg(), o.inputs[0], d, std::move(at)});
        e.steps.push_back(Epilogue::Step::add);
        if (l.uses(other) == 1 && !l.claimed(other)) e.covered.push_back(other);
        note("bias");
      } else if (l.graph().type(other) == type) {
        std::vector<std::int64_t> s(dst_dims.size());
        for (std::size_t i = 0; i < dst_dim.size(); ++i)
          s[static_cast<std::size_t>(dst_dim[i])] = strides[i];
        dnnl::memory::desc d = f32_desc(dst_dims, s);
        e.ops.append_binary(dnnl::algorithm::binary_add, d);
        e.operands.push_back({operand_arg(), other, d, s});
        e.steps.push_back(Epilogue::Step::add);
        note("residual");
      } else {
        break;
      }
    } else if (n.op == Op::max && other != e.result && is_zero_splat(l, other)) {
      e.ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
      if (l.uses(other) == 1 && !l.claimed(other)) e.covered.push_back(other);
      e.steps.push_back(Epilogue::Step::relu);
      note("relu");
    } else if (n.op == Op::tanh || n.op == Op::logistic) {
      bool tanh = n.op == Op::tanh;
      e.ops.append_eltwise(1.0f,
                           tanh ? dnnl::algorithm::eltwise_tanh : dnnl::algorithm::eltwise_logistic,
                           0.0f, 0.0f);
      e.steps.push_back(tanh ? Epilogue::Step::tanh : Epilogue::Step::logistic);
      note(tanh ? "tanh" : "logistic");
    } else {
      break;
    }
    ++count;
    e.covered.push_back(r);
    e.result = r;
  }
  return e;
}

void bind_epilogue(const Epilogue& e, const dnnl::engine& engine, RunContext& ctx,
                   std::unordered_map<int, dnnl::memory>& args) {
  for (const auto& op : e.operands)
    args.emplace(op.arg, dnnl::memory(op.desc, engine,
                                      ctx.values[static_cast<std::size_t>(op.value)].raw_data()));
}

}  // namespace glia::detail::cpu
