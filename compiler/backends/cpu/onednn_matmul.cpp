// dot_general on oneDNN's matmul: folding the IR's axes into a strided
// [batch..., M, K] x [batch..., K, N] view, and the primitive made once per node.
#include "backends/cpu/onednn_matmul.hpp"

#include "backends/cpu/onednn_epilogue.hpp"
#include "backends/cpu/small_matmul.hpp"

#include <algorithm>
#include <sstream>
#include <unordered_map>

namespace glia::detail::cpu {

namespace {

struct Folded {
  std::int64_t size = 1;
  std::int64_t stride = 0;  // 0: every axis had size 1, any stride will do
};

// Axes of a row-major operand (in this order) as one dimension, when each axis
// steps exactly over the next one's extent; size-1 axes fold anywhere.
std::optional<Folded> fold(const Shape& shape, const std::vector<std::int64_t>& strides,
                           const Ints& axes) {
  Folded f;
  for (std::int64_t ax : axes) {
    auto a = static_cast<std::size_t>(ax);
    std::int64_t d = shape[static_cast<int>(ax)];
    if (d == 1) continue;
    if (f.stride != 0 && f.stride != strides[a] * d) return std::nullopt;
    f.size *= d;
    f.stride = strides[a];
  }
  return f;
}

Ints free_axes(int rank, const Ints& batch, const Ints& contract) {
  Ints free;
  for (int i = 0; i < rank; ++i)
    if (std::find(batch.begin(), batch.end(), i) == batch.end() &&
        std::find(contract.begin(), contract.end(), i) == contract.end())
      free.push_back(i);
  return free;
}

// Size-1 dimensions get the stride of the outermost one, as oneDNN's plain tags give
// them, so that its optimised kernels recognise the layout.
void settle_unit_strides(const std::vector<std::int64_t>& dims,
                         std::vector<std::int64_t>& strides) {
  std::int64_t outer = 1;
  for (std::size_t i = 0; i < dims.size(); ++i)
    if (dims[i] != 1) outer = std::max(outer, strides[i] * dims[i]);
  for (std::size_t i = 0; i < dims.size(); ++i)
    if (dims[i] == 1) strides[i] = outer;
}

dnnl::memory::dims dims_of(const MatmulShape& s, std::int64_t rows, std::int64_t cols) {
  dnnl::memory::dims d(s.batch.begin(), s.batch.end());
  d.push_back(rows);
  d.push_back(cols);
  return d;
}

}  // namespace

std::optional<MatmulShape> matmul_shape(const DotAttrs& a, const Shape& lhs, const Shape& rhs) {
  if (a.lhs_batch.size() + 2 > static_cast<std::size_t>(DNNL_MAX_NDIMS)) return std::nullopt;
  std::vector<std::int64_t> ls = lhs.strides(), rs = rhs.strides();
  auto m = fold(lhs, ls, free_axes(lhs.rank(), a.lhs_batch, a.lhs_contract));
  auto kl = fold(lhs, ls, a.lhs_contract);
  auto kr = fold(rhs, rs, a.rhs_contract);
  auto n = fold(rhs, rs, free_axes(rhs.rank(), a.rhs_batch, a.rhs_contract));
  if (!m || !kl || !kr || !n) return std::nullopt;
  MatmulShape s;
  s.m = m->size, s.k = kl->size, s.n = n->size;
  for (std::size_t i = 0; i < a.lhs_batch.size(); ++i) {
    auto lb = static_cast<std::size_t>(a.lhs_batch[i]),
         rb = static_cast<std::size_t>(a.rhs_batch[i]);
    s.batch.push_back(lhs[static_cast<int>(lb)]);
    s.src_strides.push_back(ls[lb]);
    s.weights_strides.push_back(rs[rb]);
  }
  // Zero-size products are left to the reference kernel: nothing to gain there.
  if (s.m == 0 || s.k == 0 || s.n == 0 ||
      std::find(s.batch.begin(), s.batch.end(), 0) != s.batch.end())
    return std::nullopt;
  s.src_strides.insert(s.src_strides.end(), {m->stride, kl->stride});
  s.weights_strides.insert(s.weights_strides.end(), {kr->stride, n->stride});
  settle_unit_strides(dims_of(s, s.m, s.k), s.src_strides);
  settle_unit_strides(dims_of(s, s.k, s.n), s.weights_strides);
  // The output is (batch..., lhs free..., rhs free...), row-major: [batch..., M, N] dense.
  s.dst_strides = Shape(dims_of(s, s.m, s.n)).strides();
  settle_unit_strides(dims_of(s, s.m, s.n), s.dst_strides);
  return s;
}

std::optional<MatmulStep> MatmulStep::create(const Graph& graph, const Node& node,
                                             const dnnl::engine& engine,
                                             const dnnl::post_ops& post_ops) {
  if (node.op != Op::dot_general || node.type.dtype != DType::f32) return std::nullopt;
  auto shape = matmul_shape(std::get<DotAttrs>(node.attrs), graph.type(node.inputs[0]).shape,
                            graph.type(node.inputs[1]).shape);
  if (!shape) return std::nullopt;
  using dt = dnnl::memory::data_type;
  MatmulStep step;
  step.shape_ = *shape;
  step.engine_ = engine;
  double flops = 2.0 * static_cast<double>(shape->m * shape->k * shape->n);
  for (std::int64_t b : shape->batch) flops *= static_cast<double>(b);
  step.threads_ = flops < kSingleThreadFlops ? 1 : 0;
  ThreadScope scope(step.threads_);  // oneDNN picks its kernels for the threads it sees
  try {
    step.src_ =
        dnnl::memory::desc(dims_of(*shape, shape->m, shape->k), dt::f32, shape->src_strides);
    step.weights_ =
        dnnl::memory::desc(dims_of(*shape, shape->k, shape->n), dt::f32, shape->weights_strides);
    step.dst_ =
        dnnl::memory::desc(dims_of(*shape, shape->m, shape->n), dt::f32, shape->dst_strides);
    dnnl::primitive_attr attr;
    // The caller provides scratch memory per run: a primitive's own would be shared by
    // concurrent runs of one executable.
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    attr.set_post_ops(post_ops);
    dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(step.src_, step.weights_, step.dst_), attr,
                                    engine, /*allow_empty=*/true);
    if (!pd) return std::nullopt;
    step.scratchpad_ = pd.scratchpad_desc();
    step.scratchpad_bytes_ = step.scratchpad_.get_size();
    step.impl_ = pd.impl_info_str();
    step.primitive_ = dnnl::matmul(pd);
  } catch (const dnnl::error&) {
    return std::nullopt;  // a layout this oneDNN build does not take: the reference runs it
  }
  return step;
}

MatmulStep::Bound MatmulStep::bind() const {
  Bound b;
  // Placeholder handles; execute() points them at each run's tensors.
  b.src = dnnl::memory(src_, engine_, nullptr);
  b.weights = dnnl::memory(weights_, engine_, nullptr);
  b.dst = dnnl::memory(dst_, engine_, nullptr);
  b.args.emplace(DNNL_ARG_SRC, b.src);
  b.args.emplace(DNNL_ARG_WEIGHTS, b.weights);
  b.args.emplace(DNNL_ARG_DST, b.dst);
  if (scratchpad_bytes_ > 0) {
    b.scratchpad = dnnl::memory(scratchpad_, engine_, nullptr);
    b.args.emplace(DNNL_ARG_SCRATCHPAD, b.scratchpad);
  }
  return b;
}

void MatmulStep::execute(const dnnl::stream& stream, Bound& b, const Tensor& lhs, const Tensor& rhs,
                         Tensor& out, void* scratchpad) const {
  // oneDNN takes non-const handles; it only reads src and weights.
  b.src.set_data_handle(const_cast<void*>(lhs.raw_data()));
  b.weights.set_data_handle(const_cast<void*>(rhs.raw_data()));
  b.dst.set_data_handle(out.raw_data());
  if (scratchpad_bytes_ > 0) b.scratchpad.set_data_handle(scratchpad);
  ThreadScope scope(threads_);
  primitive_.execute(stream, b.args);
}

std::string MatmulStep::describe() const {
  std::ostringstream out;
  out << "onednn matmul ";
  for (std::int64_t b : shape_.batch) out << b << " x ";
  out << "[" << shape_.m << "x" << shape_.k << "]·[" << shape_.k << "x" << shape_.n << "] ("
      << impl_ << (threads_ == 1 ? ", 1 thread" : "") << ")";
  return out.str();
}

namespace {

class MatmulKernel final : public Kernel {
 public:
  MatmulKernel(MatmulStep step, const Node& node, ValueId id, Epilogue e)
      : step_(std::move(step)), epilogue_(std::move(e)) {
    inputs = {node.inputs[0]};
    if (node.inputs[1] != node.inputs[0]) inputs.push_back(node.inputs[1]);
    for (const auto& o : epilogue_.operands)
      if (std::find(inputs.begin(), inputs.end(), o.value) == inputs.end())
        inputs.push_back(o.value);
    lhs_ = node.inputs[0];
    rhs_ = node.inputs[1];
    outputs = {epilogue_.result};
    covered = {id};
    covered.insert(covered.end(), epilogue_.covered.begin(), epilogue_.covered.end());
  }
  struct State final : KernelState {
    MatmulStep::Bound bound;
    std::vector<dnnl::memory> operands;  // the epilogue's, in its order
  };
  std::unique_ptr<KernelState> make_state() const override {
    auto state = std::make_unique<State>();
    state->bound = step_.bind();
    for (const auto& op : epilogue_.operands) {
      state->operands.emplace_back(op.desc, step_.engine(), nullptr);
      state->bound.args.emplace(op.arg, state->operands.back());
    }
    return state;
  }
  void run(RunContext& ctx) const override {
    auto& state = static_cast<State&>(*ctx.state);
    for (std::size_t i = 0; i < epilogue_.operands.size(); ++i)
      state.operands[i].set_data_handle(
          ctx.values[static_cast<std::size_t>(epilogue_.operands[i].value)].raw_data());
    step_.execute(ctx.stream, state.bound, ctx.values[static_cast<std::size_t>(lhs_)],
                  ctx.values[static_cast<std::size_t>(rhs_)],
                  ctx.values[static_cast<std::size_t>(outputs[0])], ctx.scratchpad);
    ctx.stream.wait();
  }
  std::string describe() const override { return step_.describe() + epilogue_.text; }
  std::size_t scratchpad_bytes() const override { return step_.scratchpad_bytes(); }

 private:
  MatmulStep step_;
  Epilogue epilogue_;
  ValueId lhs_ = 0, rhs_ = 0;
};

}  // namespace

std::unique_ptr<Kernel> make_matmul_kernel(Lowering& l, ValueId id) {
  const Node& node = l.node(id);
  if (node.op != Op::dot_general || node.type.dtype != DType::f32) return nullptr;
  auto shape = matmul_shape(std::get<DotAttrs>(node.attrs), l.graph().type(node.inputs[0]).shape,
                            l.graph().type(node.inputs[1]).shape);
  if (!shape) return nullptr;
  // Epilogues where the graph's axes are the product's [batch..., M, N] one for one.
  const MatmulShape& s = *shape;
  std::vector<std::int64_t> dst_dims(s.batch.begin(), s.batch.end());
  dst_dims.insert(dst_dims.end(), {s.m, s.n});
  Epilogue e;
  e.result = id;
  if (node.type.shape.dims() == dst_dims) {
    std::vector<int> dst_dim(dst_dims.size());
    for (std::size_t i = 0; i < dst_dim.size(); ++i) dst_dim[i] = int(i);
    e = find_epilogue(l, id, dst_dim, dst_dims);
  }
  if (is_small_matmul(s)) {
    Epilogue copy = e;
    if (auto k = make_small_matmul_kernel(node, id, s, std::move(copy))) return k;
  }
  if (!e.covered.empty())
    if (auto fused = MatmulStep::create(l.graph(), node, l.engine(), e.ops))
      return std::make_unique<MatmulKernel>(std::move(*fused), node, id, std::move(e));
  auto step = MatmulStep::create(l.graph(), node, l.engine());
  if (!step) return nullptr;
  Epilogue none;
  none.result = id;
  return std::make_unique<MatmulKernel>(std::move(*step), node, id, std::move(none));
}

}  // namespace glia::detail::cpu
