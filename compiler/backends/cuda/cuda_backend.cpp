// The `cuda` backend: compiling lowers the graph into a Program for the cuda target
// (cuda_target.hpp) and realises it on a device (kernels.cpp: cuBLASLt, cuDNN, the
// program's NVRTC module, reference kernels on the host). Running binds where every value
// lives on the device — the arena slices of the program's placement, the inputs (device
// tensors as they are; host tensors staged through pinned memory and uploaded on the
// stream), the output buffers (a donated input's storage, or one of two device buffers
// per output used in turn), the constants uploaded once — and enqueues the kernels on the
// workspace's stream. Once a run's addresses repeat (a training step whose parameters
// and state are donated back, a predictor fed through the same staging buffers), its
// kernels are captured as a CUDA graph and replayed. A run returns when the device is
// done, with its outputs on the device.
#include "backends/cuda/cuda_backend.hpp"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "backends/cuda/cuda_kernel.hpp"
#include "backends/cuda/cuda_target.hpp"
#include "backends/cuda/device.hpp"
#include "glia/core/buffer.hpp"
#include "glia/core/error.hpp"
#include "src/placed_run.hpp"

namespace glia::detail {

namespace {

using cuda::check_cu;
using cuda::ContextScope;
using cuda::CudaKernel;
using cuda::DeviceInfo;
using cuda::driver;

// Page-locked host memory, so that an upload from it is a true asynchronous copy.
struct Pinned {
  void* data = nullptr;
  std::size_t bytes = 0;
  Pinned() = default;
  Pinned(const Pinned&) = delete;
  Pinned& operator=(const Pinned&) = delete;
  ~Pinned() { free(); }
  void free() noexcept {
    if (data != nullptr) driver().cuMemFreeHost(data);
    data = nullptr;
    bytes = 0;
  }
  void reserve(std::size_t n) {
    if (n <= bytes) return;
    free();
    check_cu(driver().cuMemHostAlloc(&data, n, 0), "cuMemHostAlloc (a pinned staging buffer)");
    bytes = n;
  }
};

// A captured run: the addresses it was captured with, and its instantiated graph.
struct Captured {
  std::vector<void*> key;
  CUgraphExec exec = nullptr;
};

// Per concurrent run: a stream, the arena, scratch, the status word, the value table, the
// staging of host inputs, the output buffers, the library handles and captured graphs.
struct Workspace {
  const DeviceInfo* device = nullptr;
  CUstream stream = nullptr;
  Tensor arena, scratch, status;  // device tensors (u8 / i32)
  Pinned status_host;
  std::vector<void*> values;                    // by value id
  std::vector<Tensor> staged;                   // by input: the device copy of a host input
  std::vector<std::unique_ptr<Pinned>> pinned;  // by input: its pinned staging
  RunBinding binding;                           // this run's inputs and outputs
  cublasLtHandle_t cublaslt = nullptr;
  cudnnHandle_t cudnn = nullptr;
  std::vector<Captured> graphs;          // least recently launched first
  std::vector<std::vector<void*>> seen;  // addresses of recent runs not captured, oldest first

  // Errors are ignored: at process exit the driver may be gone already.
  ~Workspace() {
    ContextScope scope(*device, std::nothrow);
    const auto& d = driver();
    if (stream != nullptr) d.cuStreamSynchronize(stream);
    std::unique_lock guard(cuda::capture_guard(*device));  // handles synchronise the device
    for (Captured& c : graphs) d.cuGraphExecDestroy(c.exec);
    if (cublaslt != nullptr) cuda::cublaslt().cublasLtDestroy(cublaslt);
    if (cudnn != nullptr) cuda::cudnn().cudnnDestroy(cudnn);
    if (stream != nullptr) d.cuStreamDestroy_v2(stream);
    status_host.free();
    for (auto& p : pinned) p->free();
  }
};

// Captured graphs kept per workspace, and addresses of uncaptured runs remembered: a
// caller that keeps each run's outputs while the next one runs alternates between two
// sets of output buffers, so both are captured.
constexpr std::size_t kMaxGraphs = 4;

bool graphs_allowed_by_environment() {
  const char* v = std::getenv("GLIA_CUDA_GRAPHS");
  return v == nullptr || (std::strcmp(v, "0") != 0 && std::strcmp(v, "off") != 0);
}

class CudaExecutable final : public PlacedExecutable {
 public:
  CudaExecutable(const Graph& graph, const CompileOptions::Cuda& options, const DeviceInfo& device)
      : device_(device), where_(Device::cuda(device.index)) {
    program_ = lower(graph, cuda::CudaTarget());
    realised_ = cuda::realise_program(program_, device_);
    graphs_ = options.graphs && graphs_allowed_by_environment();
    graphs_why_ = !options.graphs                    ? "off (CompileOptions)"
                  : !graphs_allowed_by_environment() ? "off (GLIA_CUDA_GRAPHS)"
                                                     : "on";
    for (const auto& k : realised_.kernels) {
      scratch_bytes_ = std::max(scratch_bytes_, k->scratch_bytes());
      uses_status_ = uses_status_ || k->uses_status();
      needs_cublaslt_ = needs_cublaslt_ || k->needs_cublaslt();
      needs_cudnn_ = needs_cudnn_ || k->needs_cudnn();
      if (!k->capturable() && graphs_) {
        graphs_ = false;
        graphs_why_ = "off (a kernel runs on the host)";
      }
    }
    const Graph& g = program_.graph;
    constants_.resize(static_cast<std::size_t>(g.size()));
    for (std::size_t i = 0; i < program_.placement.size(); ++i) {
      const Placement& p = program_.placement[i];
      if (p.kind == Placement::Kind::constant)
        constants_[i] = std::get<ConstantAttrs>(g.nodes()[i].attrs).value.to(where_);
    }
  }

  const Program& program() const override { return program_; }

  std::string describe() const override {
    std::string graphs = graphs_why_;
    if (capture_failed_.load(std::memory_order_relaxed)) {
      std::lock_guard lock(capture_mutex_);
      graphs = cat("off (capture failed: ", capture_error_, ")");
    }
    return cat("cuda executable on ", where_, " (", device_.name, ", ", device_.arch(), ", ",
               device_.multiprocessors, " SMs); CUDA graphs: ", graphs,
               "; generated kernels: ", realised_.generated,
               realised_.generated > 0 ? cat(" (module from ", realised_.cache, ")") : "", "\n",
               program_.describe([&](std::size_t k) { return realised_.kernels[k]->describe(); }));
  }

 private:
  std::vector<Tensor> execute(std::span<const Tensor* const> inputs,
                              std::vector<Tensor>* donor) const override;
  std::unique_ptr<Workspace> make_workspace() const;
  void enqueue(Workspace& ws) const;
  void launch(Workspace& ws) const;

  const DeviceInfo& device_;
  Device where_;
  Program program_;
  cuda::Realised realised_;
  std::vector<Tensor> constants_;  // by value id: the graph's constants on the device
  std::size_t scratch_bytes_ = 0;
  bool uses_status_ = false, needs_cublaslt_ = false, needs_cudnn_ = false;
  bool graphs_ = true;
  std::string graphs_why_;
  mutable std::atomic<bool> capture_failed_{false};
  mutable std::mutex capture_mutex_;
  mutable std::string capture_error_;  // why the capture failed, under capture_mutex_
  WorkspacePool<Workspace> pool_;
};

std::unique_ptr<Workspace> CudaExecutable::make_workspace() const {
  const Graph& g = program_.graph;
  auto ws = std::make_unique<Workspace>();
  ws->device = &device_;
  // Non-blocking: a blocking stream being captured would make the legacy default stream
  // unusable for every other thread meanwhile. A run waits for its stream before it
  // returns, and the allocator's copies wait for theirs, so nothing relies on the legacy
  // stream's ordering.
  check_cu(driver().cuStreamCreate(&ws->stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  ws->arena = Tensor::uninitialized(
      DType::u8, Shape{std::max<std::int64_t>(program_.memory.arena_bytes, 256)}, where_);
  if (scratch_bytes_ > 0)
    ws->scratch = Tensor::uninitialized(DType::u8, Shape{std::int64_t(scratch_bytes_)}, where_);
  ws->status = Tensor::uninitialized(DType::i32, Shape{1}, where_);
  ws->status_host.reserve(sizeof(int));
  auto* base = static_cast<std::byte*>(ws->arena.data_ptr());
  ws->values.assign(static_cast<std::size_t>(g.size()), nullptr);
  for (std::size_t i = 0; i < ws->values.size(); ++i) {
    const Placement& p = program_.placement[i];
    if (p.kind == Placement::Kind::arena) ws->values[i] = base + p.offset;
    if (p.kind == Placement::Kind::constant)
      ws->values[i] = const_cast<void*>(constants_[i].data_ptr());
  }
  const std::size_t n = g.parameters().size();
  ws->staged.resize(n);
  for (std::size_t i = 0; i < n; ++i) ws->pinned.push_back(std::make_unique<Pinned>());
  ws->binding = RunBinding(program_, where_);
  if (needs_cublaslt_) {
    auto status = cuda::cublaslt().cublasLtCreate(&ws->cublaslt);
    check(status == CUBLAS_STATUS_SUCCESS, "cuda: cublasLtCreate failed with status ", int(status));
  }
  if (needs_cudnn_) {
    const auto& dnn = cuda::cudnn();
    auto status = dnn.cudnnCreate(&ws->cudnn);
    check(status == CUDNN_STATUS_SUCCESS,
          "cuda: cudnnCreate failed: ", dnn.cudnnGetErrorString(status));
    status = dnn.cudnnSetStream(ws->cudnn, ws->stream);
    check(status == CUDNN_STATUS_SUCCESS,
          "cuda: cudnnSetStream failed: ", dnn.cudnnGetErrorString(status));
  }
  return ws;
}

// Every kernel's work, in program order, on the workspace's stream.
void CudaExecutable::enqueue(Workspace& ws) const {
  cuda::RunContext ctx;
  ctx.values = ws.values.data();
  ctx.stream = ws.stream;
  ctx.scratch = ws.scratch.defined() ? ws.scratch.data_ptr() : nullptr;
  ctx.status = static_cast<int*>(ws.status.data_ptr());
  ctx.cublaslt = ws.cublaslt;
  ctx.cudnn = ws.cudnn;
  for (const auto& k : realised_.kernels) k->run(ctx);
}

// Runs the kernels: by replaying the graph captured for these addresses, by capturing
// one when addresses seen recently come again, or directly. A capture that fails (a
// library call that cannot be captured) turns graphs off for the executable, and the run
// goes on directly.
void CudaExecutable::launch(Workspace& ws) const {
  const auto& d = driver();
  if (!graphs_ || capture_failed_.load(std::memory_order_relaxed)) return enqueue(ws);
  auto found = std::find_if(ws.graphs.begin(), ws.graphs.end(),
                            [&](const Captured& c) { return c.key == ws.values; });
  if (found != ws.graphs.end()) {
    std::rotate(found, found + 1, ws.graphs.end());  // now the most recently launched
    check_cu(d.cuGraphLaunch(ws.graphs.back().exec, ws.stream), "cuGraphLaunch");
    return;
  }
  auto seen = std::find(ws.seen.begin(), ws.seen.end(), ws.values);
  if (seen == ws.seen.end()) {  // the first run with these addresses runs directly
    if (ws.seen.size() == kMaxGraphs) ws.seen.erase(ws.seen.begin());
    ws.seen.push_back(ws.values);
    return enqueue(ws);
  }
  ws.seen.erase(seen);
  Captured c;
  c.key = ws.values;
  try {
    std::shared_lock guard(cuda::capture_guard(device_));
    check_cu(d.cuStreamBeginCapture_v2(ws.stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL),
             "cuStreamBeginCapture");
    CUgraph graph = nullptr;
    try {
      enqueue(ws);
    } catch (...) {
      d.cuStreamEndCapture(ws.stream, &graph);
      if (graph != nullptr) d.cuGraphDestroy(graph);
      throw;
    }
    check_cu(d.cuStreamEndCapture(ws.stream, &graph), "cuStreamEndCapture");
    CUresult r = d.cuGraphInstantiateWithFlags(&c.exec, graph, 0);
    d.cuGraphDestroy(graph);
    check_cu(r, "cuGraphInstantiate");
  } catch (const Error& e) {
    {
      std::lock_guard lock(capture_mutex_);
      capture_error_ = e.what();
    }
    capture_failed_.store(true, std::memory_order_relaxed);
    return enqueue(ws);  // a real error of the kernels shows here again
  }
  if (ws.graphs.size() == kMaxGraphs) {
    d.cuGraphExecDestroy(ws.graphs.front().exec);
    ws.graphs.erase(ws.graphs.begin());
  }
  ws.graphs.push_back(std::move(c));
  check_cu(d.cuGraphLaunch(ws.graphs.back().exec, ws.stream), "cuGraphLaunch");
}

std::vector<Tensor> CudaExecutable::execute(std::span<const Tensor* const> inputs,
                                            std::vector<Tensor>* donor) const {
  const Graph& g = program_.graph;
  ContextScope scope(device_);
  std::unique_ptr<Workspace> ws = pool_.take([&] { return make_workspace(); });
  const auto& d = driver();
  RunBinding& bind = ws->binding;
  auto release = [&] {
    bind.release();
    pool_.give_back(std::move(ws));
  };
  std::vector<Tensor> outputs;
  try {
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      const Tensor* t = &bind.input(i, inputs, donor);
      void* address = nullptr;
      if (t->device() == where_) {
        address = const_cast<void*>(t->data_ptr());
      } else {
        check(t->device().is_host(), "run '", g.name(), "' on ", where_, ": input ", i, " is on ",
              t->device(), "; move it to ", where_, " or the host");
        // A host input: copied into pinned memory, then uploaded on the stream into this
        // workspace's buffer for it.
        Tensor& staged = ws->staged[i];
        if (!staged.defined()) staged = Tensor::uninitialized(t->dtype(), t->shape(), where_);
        const std::size_t bytes = t->nbytes();
        if (bytes > 0) {
          Pinned& pinned = *ws->pinned[i];
          pinned.reserve(bytes);
          std::memcpy(pinned.data, t->raw_data(), bytes);
          check_cu(d.cuMemcpyHtoDAsync_v2(reinterpret_cast<CUdeviceptr>(staged.data_ptr()),
                                          pinned.data, bytes, ws->stream),
                   "upload an input");
        }
        address = staged.data_ptr();
      }
      ws->values[static_cast<std::size_t>(g.parameters()[i])] = address;
    }
    for (std::size_t s = 0; s < bind.slots(); ++s)
      ws->values[static_cast<std::size_t>(bind.slot_value(s))] =
          const_cast<void*>(bind.output(s, donor != nullptr).data_ptr());
    if (uses_status_)
      check_cu(d.cuMemsetD32Async(reinterpret_cast<CUdeviceptr>(ws->status.data_ptr()), 0, 1,
                                  ws->stream),
               "clear the status word");
    launch(*ws);
    if (uses_status_)
      check_cu(d.cuMemcpyDtoHAsync_v2(ws->status_host.data,
                                      reinterpret_cast<CUdeviceptr>(ws->status.data_ptr()),
                                      sizeof(int), ws->stream),
               "read the status word");
    check_cu(d.cuStreamSynchronize(ws->stream), cat("run '", g.name(), "'").c_str());
    if (uses_status_ && *static_cast<int*>(ws->status_host.data) != 0)
      throw Error(cat("run '", g.name(), "' on ", where_,
                      ": an index out of range in gather or scatter_add (the interpreter and "
                      "the cpu backend name the index)"));
    outputs = bind.outputs(inputs, donor != nullptr,
                           [&](ValueId c) { return constants_[std::size_t(c)]; });
  } catch (...) {
    // The stream may hold work that reads these buffers: drain it before they are reused.
    d.cuStreamSynchronize(ws->stream);
    release();
    throw;
  }
  release();
  return outputs;
}

class CudaBackend final : public Backend {
 public:
  std::string_view name() const override { return "cuda"; }
  // Every op runs: on cuBLASLt, cuDNN or generated kernels where it can, else its
  // reference kernel on the host.
  bool supports(Op) const override { return true; }
  std::string unavailable() const override { return cuda::unavailable_reason(); }
  std::unique_ptr<Executable> compile(const Graph& graph,
                                      const CompileOptions& options) const override {
    const DeviceInfo& device = cuda::device(options.cuda.device);  // "no CUDA device: ..."
    cuda::register_allocators();
    if (options.verify) verify(graph);
    return std::make_unique<CudaExecutable>(graph, options.cuda, device);
  }
};

}  // namespace

std::unique_ptr<Backend> make_cuda_backend() { return std::make_unique<CudaBackend>(); }

}  // namespace glia::detail
