// Internal to the `cuda` backend: the devices, through the driver API. The driver is
// initialised once, on first use; every device is used through its primary context (the
// one the CUDA runtime, cuBLASLt and cuDNN use), made current on the calling thread by a
// ContextScope around each call into the driver.
#pragma once

#include <cstddef>
#include <new>
#include <shared_mutex>
#include <string>

#include "backends/cuda/libraries.hpp"

namespace glia::detail::cuda {

// The driver table, initialised (cuInit), with at least one device; glia::Error
// "no CUDA device: <why>" otherwise (no driver, cuInit failed, no device).
const DriverLibrary& driver();

// Why no device can be used here ("" when one can): the message driver() would throw.
std::string unavailable_reason();

// glia::Error "cuda: <what>: CUDA_ERROR_... (<the driver's words>)" unless r is success.
void check_cu(CUresult r, const char* what);

struct DeviceInfo {
  int index = 0;
  std::string name;          // "NVIDIA H100 80GB HBM3"
  int major = 0, minor = 0;  // compute capability
  int multiprocessors = 0;
  std::size_t memory = 0;  // bytes
  CUdevice device = 0;
  CUcontext context = nullptr;  // the primary context, retained for the process's life
  std::string arch() const;     // NVRTC's "sm_90"
};

int device_count();                   // throws like driver() when there is none
const DeviceInfo& device(int index);  // glia::Error for an index out of range

// Makes `info`'s context current on this thread for the scope (and puts back the one
// that was, if another). The nothrow form is for destructors and deallocation: it ignores
// the driver's errors (at process exit the driver may already be shut down).
class ContextScope {
 public:
  explicit ContextScope(const DeviceInfo& info);
  ContextScope(const DeviceInfo& info, std::nothrow_t) noexcept;
  ~ContextScope();
  ContextScope(const ContextScope&) = delete;
  ContextScope& operator=(const ContextScope&) = delete;

 private:
  CUcontext previous_ = nullptr;
  bool changed_ = false;
};

// Held shared while a stream of the device is being captured into a CUDA graph, and
// exclusively around what would break another thread's capture because it synchronises
// the device: freeing device memory, destroying library handles and streams, unloading
// modules.
std::shared_mutex& capture_guard(const DeviceInfo& info);

// Registers the allocator (cuMemAlloc; copies on a private non-blocking stream of the
// device, complete when they return) for
// Device::cuda(i) of every device, once; called by the backend and by
// glia::cuda::device_count(), so that Tensor::to(Device::cuda(i)) works after either.
void register_allocators();

}  // namespace glia::detail::cuda
