// ConvSpecs on cuDNN's legacy convolution API: one cudnnConvolutionForward, ...BackwardData
// or ...BackwardFilter call per kernel, over 4-D or 5-D descriptors made from the spec's
// views (a 1-D convolution gains a unit height). cuDNN wants packed NCHW or NHWC operands
// and filters: an operand in another layout (the conv layer's HWIO kernel) is repacked
// in the scratch by cudnnTransformTensor around the call, as the cpu backend reorders
// oneDNN's weights. The algorithm is chosen once, when the kernel is realised: the
// fastest deterministic one whose workspace fits, as cuDNN's Find measures them on the
// device (PyTorch's cudnn.benchmark; GLIA_CUDNN_ALGORITHMS=heuristic takes the first of
// cuDNN's heuristics instead, or where Find fails).
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <vector>

#include "backends/cuda/cuda_kernel.hpp"
#include "backends/cuda/cudnn_descriptors.hpp"
#include "backends/cuda/cudnn_views.hpp"
#include "backends/cuda/device.hpp"
#include "glia/core/error.hpp"

namespace glia::detail::cuda {

namespace {

using Pass = ConvSpec::Pass;
using conv::check_dnn;
using conv::conv_desc;
using conv::ConvDesc;
using conv::data_type;
using conv::Dims;
using conv::dtype_declines;
using conv::filter_desc;
using conv::FilterDesc;
using conv::Layout;
using conv::packed_in;
using conv::packed_strides;
using conv::settled;
using conv::tensor_desc;
using conv::TensorDesc;
using conv::Views;
using conv::views_of;

constexpr std::size_t kMaxWorkspace = std::size_t{256} << 20;  // per kernel
constexpr float kOneF = 1, kZeroF = 0;
constexpr double kOneD = 1, kZeroD = 0;

std::size_t align256(std::size_t n) { return (n + 255) / 256 * 256; }

// One handle per device for the heuristics, made on first use and kept for the process's
// life like the primary context it lives on (cudnnCreate costs milliseconds, a program has
// a convolution per pass per layer). Callers hold planning_mutex(): a handle is not for
// two threads at once.
std::mutex& planning_mutex() {
  static std::mutex m;
  return m;
}

cudnnHandle_t planning_handle(const DeviceInfo& device) {
  static std::map<int, cudnnHandle_t> handles;
  auto it = handles.find(device.index);
  if (it != handles.end()) return it->second;
  cudnnHandle_t made = nullptr;
  check_dnn(cudnn().cudnnCreate(&made), "cudnnCreate");
  handles.emplace(device.index, made);
  return made;
}

// ---- Algorithms --------------------------------------------------------------------------

const char* algorithm_name(Pass pass, int algo) {
  static const char* const forward[] = {
      "IMPLICIT_GEMM", "IMPLICIT_PRECOMP_GEMM", "GEMM", "DIRECT", "FFT", "FFT_TILING",
      "WINOGRAD",      "WINOGRAD_NONFUSED"};
  static const char* const data[] = {"ALGO_0",     "ALGO_1",   "FFT",
                                     "FFT_TILING", "WINOGRAD", "WINOGRAD_NONFUSED"};
  static const char* const filter[] = {
      "ALGO_0", "ALGO_1", "FFT", "ALGO_3", "WINOGRAD", "WINOGRAD_NONFUSED", "FFT_TILING"};
  static_assert(std::size(forward) == CUDNN_CONVOLUTION_FWD_ALGO_COUNT);
  static_assert(std::size(data) == CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT);
  static_assert(std::size(filter) == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT);
  auto pick = [algo](const auto& names) {
    return algo >= 0 && std::size_t(algo) < std::size(names) ? names[algo] : "?";
  };
  return pass == Pass::forward         ? pick(forward)
         : pass == Pass::backward_data ? pick(data)
                                       : pick(filter);
}

struct Algorithm {
  int algo = 0;
  cudnnMathType_t math = CUDNN_DEFAULT_MATH;
  std::size_t workspace = 0;
  bool deterministic = true;
};

// The first of the heuristics' results (best first) that ran, is deterministic where
// asked, keeps f32 on FMA math, and whose workspace fits. `heuristics(count, &returned,
// results)` is the pass's _v7 call (named `what`), which lists up to `count` results. The
// descriptor takes the result's math type (the heuristics rank algorithm and math type
// together); `workspace(algo, &bytes)` asks for the size under the descriptor as set. What
// was passed over goes to `tried` when given.
template <class Perf, class Heuristics, class Workspace>
std::optional<Algorithm> pick_algorithm(int count, const char* what, Heuristics heuristics,
                                        Workspace workspace, Pass pass, DType dtype,
                                        bool deterministic_only, cudnnConvolutionDescriptor_t conv,
                                        std::string* tried) {
  std::vector<Perf> results(static_cast<std::size_t>(count));
  int returned = 0;
  check_dnn(heuristics(count, &returned, results.data()), what);
  results.resize(std::size_t(std::max(returned, 0)));
  auto passed = [&](const Perf& p, const std::string& why) {
    if (tried != nullptr) *tried += cat(" ", algorithm_name(pass, int(p.algo)), " (", why, ");");
  };
  for (const Perf& p : results) {
    if (p.status != CUDNN_STATUS_SUCCESS) {
      passed(p, cudnn().cudnnGetErrorString(p.status));
      continue;
    }
    bool deterministic = p.determinism == CUDNN_DETERMINISTIC;
    if (deterministic_only && !deterministic) continue;
    if (dtype == DType::f32 && p.mathType != CUDNN_FMA_MATH) {
      passed(p, cat("math type ", int(p.mathType)));
      continue;
    }
    std::size_t bytes = 0;
    if (cudnn().cudnnSetConvolutionMathType(conv, p.mathType) != CUDNN_STATUS_SUCCESS ||
        workspace(p.algo, &bytes) != CUDNN_STATUS_SUCCESS) {
      passed(p, "no workspace size");
      continue;
    }
    if (bytes > kMaxWorkspace) {
      passed(p, cat(bytes >> 20, " MiB workspace"));
      continue;
    }
    return Algorithm{int(p.algo), p.mathType, bytes, deterministic};
  }
  return std::nullopt;
}

// ---- The kernel ---------------------------------------------------------------------------

class CudnnConvolution final : public CudaKernel {
 public:
  CudnnConvolution(const ConvSpec& s, const Views& v, Layout layout)
      : pass_(s.pass),
        dtype_(s.dtype),
        layout_(layout),
        groups_(s.groups),
        src_(operand(s.src.value, v.src)),
        weights_(operand(s.weights.value, v.weights)),
        dst_(operand(s.dst.value, v.dst)),
        filter_(filter_desc(data_type(s.dtype), layout, v.weights.dims)),
        conv_(conv_desc(s)) {
    const Ints& w = s.weights.dims;
    for (std::size_t i = w.size() - s.strides.size(); i < w.size(); ++i)
      window_ += cat(window_.empty() ? "" : "x", w[i]);
  }

  // Chooses the algorithm from cuDNN's measurements on the device (`measured`) or its
  // heuristics, deterministic ones only if asked; false when none runs here. Both list
  // algorithms best first in the same records.
  bool choose(cudnnHandle_t handle, bool measured, bool deterministic_only, std::string* tried) {
    const CudnnLibrary& dnn = cudnn();
    std::optional<Algorithm> a;
    cudnnTensorDescriptor_t x = src_.call.get(), y = dst_.call.get();
    cudnnFilterDescriptor_t w = filter_.get();
    cudnnConvolutionDescriptor_t c = conv_.get();
    // Find takes the _v7 call's arguments; it measures conv_desc's math (f32: FMA, no TF32).
    if (pass_ == Pass::forward) {
      auto list = measured ? dnn.cudnnFindConvolutionForwardAlgorithm
                           : dnn.cudnnGetConvolutionForwardAlgorithm_v7;
      a = pick_algorithm<cudnnConvolutionFwdAlgoPerf_t>(
          CUDNN_CONVOLUTION_FWD_ALGO_COUNT,
          measured ? "cudnnFindConvolutionForwardAlgorithm"
                   : "cudnnGetConvolutionForwardAlgorithm_v7",
          [&](int k, int* n, cudnnConvolutionFwdAlgoPerf_t* r) {
            return list(handle, x, w, c, y, k, n, r);
          },
          [&](cudnnConvolutionFwdAlgo_t algo, std::size_t* b) {
            return dnn.cudnnGetConvolutionForwardWorkspaceSize(handle, x, w, c, y, algo, b);
          },
          pass_, dtype_, deterministic_only, c, tried);
    } else if (pass_ == Pass::backward_data) {
      auto list = measured ? dnn.cudnnFindConvolutionBackwardDataAlgorithm
                           : dnn.cudnnGetConvolutionBackwardDataAlgorithm_v7;
      a = pick_algorithm<cudnnConvolutionBwdDataAlgoPerf_t>(
          CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT,
          measured ? "cudnnFindConvolutionBackwardDataAlgorithm"
                   : "cudnnGetConvolutionBackwardDataAlgorithm_v7",
          [&](int k, int* n, cudnnConvolutionBwdDataAlgoPerf_t* r) {
            return list(handle, w, y, c, x, k, n, r);
          },
          [&](cudnnConvolutionBwdDataAlgo_t algo, std::size_t* b) {
            return dnn.cudnnGetConvolutionBackwardDataWorkspaceSize(handle, w, y, c, x, algo, b);
          },
          pass_, dtype_, deterministic_only, c, tried);
    } else {
      auto list = measured ? dnn.cudnnFindConvolutionBackwardFilterAlgorithm
                           : dnn.cudnnGetConvolutionBackwardFilterAlgorithm_v7;
      a = pick_algorithm<cudnnConvolutionBwdFilterAlgoPerf_t>(
          CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT,
          measured ? "cudnnFindConvolutionBackwardFilterAlgorithm"
                   : "cudnnGetConvolutionBackwardFilterAlgorithm_v7",
          [&](int k, int* n, cudnnConvolutionBwdFilterAlgoPerf_t* r) {
            return list(handle, x, y, c, w, k, n, r);
          },
          [&](cudnnConvolutionBwdFilterAlgo_t algo, std::size_t* b) {
            return dnn.cudnnGetConvolutionBackwardFilterWorkspaceSize(handle, x, y, c, w, algo, b);
          },
          pass_, dtype_, deterministic_only, c, tried);
    }
    if (!a) return false;
    algorithm_ = *a;
    measured_ = measured;
    check_dnn(dnn.cudnnSetConvolutionMathType(c, algorithm_.math), "cudnnSetConvolutionMathType");
    // The scratch: the workspace, then the packed copies.
    scratch_ = align256(algorithm_.workspace);
    for (Operand* o : {&src_, &weights_, &dst_})
      if (o->staged) {
        o->offset = scratch_;
        scratch_ += align256(o->bytes);
      }
    return true;
  }

  void run(const RunContext& ctx) const override {
    const CudnnLibrary& dnn = cudnn();
    bool f64 = dtype_ == DType::f64;
    const void* one = f64 ? static_cast<const void*>(&kOneD) : &kOneF;
    const void* zero = f64 ? static_cast<const void*>(&kZeroD) : &kZeroF;
    auto* scratch = static_cast<std::byte*>(ctx.scratch);
    auto at = [&](const Operand& o) -> void* {
      return o.staged ? scratch + o.offset : ctx.at(o.value);
    };
    const Operand& out = pass_ == Pass::forward         ? dst_
                         : pass_ == Pass::backward_data ? src_
                                                        : weights_;
    for (const Operand* o : {&src_, &weights_, &dst_})
      if (o->staged && o != &out)
        check_dnn(dnn.cudnnTransformTensor(ctx.cudnn, one, o->view.get(), ctx.at(o->value), zero,
                                           o->call.get(), at(*o)),
                  "cudnnTransformTensor");
    void* ws = algorithm_.workspace > 0 ? ctx.scratch : nullptr;
    cudnnConvolutionDescriptor_t c = conv_.get();
    if (pass_ == Pass::forward)
      check_dnn(
          dnn.cudnnConvolutionForward(ctx.cudnn, one, src_.call.get(), at(src_), filter_.get(),
                                      at(weights_), c, cudnnConvolutionFwdAlgo_t(algorithm_.algo),
                                      ws, algorithm_.workspace, zero, dst_.call.get(), at(dst_)),
          "cudnnConvolutionForward");
    else if (pass_ == Pass::backward_data)
      check_dnn(dnn.cudnnConvolutionBackwardData(
                    ctx.cudnn, one, filter_.get(), at(weights_), dst_.call.get(), at(dst_), c,
                    cudnnConvolutionBwdDataAlgo_t(algorithm_.algo), ws, algorithm_.workspace, zero,
                    src_.call.get(), at(src_)),
                "cudnnConvolutionBackwardData");
    else
      check_dnn(dnn.cudnnConvolutionBackwardFilter(
                    ctx.cudnn, one, src_.call.get(), at(src_), dst_.call.get(), at(dst_), c,
                    cudnnConvolutionBwdFilterAlgo_t(algorithm_.algo), ws, algorithm_.workspace,
                    zero, filter_.get(), at(weights_)),
                "cudnnConvolutionBackwardFilter");
    if (out.staged)
      check_dnn(dnn.cudnnTransformTensor(ctx.cudnn, one, out.call.get(), at(out), zero,
                                         out.view.get(), ctx.at(out.value)),
                "cudnnTransformTensor");
  }

  std::string describe() const override {
    const char* pass = pass_ == Pass::forward         ? "forward"
                       : pass_ == Pass::backward_data ? "backward data"
                                                      : "backward filter";
    std::string repacked;
    for (const Operand* o : {&src_, &weights_, &dst_})
      if (o->staged)
        repacked += cat(repacked.empty() ? "" : " and ", o == &weights_ ? "weights"
                                                         : o == &src_   ? "src"
                                                                        : "dst");
    return cat("cuDNN ", pass, ", algo ", algorithm_name(pass_, algorithm_.algo),
               measured_ ? " (measured)" : " (heuristic)", ", ", window_, ", groups ", groups_,
               layout_ == Layout::nhwc ? ", NHWC" : "",
               algorithm_.math == CUDNN_TENSOR_OP_MATH ||
                       algorithm_.math == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION
                   ? ", tensor ops"
                   : "",
               algorithm_.deterministic ? "" : ", non-deterministic",
               repacked.empty() ? "" : ", " + repacked + " repacked");
  }

  std::size_t scratch_bytes() const override { return scratch_; }
  bool needs_cudnn() const override { return true; }

 private:
  // An operand as the call sees it (`call`): its own storage when it is packed in the
  // kernel's layout, else a packed copy at `offset` in the scratch, moved to or from the
  // view (`view`) by cudnnTransformTensor.
  struct Operand {
    ValueId value = 0;
    TensorDesc call, view;
    bool staged = false;
    std::size_t bytes = 0, offset = 0;
  };

  Operand operand(ValueId value, const Dims& v) const {
    Operand o;
    o.value = value;
    cudnnDataType_t type = data_type(dtype_);
    o.call = tensor_desc(type, {v.dims, packed_strides(v.dims, layout_)});
    if (!packed_in(v, layout_)) {
      o.staged = true;
      o.view = tensor_desc(type, settled(v));
      o.bytes = std::size_t(v.numel()) * std::size_t(dtype_size(dtype_));
    }
    return o;
  }

  Pass pass_;
  DType dtype_;
  Layout layout_;
  std::int64_t groups_;
  Operand src_, weights_, dst_;
  FilterDesc filter_;
  ConvDesc conv_;
  Algorithm algorithm_;
  bool measured_ = false;
  std::size_t scratch_ = 0;
  std::string window_;
};

// NHWC where the data is channels-last (f16 and bf16 then use tensor cores without
// transposes), else NCHW; NCHW, cuDNN's widest-supported layout, is always tried last.
// f64 stays NCHW.
std::vector<Layout> layouts(DType dtype, const Views& v) {
  auto channels_last = [](const Dims& d) {
    return packed_in(d, Layout::nhwc) && !packed_in(d, Layout::nchw);
  };
  if (dtype != DType::f64 && (channels_last(v.src) || channels_last(v.dst)))
    return {Layout::nhwc, Layout::nchw};
  return {Layout::nchw};
}

}  // namespace

// Whether algorithms are measured (cuDNN's Find) rather than taken from its heuristics.
bool measure_algorithms() {
  const char* v = std::getenv("GLIA_CUDNN_ALGORITHMS");
  return v == nullptr || std::string_view(v) != "heuristic";
}

// Find and the heuristics need a handle on the device: realise makes its planning handle
// under a ContextScope, once per device, and holds planning_mutex() while it asks; Find
// allocates and runs on the device, so it also waits for captures on other threads to end.
// A deterministic algorithm in either layout beats a non-deterministic one. A Find that
// fails falls back to the heuristics.
std::unique_ptr<CudaKernel> realise_convolution(const Graph& graph, const Kernel& kernel,
                                                const DeviceInfo& device) {
  const auto& s = std::get<ConvSpec>(kernel.spec);
  Views views;
  std::string why = views_of(s, views);
  check(why.empty() && dtype_declines(s.dtype).empty() && s.epilogue.empty(),
        "cuda backend: cuDNN cannot realise ", kernel.describe(graph), ": ", why);
  ContextScope scope(device);
  std::lock_guard<std::mutex> lock(planning_mutex());
  cudnnHandle_t handle = planning_handle(device);
  std::string tried;
  const bool measure = measure_algorithms();
  std::unique_lock<std::shared_mutex> no_capture(capture_guard(device), std::defer_lock);
  if (measure) no_capture.lock();
  auto choose = [&](bool measured) -> std::unique_ptr<CudaKernel> {
    for (bool deterministic_only : {true, false})
      for (Layout layout : layouts(s.dtype, views)) {
        if (!deterministic_only) tried += layout == Layout::nhwc ? " NHWC:" : " NCHW:";
        auto made = std::make_unique<CudnnConvolution>(s, views, layout);
        if (made->choose(handle, measured, deterministic_only,
                         deterministic_only ? nullptr : &tried))
          return made;
      }
    return nullptr;
  };
  if (measure) {
    try {
      if (auto made = choose(true)) return made;
    } catch (const Error& e) {
      tried += cat(" Find failed: ", e.what(), ";");
    }
  }
  if (auto made = choose(false)) return made;
  throw Error(cat("cuda: cuDNN has no algorithm for ", kernel.describe(graph), " on ", device.name,
                  " (tried", tried, ")"));
}

}  // namespace glia::detail::cuda
