// MatmulSpecs on cuBLASLt: the plan's (cublaslt_plan.hpp) descriptors made once, the
// algorithms cuBLASLt's heuristic picks for them, and one cublasLtMatmul call a run (or
// one per looped batch).
#include <algorithm>
#include <array>
#include <cstdint>
#include <mutex>
#include <optional>

#include "backends/cuda/cublaslt_plan.hpp"
#include "backends/cuda/cuda_kernel.hpp"
#include "backends/cuda/device.hpp"

namespace glia::detail::cuda {

namespace {

using lt::Matrix;
using lt::Plan;

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

std::unique_ptr<CudaKernel> realise_matmul(const Graph& graph, const Kernel& kernel,
                                           const DeviceInfo& device) {
  Plan plan = lt::plan_matmul(graph, kernel);
  check(plan.declined.empty(), "cuda: ", kernel.describe(graph), ": ", plan.declined);
  ContextScope scope(device);
  return std::make_unique<CublasLtMatmul>(std::move(plan), kernel.describe(graph));
}

}  // namespace glia::detail::cuda
