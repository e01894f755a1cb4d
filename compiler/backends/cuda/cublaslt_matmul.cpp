// MatmulSpecs on the cuda backend: cuBLASLt, with its epilogues for a per-feature bias, a
// residual (C with beta = 1) and relu. cuBLASLt is column-major: a row-major
// out[i, j] = lhs[i, k] rhs[k, j] runs as D = outᵀ = rhsᵀ·lhsᵀ (D's rows are the product's
// columns), or as D = out = lhs·rhs where the output steps by one down its rows; each
// operand is read under op N or T from whichever of its strides is 1. Batch axes that step
// as one fold into cuBLASLt's strided batch; any others are looped over, a call each.
#include <algorithm>
#include <array>
#include <climits>
#include <cstdint>
#include <mutex>
#include <optional>

#include "backends/cuda/cuda_kernel.hpp"
#include "backends/cuda/device.hpp"
#include "glia/compiler/lowering.hpp"

namespace glia::detail::cuda {

namespace {

// The most workspace an algorithm may use (NVIDIA's recommendation for Hopper); a kernel
// reports what its algorithms need of it.
constexpr std::uint64_t kWorkspaceLimit = std::uint64_t{32} << 20;
// Arena slices are 64-byte aligned and device allocations 256: one algorithm is chosen for
// operands aligned to this, another for the element size alone (views at odd offsets,
// a looped batch's matrices), and run() picks by the addresses it gets.
constexpr std::uint32_t kAligned = 16;

void check_lt(cublasStatus_t status, const char* what) {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  const CublasLtLibrary& lt = cublaslt();
  throw Error(cat("cuda: ", what, ": ", lt.cublasLtGetStatusName(status), " (",
                  lt.cublasLtGetStatusString(status), ")"));
}

std::string list(const std::vector<std::int64_t>& v) {
  std::string s = "[";
  for (std::size_t i = 0; i < v.size(); ++i) s += cat(i > 0 ? ", " : "", v[i]);
  return s + "]";
}

// An operand as cuBLASLt reads it: a column-major rows x cols matrix with leading
// dimension ld (its batch's matrices batch_stride elements apart) under op N or T.
struct Matrix {
  ValueId value = -1;
  cublasOperation_t op = CUBLAS_OP_N;
  std::int64_t rows = 1, cols = 1, ld = 1;
  std::int64_t batch_stride = 0;
};

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

// How a MatmulSpec kernel runs on cuBLASLt, or why it does not.
struct Plan {
  std::string declined;  // empty when it runs
  DType dtype = DType::f32;
  bool transposed = true;  // D = outᵀ = rhsᵀ·lhsᵀ, else D = out = lhs·rhs
  Matrix a, b, c, d;       // cuBLASLt's roles; without a residual, c is d (beta = 0)
  bool residual = false;
  ValueId bias = -1;
  bool relu = false;
  std::int64_t batch = 1;  // cuBLASLt's strided batch
  // Per cublasLtMatmul call: the element offsets of a, b, c and d (one call unless some
  // batch axes do not fold with the others).
  std::vector<std::array<std::int64_t, 4>> calls{{0, 0, 0, 0}};

  cublasLtEpilogue_t epilogue() const {
    if (bias >= 0) return relu ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_BIAS;
    return relu ? CUBLASLT_EPILOGUE_RELU : CUBLASLT_EPILOGUE_DEFAULT;
  }
};

Plan declined(std::string why) {
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

cudaDataType_t data_type(DType t) {
  switch (t) {
    case DType::f16:
      return CUDA_R_16F;
    case DType::bf16:
      return CUDA_R_16BF;
    case DType::f64:
      return CUDA_R_64F;
    default:
      return CUDA_R_32F;
  }
}

// The descriptors, each destroyed with its own function from the table.
struct LtDeleter {
  void operator()(cublasLtContext* h) const { cublaslt().cublasLtDestroy(h); }
  void operator()(cublasLtMatmulDescOpaque_t* d) const { cublaslt().cublasLtMatmulDescDestroy(d); }
  void operator()(cublasLtMatrixLayoutOpaque_t* l) const {
    cublaslt().cublasLtMatrixLayoutDestroy(l);
  }
  void operator()(cublasLtMatmulPreferenceOpaque_t* p) const {
    cublaslt().cublasLtMatmulPreferenceDestroy(p);
  }
};
using Handle = std::unique_ptr<cublasLtContext, LtDeleter>;
using MatmulDesc = std::unique_ptr<cublasLtMatmulDescOpaque_t, LtDeleter>;
using Layout = std::unique_ptr<cublasLtMatrixLayoutOpaque_t, LtDeleter>;
using Preference = std::unique_ptr<cublasLtMatmulPreferenceOpaque_t, LtDeleter>;

template <class T>
void set(cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attr, T value) {
  check_lt(cublaslt().cublasLtMatmulDescSetAttribute(desc, attr, &value, sizeof value),
           "cublasLtMatmulDescSetAttribute");
}
template <class T>
void set(cublasLtMatrixLayout_t layout, cublasLtMatrixLayoutAttribute_t attr, T value) {
  check_lt(cublaslt().cublasLtMatrixLayoutSetAttribute(layout, attr, &value, sizeof value),
           "cublasLtMatrixLayoutSetAttribute");
}
template <class T>
void set(cublasLtMatmulPreference_t pref, cublasLtMatmulPreferenceAttributes_t attr, T value) {
  check_lt(cublaslt().cublasLtMatmulPreferenceSetAttribute(pref, attr, &value, sizeof value),
           "cublasLtMatmulPreferenceSetAttribute");
}

Layout make_layout(const Matrix& m, DType dtype, std::int64_t batch) {
  cublasLtMatrixLayout_t made = nullptr;
  check_lt(cublaslt().cublasLtMatrixLayoutCreate(&made, data_type(dtype), std::uint64_t(m.rows),
                                                 std::uint64_t(m.cols), m.ld),
           "cublasLtMatrixLayoutCreate");
  Layout layout(made);
  if (batch > 1) {
    set(made, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, std::int32_t(batch));
    set(made, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, std::int64_t(m.batch_stride));
  }
  return layout;
}

const char* op_name(cublasOperation_t op) { return op == CUBLAS_OP_N ? "N" : "T"; }

const char* epilogue_name(cublasLtEpilogue_t e) {
  switch (e) {
    case CUBLASLT_EPILOGUE_RELU:
      return "RELU";
    case CUBLASLT_EPILOGUE_BIAS:
      return "BIAS";
    case CUBLASLT_EPILOGUE_RELU_BIAS:
      return "RELU_BIAS";
    default:
      return "DEFAULT";
  }
}

// The plan's descriptors, made once, and the algorithms cuBLASLt's heuristic picks for
// them. The bias address is set on the one matmul descriptor per run, under a lock:
// runs of one executable on two workspaces may overlap.
class CublasLtMatmul final : public CudaKernel {
 public:
  CublasLtMatmul(Plan plan, const std::string& what) : plan_(std::move(plan)) {
    const CublasLtLibrary& lt = cublaslt();
    const bool f64 = plan_.dtype == DType::f64;
    cublasLtMatmulDesc_t desc = nullptr;
    check_lt(lt.cublasLtMatmulDescCreate(&desc, f64 ? CUBLAS_COMPUTE_64F : CUBLAS_COMPUTE_32F,
                                         f64 ? CUDA_R_64F : CUDA_R_32F),
             "cublasLtMatmulDescCreate");
    desc_.reset(desc);
    set(desc, CUBLASLT_MATMUL_DESC_TRANSA, std::int32_t(plan_.a.op));
    set(desc, CUBLASLT_MATMUL_DESC_TRANSB, std::int32_t(plan_.b.op));
    set(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, std::uint32_t(plan_.epilogue()));
    a_ = make_layout(plan_.a, plan_.dtype, plan_.batch);
    b_ = make_layout(plan_.b, plan_.dtype, plan_.batch);
    d_ = make_layout(plan_.d, plan_.dtype, plan_.batch);
    if (plan_.residual) c_ = make_layout(plan_.c, plan_.dtype, plan_.batch);
    if (f64)
      alpha_d_ = 1, beta_d_ = plan_.residual ? 1 : 0;
    else
      alpha_f_ = 1, beta_f_ = plan_.residual ? 1.0f : 0.0f;

    // A handle of its own for the heuristic (the workspaces' handles come later, per run):
    // an algorithm is a configuration for the device, valid with any handle on it.
    cublasLtHandle_t made = nullptr;
    check_lt(lt.cublasLtCreate(&made), "cublasLtCreate");
    Handle handle(made);
    auto aligned = heuristic(made, kAligned);
    auto unaligned = heuristic(made, std::uint32_t(dtype_size(plan_.dtype)));
    if (!aligned) aligned = unaligned;  // one that takes any address serves both
    check(aligned.has_value(), "cuda: cuBLASLt has no algorithm for ", what, " (", describe(), ")");
    aligned_ = aligned->algo;
    workspace_ = aligned->workspaceSize;
    if (unaligned) {
      unaligned_ = unaligned->algo;
      workspace_ = std::max(workspace_, unaligned->workspaceSize);
    }
  }

  void run(const RunContext& ctx) const override {
    const auto size = std::int64_t(dtype_size(plan_.dtype));
    const Matrix* roles[4] = {&plan_.a, &plan_.b, &plan_.c, &plan_.d};
    std::array<std::byte*, 4> base{};
    for (std::size_t r = 0; r < 4; ++r) base[r] = ctx.at(roles[r]->value);
    const void* bias = plan_.bias >= 0 ? ctx.at(plan_.bias) : nullptr;
    auto bits = reinterpret_cast<std::uintptr_t>(bias);
    for (const auto& call : plan_.calls)
      for (std::size_t r = 0; r < 4; ++r)
        bits |= reinterpret_cast<std::uintptr_t>(base[r] + call[r] * size);
    const cublasLtMatmulAlgo_t* algo = bits % kAligned == 0 ? &aligned_
                                       : unaligned_         ? &*unaligned_
                                                            : nullptr;
    check(algo != nullptr, "cuda: cuBLASLt has no algorithm for operands aligned to less than ",
          kAligned, " bytes (", describe(), ")");
    const void* alpha = plan_.dtype == DType::f64 ? static_cast<const void*>(&alpha_d_) : &alpha_f_;
    const void* beta = plan_.dtype == DType::f64 ? static_cast<const void*>(&beta_d_) : &beta_f_;
    cublasLtMatrixLayout_t c_layout = plan_.residual ? c_.get() : d_.get();
    std::lock_guard<std::mutex> lock(mutex_);
    if (bias != nullptr) set(desc_.get(), CUBLASLT_MATMUL_DESC_BIAS_POINTER, bias);
    for (const auto& call : plan_.calls)
      check_lt(cublaslt().cublasLtMatmul(
                   ctx.cublaslt, desc_.get(), alpha, base[0] + call[0] * size, a_.get(),
                   base[1] + call[1] * size, b_.get(), beta, base[2] + call[2] * size, c_layout,
                   base[3] + call[3] * size, d_.get(), algo, ctx.scratch, workspace_, ctx.stream),
               "cublasLtMatmul");
  }

  std::string describe() const override {
    std::string s = cat("cuBLASLt ", op_name(plan_.a.op), "·", op_name(plan_.b.op), " ",
                        plan_.dtype, plan_.transposed ? " (outᵀ = rhsᵀ·lhsᵀ)" : "");
    if (plan_.epilogue() != CUBLASLT_EPILOGUE_DEFAULT)
      s += cat(", epilogue ", epilogue_name(plan_.epilogue()));
    if (plan_.residual) s += ", C residual";
    if (plan_.batch > 1) s += cat(", batch ", plan_.batch);
    if (plan_.calls.size() > 1) s += cat(", ", plan_.calls.size(), " calls");
    return s;
  }
  std::size_t scratch_bytes() const override { return workspace_; }
  bool needs_cublaslt() const override { return true; }

 private:
  // The best algorithm for operands aligned to `alignment` bytes, or none. cuBLASLt reads
  // the alignment of the bias from its address, so a stand-in of that alignment is set.
  std::optional<cublasLtMatmulHeuristicResult_t> heuristic(cublasLtHandle_t handle,
                                                           std::uint32_t alignment) {
    const CublasLtLibrary& lt = cublaslt();
    cublasLtMatmulPreference_t made = nullptr;
    check_lt(lt.cublasLtMatmulPreferenceCreate(&made), "cublasLtMatmulPreferenceCreate");
    Preference pref(made);
    set(made, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, kWorkspaceLimit);
    for (auto attr :
         {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
          CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES})
      set(made, attr, alignment);
    if (plan_.bias >= 0)
      set(desc_.get(), CUBLASLT_MATMUL_DESC_BIAS_POINTER,
          reinterpret_cast<const void*>(std::uintptr_t{1} << 16 | alignment));
    cublasLtMatmulHeuristicResult_t result{};
    int found = 0;
    cublasStatus_t status = lt.cublasLtMatmulAlgoGetHeuristic(
        handle, desc_.get(), a_.get(), b_.get(), plan_.residual ? c_.get() : d_.get(), d_.get(),
        made, 1, &result, &found);
    if (status == CUBLAS_STATUS_NOT_SUPPORTED || (status == CUBLAS_STATUS_SUCCESS && found == 0))
      return std::nullopt;
    check_lt(status, "cublasLtMatmulAlgoGetHeuristic");
    if (result.state != CUBLAS_STATUS_SUCCESS) return std::nullopt;
    return result;
  }

  Plan plan_;
  MatmulDesc desc_;
  Layout a_, b_, c_, d_;  // c_: only with a residual (else C is D)
  float alpha_f_ = 1, beta_f_ = 0;
  double alpha_d_ = 1, beta_d_ = 0;
  cublasLtMatmulAlgo_t aligned_{};
  std::optional<cublasLtMatmulAlgo_t> unaligned_;
  std::size_t workspace_ = 0;
  mutable std::mutex mutex_;
};

}  // namespace

std::string cublaslt_declines(const Graph& graph, const Kernel& kernel) {
  return plan_matmul(graph, kernel).declined;
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

std::unique_ptr<CudaKernel> realise_matmul(const Graph& graph, const Kernel& kernel,
                                           const DeviceInfo& device) {
  Plan plan = plan_matmul(graph, kernel);
  check(plan.declined.empty(), "cuda: ", kernel.describe(graph), ": ", plan.declined);
  ContextScope scope(device);
  return std::make_unique<CublasLtMatmul>(std::move(plan), kernel.describe(graph));
}

}  // namespace glia::detail::cuda
