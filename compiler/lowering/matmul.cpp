// dot_general as a strided (batched) matrix product: folding the IR's axes into
// [batch..., M, K] x [batch..., K, N] through strides alone, with the epilogue after it.
#include <algorithm>

#include "lowering/contraction.hpp"

namespace glia {

namespace {

struct Folded {
  std::int64_t size = 1;
  std::int64_t stride = 0;  // 0: every axis had size 1, any stride will do
};

// Axes of a row-major operand (in this order) as one dimension, when each axis steps
// exactly over the next one's extent; size-1 axes fold anywhere.
std::optional<Folded> fold(const Shape& shape, const std::vector<std::int64_t>& strides,
                           const Ints& axes) {
  Folded f;
  for (std::int64_t ax : axes) {
    std::int64_t d = shape[static_cast<int>(ax)];
    if (d == 1) continue;
    if (f.stride != 0 && f.stride != strides[static_cast<std::size_t>(ax)] * d) return std::nullopt;
    f.size *= d;
    f.stride = strides[static_cast<std::size_t>(ax)];
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

}  // namespace

std::int64_t MatmulSpec::multiply_adds() const {
  std::int64_t macs = m * k * n;
  for (std::int64_t b : batch) macs *= b;
  return macs;
}

std::optional<MatmulSpec> matmul_view(const DotAttrs& a, const Shape& lhs, const Shape& rhs) {
  std::vector<std::int64_t> ls = lhs.strides(), rs = rhs.strides();
  auto m = fold(lhs, ls, free_axes(lhs.rank(), a.lhs_batch, a.lhs_contract));
  auto kl = fold(lhs, ls, a.lhs_contract);
  auto kr = fold(rhs, rs, a.rhs_contract);
  auto n = fold(rhs, rs, free_axes(rhs.rank(), a.rhs_batch, a.rhs_contract));
  if (!m || !kl || !kr || !n) return std::nullopt;
  MatmulSpec s;
  s.m = m->size, s.k = kl->size, s.n = n->size;
  for (std::size_t i = 0; i < a.lhs_batch.size(); ++i) {
    auto lb = static_cast<std::size_t>(a.lhs_batch[i]),
         rb = static_cast<std::size_t>(a.rhs_batch[i]);
    s.batch.push_back(lhs[static_cast<int>(lb)]);
    s.lhs_strides.push_back(ls[lb]);
    s.rhs_strides.push_back(rs[rb]);
  }
  // Zero-size products are left to the reference kernel: nothing to gain there.
  if (s.m == 0 || s.k == 0 || s.n == 0 ||
      std::find(s.batch.begin(), s.batch.end(), 0) != s.batch.end())
    return std::nullopt;
  s.lhs_strides.insert(s.lhs_strides.end(), {m->stride, kl->stride});
  s.rhs_strides.insert(s.rhs_strides.end(), {kr->stride, n->stride});
  // The output is (batch..., lhs free..., rhs free...), row-major: [batch..., M, N] dense.
  std::vector<std::int64_t> out_dims = s.batch;
  out_dims.insert(out_dims.end(), {s.m, s.n});
  s.out_strides = Shape(out_dims).strides();
  return s;
}

}  // namespace glia

namespace glia::lowering {

bool lower_matmul(LoweringState& state, ValueId id) {
  const Node& node = state.node(id);
  const Graph& g = state.graph();
  auto view = matmul_view(std::get<DotAttrs>(node.attrs), g.type(node.inputs[0]).shape,
                          g.type(node.inputs[1]).shape);
  if (!view) return false;
  view->lhs = node.inputs[0];
  view->rhs = node.inputs[1];
  view->dtype = node.type.dtype;
  Kernel plain;
  add_unique(plain.inputs, view->lhs);
  add_unique(plain.inputs, view->rhs);
  plain.covered = {id};
  plain.outputs = {id};
  // An epilogue where the graph's axes are the product's [batch..., M, N] one for one.
  std::vector<std::int64_t> dst_dims = view->batch;
  dst_dims.insert(dst_dims.end(), {view->m, view->n});
  if (node.type.shape.dims() == dst_dims) {
    std::vector<int> dst_dim(dst_dims.size());
    for (std::size_t i = 0; i < dst_dim.size(); ++i) dst_dim[i] = int(i);
    FoundEpilogue e = find_epilogue(state, id, dst_dim, dst_dims);
    if (!e.spec.empty()) {
      Kernel k = plain;
      MatmulSpec spec = *view;
      for (const auto& o : e.spec.operands) add_unique(k.inputs, o.value);
      spec.epilogue = std::move(e.spec);
      k.spec = std::move(spec);
      k.outputs = {e.result};
      k.covered.insert(k.covered.end(), e.covered.begin(), e.covered.end());
      if (state.offer(std::move(k))) return true;
    }
  }
  plain.spec = std::move(*view);
  return state.offer(std::move(plain));
}

}  // namespace glia::lowering
