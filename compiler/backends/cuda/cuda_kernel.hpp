// Internal to the `cuda` backend: its realisation of a Program (glia/compiler/program.hpp).
// Each kernel spec becomes a CudaKernel — a cuBLASLt matmul with its epilogue, a cuDNN
// convolution, NVRTC-generated kernels (fused groups, direct kernels, max pooling), or the
// reference kernel on the host — that enqueues its work on the executable's stream over
// device addresses from the placement.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "backends/cuda/libraries.hpp"
#include "glia/compiler/program.hpp"

namespace glia::detail::cuda {

struct DeviceInfo;

// What a kernel sees while it runs. Every address is on the executable's device. Its
// outputs' storage is garbage: it writes every element.
struct RunContext {
  void* const* values = nullptr;        // by value id: arena slices, inputs, outputs, constants
  CUstream stream = nullptr;            // a blocking stream of this workspace
  void* scratch = nullptr;              // 256-byte aligned, at least the largest scratch_bytes()
  int* status = nullptr;                // the run's status word, zero before the run
  cublasLtHandle_t cublaslt = nullptr;  // this workspace's; made when the program has matmuls
  cudnnHandle_t cudnn = nullptr;  // this workspace's, on `stream`; made when it has convolutions

  template <class T = std::byte>
  T* at(ValueId id) const {
    return static_cast<T*>(values[static_cast<std::size_t>(id)]);
  }
};

class CudaKernel {
 public:
  virtual ~CudaKernel() = default;
  // Enqueues the kernel's work on ctx.stream; it must not synchronise with the host
  // unless capturable() is false.
  virtual void run(const RunContext& ctx) const = 0;
  // How it runs, for describe(): "cuBLASLt (epilogue RELU_BIAS)", "NVRTC: 2 kernels".
  virtual std::string describe() const = 0;
  // Device scratch it needs while it runs (cuBLASLt's and cuDNN's workspaces, a
  // generated kernel's accumulators); the executable keeps the largest.
  virtual std::size_t scratch_bytes() const { return 0; }
  // False for kernels that wait for the host (the reference kernel): a program with one
  // is never captured as a CUDA graph.
  virtual bool capturable() const { return true; }
  // True when it may set the status word (an index out of range).
  virtual bool uses_status() const { return false; }
  // Which library handle it needs in RunContext.
  virtual bool needs_cublaslt() const { return false; }
  virtual bool needs_cudnn() const { return false; }
};

// Whether cuBLASLt realises a matmul kernel (its spec with the epilogue, read through its
// strides) and cuDNN a convolution: empty when it does, else why not (the lowering then
// asks again without the epilogue, or moves on). Decided from the spec alone: no device
// is needed, so the lowering is the same with and without one.
std::string cublaslt_declines(const Graph& graph, const Kernel& kernel);
std::string cudnn_declines(const Graph& graph, const Kernel& kernel);

// Why a dot_general or convolution node that the lowering leaves runs on the reference
// kernel on cuda ("" when it should not be left).
std::string matmul_fallback(const Graph& graph, ValueId node);
std::string convolution_fallback(const Graph& graph, ValueId node);

// The realisations; each is called only for a kernel its predicate accepted, and may do
// device work (cuBLASLt's heuristics, cuDNN's algorithm choice) on `device`'s context.
std::unique_ptr<CudaKernel> realise_matmul(const Graph& graph, const Kernel& kernel,
                                           const DeviceInfo& device);
std::unique_ptr<CudaKernel> realise_convolution(const Graph& graph, const Kernel& kernel,
                                                const DeviceInfo& device);
// all_reduce with NCCL on device buffers (a build with nccl.h; CudaTarget takes the
// CollectiveSpec only then).
std::unique_ptr<CudaKernel> realise_collective(const Kernel& kernel, const DeviceInfo& device);

// A program realised on a device: one CudaKernel per Program kernel (by position), and the
// module of its generated kernels (NVRTC's CUBIN, loaded on the device's context) that
// they launch from.
struct Realised {
  std::shared_ptr<void> module;  // the CUmodule; unloaded when the last holder goes
  std::vector<std::unique_ptr<CudaKernel>> kernels;
  std::size_t generated = 0;  // generated kernel functions in the module
  std::string cache;          // where the module's CUBIN came from: nvrtc, memory or disk
};
Realised realise_program(const Program& program, const DeviceInfo& device);

}  // namespace glia::detail::cuda
