// The cuda backend's realisation of a Program: generated kernels launched from the
// program's module, the reference kernel on the host, and the dispatch from each spec to
// its realisation (cuBLASLt, cuDNN, generated code).
#include <cstring>
#include <mutex>

#include "backends/cuda/cuda_kernel.hpp"
#include "backends/cuda/device.hpp"
#include "backends/cuda/generate.hpp"
#include "backends/cuda/nvrtc.hpp"
#include "glia/core/error.hpp"

namespace glia::detail::cuda {

namespace {

// The generated kernels of one Program kernel, launched in order on the stream.
class GeneratedLaunch final : public CudaKernel {
 public:
  GeneratedLaunch(const std::vector<GeneratedKernel>& made, CUmodule module) {
    for (const GeneratedKernel& k : made) {
      Launch l;
      check_cu(driver().cuModuleGetFunction(&l.function, module, k.name.c_str()),
               "cuModuleGetFunction");
      check(k.blocks >= 1 && k.blocks <= std::int64_t{0x7fffffff}, "cuda: kernel ", k.name,
            " asks for ", k.blocks, " blocks");
      l.blocks = static_cast<unsigned>(k.blocks);
      check(k.params.size() <= kMaxParams, "cuda: kernel ", k.name, " has ", k.params.size(),
            " parameters, more than ", kMaxParams);
      l.params = k.params;
      l.name = k.name;
      for (ValueId p : k.params) status_ = status_ || p == kStatusParam;
      scratch_ = std::max(scratch_, static_cast<std::size_t>(k.scratch_bytes));
      what_ += cat(what_.empty() ? "" : "; ", k.what);
      launches_.push_back(std::move(l));
    }
  }

  void run(const RunContext& ctx) const override {
    for (const Launch& l : launches_) {
      // One device address per parameter, and the array of their addresses the driver
      // reads the arguments from.
      void* addresses[kMaxParams];
      void* arguments[kMaxParams];
      for (std::size_t i = 0; i < l.params.size(); ++i) {
        ValueId p = l.params[i];
        addresses[i] = p == kScratchParam  ? ctx.scratch
                       : p == kStatusParam ? static_cast<void*>(ctx.status)
                                           : ctx.values[std::size_t(p)];
        arguments[i] = &addresses[i];
      }
      check_cu(driver().cuLaunchKernel(l.function, l.blocks, 1, 1, kThreads, 1, 1, 0, ctx.stream,
                                       arguments, nullptr),
               l.name.c_str());
    }
  }

  std::string describe() const override {
    return cat("NVRTC: ", launches_.size(), launches_.size() == 1 ? " kernel" : " kernels",
               what_.empty() ? "" : " (" + what_ + ")");
  }
  std::size_t scratch_bytes() const override { return scratch_; }
  bool uses_status() const override { return status_; }

 private:
  static constexpr std::size_t kMaxParams = 64;
  struct Launch {
    CUfunction function = nullptr;
    unsigned blocks = 1;
    std::vector<ValueId> params;
    std::string name;
  };
  std::vector<Launch> launches_;
  std::size_t scratch_ = 0;
  bool status_ = false;
  std::string what_;
};

// The node's op on its reference kernel on the host: the operands copied to the host on
// the stream (after the work before them), the result copied back, the stream drained
// each way. Never captured in a CUDA graph.
class ReferenceKernel final : public CudaKernel {
 public:
  ReferenceKernel(const Graph& graph, ValueId id, std::string reason)
      : node_(graph.node(id)), id_(id), reason_(std::move(reason)) {
    for (ValueId in : node_.inputs) types_.push_back(graph.type(in));
  }
  void run(const RunContext& ctx) const override {
    const DriverLibrary& d = driver();
    std::vector<Tensor> args;
    args.reserve(node_.inputs.size());
    for (std::size_t i = 0; i < node_.inputs.size(); ++i) {
      Tensor host = Tensor::uninitialized(types_[i].dtype, types_[i].shape);
      if (host.nbytes() > 0)
        check_cu(d.cuMemcpyDtoHAsync_v2(host.raw_data(),
                                        reinterpret_cast<CUdeviceptr>(ctx.at(node_.inputs[i])),
                                        host.nbytes(), ctx.stream),
                 "reference kernel: copy an operand to the host");
      args.push_back(std::move(host));
    }
    check_cu(d.cuStreamSynchronize(ctx.stream), "reference kernel: copy operands to the host");
    Tensor result = op_info(node_.op).kernel(args, node_.attrs, node_.type);
    if (result.nbytes() > 0)
      check_cu(d.cuMemcpyHtoDAsync_v2(reinterpret_cast<CUdeviceptr>(ctx.at(id_)), result.raw_data(),
                                      result.nbytes(), ctx.stream),
               "reference kernel: copy the result to the device");
    // The result's host memory must outlive the copy.
    check_cu(d.cuStreamSynchronize(ctx.stream), "reference kernel: copy the result back");
  }
  std::string describe() const override {
    return cat("reference kernel on the host (", reason_, ")");
  }
  bool capturable() const override { return false; }

 private:
  Node node_;
  ValueId id_;
  std::string reason_;
  std::vector<TensorType> types_;
};

}  // namespace

Realised realise_program(const Program& program, const DeviceInfo& device) {
  ContextScope scope(device);
  const DriverLibrary& d = driver();
  Realised out;
  ProgramKernels made = generate(program);
  out.generated = made.count;
  CUmodule module = nullptr;
  if (made.count > 0) {
    CacheHit hit = CacheHit::none;
    std::string cubin = compile_cubin(made.source, device.arch(), &hit);
    out.cache = hit == CacheHit::memory ? "memory" : hit == CacheHit::disk ? "disk" : "nvrtc";
    {
      std::unique_lock guard(capture_guard(device));  // loading may synchronise the device
      check_cu(d.cuModuleLoadData(&module, cubin.data()), "cuModuleLoadData");
    }
    const DeviceInfo* owner = &device;
    out.module = std::shared_ptr<void>(module, [owner](void* m) {
      ContextScope unload_scope(*owner, std::nothrow);
      std::unique_lock guard(capture_guard(*owner));
      driver().cuModuleUnload(static_cast<CUmodule>(m));
    });
  }
  for (std::size_t i = 0; i < program.kernels.size(); ++i) {
    const Kernel& k = program.kernels[i];
    std::unique_ptr<CudaKernel> kernel;
    if (std::holds_alternative<MatmulSpec>(k.spec))
      kernel = realise_matmul(program.graph, k, device);
    else if (std::holds_alternative<ConvSpec>(k.spec))
      kernel = realise_convolution(program.graph, k, device);
#ifdef GLIA_HAVE_NCCL
    else if (std::holds_alternative<CollectiveSpec>(k.spec))
      kernel = realise_collective(k, device);
#endif
    else if (const auto* ref = std::get_if<ReferenceSpec>(&k.spec))
      kernel = std::make_unique<ReferenceKernel>(program.graph, ref->node, ref->reason);
    else
      kernel = std::make_unique<GeneratedLaunch>(made.by_kernel[i], module);
    check(kernel != nullptr, "cuda backend: no realisation of ", k.describe(program.graph));
    out.kernels.push_back(std::move(kernel));
  }
  return out;
}

}  // namespace glia::detail::cuda
