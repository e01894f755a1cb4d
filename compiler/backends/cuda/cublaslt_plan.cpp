// The cuBLASLt plan of a MatmulSpec (cublaslt_plan.hpp), and what the lowering asks of it:
// whether cuBLASLt realises a kernel, and why a dot_general it leaves is left.
#include "backends/cuda/cublaslt_plan.hpp"

#include <algorithm>
#include <climits>
#include <optional>

#include "backends/cuda/cuda_kernel.hpp"
#include "glia/compiler/lowering.hpp"
#include "glia/core/error.hpp"

namespace glia::detail::cuda {

namespace lt {

namespace {

std::string list(const std::vector<std::int64_t>& v) {
  std::string s = "[";
  for (std::size_t i = 0; i < v.size(); ++i) s += cat(i > 0 ? ", " : "", v[i]);
  return s + "]";
}

// A rows x cols operand with element (r, c) at r * rs + c * cs: op N over it as stored
// (unit stride down its rows), else op T over its transpose (unit stride along its
// columns), else nothing. A dimension of size 1 takes any stride.
std::optional<Matrix> column_major(std::int64_t rows, std::int64_t cols, std::int64_t rs,
                                   std::int64_t cs, bool may_transpose) {
  auto stored = [](std::int64_t r, std::int64_t c, std::int64_t unit, std::int64_t lead,
                   cublasOperation_t op) -> std::optional<Matrix> {
    if (r != 1 && unit != 1) return std::nullopt;
    std::int64_t ld = c == 1 ? r : lead;
    if (ld < r) return std::nullopt;  // its columns would overlap
    Matrix m;
    m.op = op, m.rows = r, m.cols = c, m.ld = ld;
    return m;
  };
  if (auto m = stored(rows, cols, rs, cs, CUBLAS_OP_N)) return m;
  if (may_transpose) return stored(cols, rows, cs, rs, CUBLAS_OP_T);
  return std::nullopt;
}

}  // namespace

static Plan declined(std::string why) {
  Plan p;
  p.declined = "cuBLASLt: " + std::move(why);
  return p;
}

// Looks at the epilogue, picks the form (which of out and outᵀ is D) and each operand's
// op, then folds the batch axes.
Plan plan_matmul(const Graph& graph, const Kernel& kernel) {
  const auto* spec = std::get_if<MatmulSpec>(&kernel.spec);
  if (spec == nullptr || kernel.outputs.size() != 1) return declined("not a matmul kernel");
  const MatmulSpec& s = *spec;
  const std::size_t nb = s.batch.size();
  if (s.dtype != DType::f32 && s.dtype != DType::f64 && s.dtype != DType::f16 &&
      s.dtype != DType::bf16)
    return declined(cat("multiplies f16, bf16, f32 and f64 matrices only, not ", s.dtype));
  std::int64_t batch = 1;
  for (std::int64_t b : s.batch) batch *= b;
  if (std::max({s.m, s.k, s.n, batch}) > INT_MAX) return declined("a dimension over 2^31 - 1");

  // cuBLASLt computes act(A·B + C + bias): adds of a bias and a residual in any order,
  // then at most one relu.
  Plan p;
  p.dtype = s.dtype;
  const EpilogueSpec::Operand* bias = nullptr;
  const EpilogueSpec::Operand* residual = nullptr;
  std::size_t next = 0;
  for (EpilogueSpec::Step step : s.epilogue.steps) {
    if (step == EpilogueSpec::Step::tanh || step == EpilogueSpec::Step::logistic)
      return declined("no tanh or logistic epilogue");
    if (p.relu) return declined("a step after relu (its activation comes last)");
    if (step == EpilogueSpec::Step::relu) {
      p.relu = true;
      continue;
    }
    const EpilogueSpec::Operand& o = s.epilogue.operands.at(next++);
    if (graph.type(o.value).dtype != s.dtype)
      return declined("an epilogue operand of another dtype");
    const EpilogueSpec::Operand*& slot = o.bias ? bias : residual;
    if (slot != nullptr) return declined(o.bias ? "two bias adds" : "two residual adds");
    slot = &o;
  }
  if (!s.epilogue.empty() && s.dtype == DType::f64)
    return declined("glia uses its epilogues on f32, f16 and bf16 only");

  std::vector<std::int64_t> dims = s.batch;  // the output's: [batch..., M, N]
  dims.insert(dims.end(), {s.m, s.n});
  auto steps = [&](const std::vector<std::int64_t>& strides, std::size_t i) {
    return strides[i] != 0 && dims[i] != 1;
  };
  // The forms D may take: outᵀ (D's rows are N), out (they are M). A bias must run down
  // D's rows, packed, and be the same in every column and batch.
  std::vector<bool> forms{true, false};
  if (bias != nullptr) {
    const std::vector<std::int64_t>& st = bias->strides;
    for (std::size_t i = 0; i < nb; ++i)
      if (steps(st, i)) return declined(cat("a bias along a batch axis (strides ", list(st), ")"));
    auto down_rows = [&](std::size_t rows, std::size_t cols) {
      return !steps(st, cols) && (dims[rows] == 1 || st[rows] == 1);
    };
    std::erase_if(forms, [&](bool transposed) {
      return transposed ? !down_rows(nb + 1, nb) : !down_rows(nb, nb + 1);
    });
    if (forms.empty())
      return declined(cat("a bias with strides ", list(st), " over ", list(dims),
                          " (cuBLASLt's is packed, along M or N)"));
    p.bias = bias->value;
  }
  if (residual != nullptr)
    for (std::size_t i = 0; i < dims.size(); ++i)
      if (residual->strides[i] == 0 && dims[i] != 1)
        return declined(cat("a residual broadcast over ", list(dims), " (strides ",
                            list(residual->strides), ")"));

  // Element (row, col) of each role in the spec's strides, for outᵀ = rhsᵀ·lhsᵀ or
  // out = lhs·rhs.
  auto m_k_n = [&](const std::vector<std::int64_t>& v, int i) { return v[nb + std::size_t(i)]; };
  const auto& ls = s.lhs_strides;
  const auto& rs = s.rhs_strides;
  const auto& os = s.out_strides;
  const std::vector<std::int64_t>& cs = residual != nullptr ? residual->strides : os;
  std::string why;
  auto form = [&](bool transposed) {
    std::optional<Matrix> a, b, c, d;
    if (transposed) {
      d = column_major(s.n, s.m, m_k_n(os, 1), m_k_n(os, 0), false);
      c = column_major(s.n, s.m, m_k_n(cs, 1), m_k_n(cs, 0), false);
      a = column_major(s.n, s.k, m_k_n(rs, 1), m_k_n(rs, 0), true);
      b = column_major(s.k, s.m, m_k_n(ls, 1), m_k_n(ls, 0), true);
    } else {
      d = column_major(s.m, s.n, m_k_n(os, 0), m_k_n(os, 1), false);
      c = column_major(s.m, s.n, m_k_n(cs, 0), m_k_n(cs, 1), false);
      a = column_major(s.m, s.k, m_k_n(ls, 0), m_k_n(ls, 1), true);
      b = column_major(s.k, s.n, m_k_n(rs, 0), m_k_n(rs, 1), true);
    }
    const char* rows = transposed ? "columns" : "rows";
    if (!d || !c) {
      if (why.empty())
        why = cat(!d ? "the output" : "the residual", " does not step by one down its ", rows,
                  " (strides ", list(!d ? os : cs), ")");
      return false;
    }
    if (!a || !b) {
      why = cat("an operand with no unit stride (lhs strides ", list(ls), ", rhs ", list(rs), ")");
      return false;
    }
    p.a = *a, p.b = *b, p.c = *c, p.d = *d;
    p.a.value = transposed ? s.rhs : s.lhs;
    p.b.value = transposed ? s.lhs : s.rhs;
    p.d.value = kernel.outputs[0];
    p.c.value = residual != nullptr ? residual->value : p.d.value;
    p.residual = residual != nullptr;
    p.transposed = transposed;
    return true;
  };
  bool formed = false;
  for (bool transposed : forms)
    if ((formed = form(transposed))) break;
  if (!formed) return declined(why);

  // Batch axes in the roles' strides (a, b, c, d); neighbours that step as one merge, the
  // largest run becomes cuBLASLt's strided batch and the others are looped over.
  struct Axis {
    std::int64_t size = 1;
    std::array<std::int64_t, 4> strides{};
  };
  std::vector<Axis> axes;
  for (std::size_t i = 0; i < nb; ++i) {
    if (s.batch[i] == 1) continue;
    Axis x{s.batch[i], {(p.transposed ? rs : ls)[i], (p.transposed ? ls : rs)[i], cs[i], os[i]}};
    if (!axes.empty()) {
      Axis& outer = axes.back();
      bool folds = true;
      for (std::size_t r = 0; r < 4; ++r)
        folds = folds && outer.strides[r] == x.strides[r] * x.size;
      if (folds) {
        outer.size *= x.size;
        outer.strides = x.strides;
        continue;
      }
    }
    axes.push_back(x);
  }
  if (!axes.empty()) {
    auto largest = std::max_element(axes.begin(), axes.end(),
                                    [](const Axis& x, const Axis& y) { return x.size < y.size; });
    p.batch = largest->size;
    Matrix* roles[4] = {&p.a, &p.b, &p.c, &p.d};
    for (std::size_t r = 0; r < 4; ++r) roles[r]->batch_stride = largest->strides[r];
    for (auto x = axes.begin(); x != axes.end(); ++x) {
      if (x == largest) continue;
      std::vector<std::array<std::int64_t, 4>> calls;
      for (const auto& call : p.calls)
        for (std::int64_t i = 0; i < x->size; ++i) {
          auto moved = call;
          for (std::size_t r = 0; r < 4; ++r) moved[r] += i * x->strides[r];
          calls.push_back(moved);
        }
      p.calls = std::move(calls);
    }
  }
  return p;
}

}  // namespace lt

std::string cublaslt_declines(const Graph& graph, const Kernel& kernel) {
  return lt::plan_matmul(graph, kernel).declined;
}

std::string matmul_fallback(const Graph& graph, ValueId node) {
  const Node& n = graph.node(node);
  if (n.op != Op::dot_general) return "";
  // The plain kernel the lowering offers first without an epilogue (lowering/matmul.cpp).
  auto view = matmul_view(std::get<DotAttrs>(n.attrs), graph.type(n.inputs[0]).shape,
                          graph.type(n.inputs[1]).shape);
  if (!view) return "zero-size, or axes that do not fold into a strided matmul";
  view->lhs = n.inputs[0];
  view->rhs = n.inputs[1];
  view->dtype = n.type.dtype;
  Kernel plain;
  plain.spec = std::move(*view);
  plain.inputs = {n.inputs[0], n.inputs[1]};
  plain.outputs = {node};
  plain.covered = {node};
  return cublaslt_declines(graph, plain);
}

}  // namespace glia::detail::cuda
