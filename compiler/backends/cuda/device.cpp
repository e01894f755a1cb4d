// The driver initialised once, the devices' primary contexts, and the allocator that
// puts tensors on them.
#include "backends/cuda/device.hpp"

#include <deque>
#include <memory>
#include <mutex>
#include <vector>

#include "glia/core/buffer.hpp"
#include "glia/core/error.hpp"

namespace glia::detail::cuda {

namespace {

std::string result_text(const DriverLibrary& d, CUresult r) {
  const char* name = nullptr;
  const char* words = nullptr;
  if (d.cuGetErrorName(r, &name) != CUDA_SUCCESS || name == nullptr) name = "CUDA_ERROR_UNKNOWN";
  if (d.cuGetErrorString(r, &words) != CUDA_SUCCESS || words == nullptr) words = "no description";
  return cat(name, " (", words, ")");
}

struct State {
  const DriverLibrary* driver = nullptr;
  std::string unavailable;  // why there is no device; empty when there is
  std::vector<DeviceInfo> devices;
  std::deque<std::shared_mutex> capture_guards;  // by device
};

// Never destroyed: device buffers and executables may outlive static teardown.
const State& state() {
  static const State& s = *new State([] {
    State made;
    try {
      made.driver = &driver_library();
    } catch (const Error& e) {
      made.unavailable = cat("no NVIDIA driver here: ", e.what());
      return made;
    }
    const DriverLibrary& d = *made.driver;
    if (CUresult r = d.cuInit(0); r != CUDA_SUCCESS) {
      made.unavailable = cat("cuInit failed: ", result_text(d, r));
      return made;
    }
    int count = 0;
    if (CUresult r = d.cuDeviceGetCount(&count); r != CUDA_SUCCESS || count == 0) {
      made.unavailable = r != CUDA_SUCCESS ? cat("cuDeviceGetCount failed: ", result_text(d, r))
                                           : std::string("the driver sees no GPU");
      return made;
    }
    for (int i = 0; i < count; ++i) {
      DeviceInfo info;
      info.index = i;
      char name[256] = {};
      CUresult r = d.cuDeviceGet(&info.device, i);
      if (r == CUDA_SUCCESS) r = d.cuDeviceGetName(name, sizeof name - 1, info.device);
      if (r == CUDA_SUCCESS)
        r = d.cuDeviceGetAttribute(&info.major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
                                   info.device);
      if (r == CUDA_SUCCESS)
        r = d.cuDeviceGetAttribute(&info.minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
                                   info.device);
      if (r == CUDA_SUCCESS)
        r = d.cuDeviceGetAttribute(&info.multiprocessors, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
                                   info.device);
      if (r == CUDA_SUCCESS) r = d.cuDeviceTotalMem_v2(&info.memory, info.device);
      if (r == CUDA_SUCCESS) r = d.cuDevicePrimaryCtxRetain(&info.context, info.device);
      if (r != CUDA_SUCCESS) {
        made.unavailable = cat("device ", i, " cannot be opened: ", result_text(d, r));
        made.devices.clear();
        return made;
      }
      info.name = name;
      made.devices.push_back(std::move(info));
      made.capture_guards.emplace_back();
    }
    return made;
  }());
  return s;
}

// cuMemAlloc'd device memory. Copies run on a non-blocking stream of the allocator's own
// and are waited for, so they are complete when they return and never touch the legacy
// default stream, which is unusable while a blocking stream is being captured.
class DeviceAllocator final : public Allocator {
 public:
  explicit DeviceAllocator(const DeviceInfo& info) : info_(info) {
    ContextScope scope(info_);
    check_cu(driver().cuStreamCreate(&stream_, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  }
  std::string name() const override { return "cuMemAlloc"; }
  void* allocate(std::size_t bytes) override {
    ContextScope scope(info_);
    CUdeviceptr p = 0;
    CUresult r = driver().cuMemAlloc_v2(&p, bytes);
    if (r != CUDA_SUCCESS) {
      std::size_t free = 0, total = 0;
      driver().cuMemGetInfo_v2(&free, &total);
      throw Error(cat("cuda:", info_.index, ": cannot allocate ", bytes, " bytes (", free, " of ",
                      total, " free): ", result_text(driver(), r)));
    }
    return reinterpret_cast<void*>(p);
  }
  // cuMemFree synchronises the device: never while another thread captures.
  void deallocate(void* data, std::size_t) noexcept override {
    ContextScope scope(info_, std::nothrow);
    std::unique_lock guard(capture_guard(info_));
    driver().cuMemFree_v2(reinterpret_cast<CUdeviceptr>(data));
  }
  void copy_from_host(void* device_dst, const void* host_src, std::size_t bytes) override {
    ContextScope scope(info_);
    check_cu(driver().cuMemcpyHtoDAsync_v2(reinterpret_cast<CUdeviceptr>(device_dst), host_src,
                                           bytes, stream_),
             "copy to the device");
    check_cu(driver().cuStreamSynchronize(stream_), "copy to the device");
  }
  void copy_to_host(void* host_dst, const void* device_src, std::size_t bytes) override {
    ContextScope scope(info_);
    check_cu(driver().cuMemcpyDtoHAsync_v2(host_dst, reinterpret_cast<CUdeviceptr>(device_src),
                                           bytes, stream_),
             "copy to the host");
    check_cu(driver().cuStreamSynchronize(stream_), "copy to the host");
  }
  void copy_within(void* device_dst, const void* device_src, std::size_t bytes) override {
    ContextScope scope(info_);
    check_cu(
        driver().cuMemcpyDtoDAsync_v2(reinterpret_cast<CUdeviceptr>(device_dst),
                                      reinterpret_cast<CUdeviceptr>(device_src), bytes, stream_),
        "copy on the device");
    check_cu(driver().cuStreamSynchronize(stream_), "copy on the device");
  }

 private:
  const DeviceInfo& info_;
  CUstream stream_ = nullptr;  // lives as long as the process (the allocator is never dropped)
};

}  // namespace

const DriverLibrary& driver() {
  const State& s = state();
  if (!s.unavailable.empty()) throw Error(cat("no CUDA device: ", s.unavailable));
  return *s.driver;
}

std::string unavailable_reason() {
  const State& s = state();
  return s.unavailable.empty() ? "" : cat("no CUDA device: ", s.unavailable);
}

void check_cu(CUresult r, const char* what) {
  if (r != CUDA_SUCCESS) [[unlikely]]
    throw Error(cat("cuda: ", what, ": ", result_text(*state().driver, r)));
}

std::string DeviceInfo::arch() const { return cat("sm_", major, minor); }

int device_count() {
  driver();
  return static_cast<int>(state().devices.size());
}

const DeviceInfo& device(int index) {
  int count = device_count();
  check(index >= 0 && index < count, "cuda:", index, ": no such device (", count,
        count == 1 ? " device" : " devices", " present)");
  return state().devices[std::size_t(index)];
}

ContextScope::ContextScope(const DeviceInfo& info) {
  const DriverLibrary& d = *state().driver;
  check_cu(d.cuCtxGetCurrent(&previous_), "cuCtxGetCurrent");
  if (previous_ != info.context) {
    check_cu(d.cuCtxSetCurrent(info.context), "cuCtxSetCurrent");
    changed_ = true;
  }
}

ContextScope::ContextScope(const DeviceInfo& info, std::nothrow_t) noexcept {
  const DriverLibrary& d = *state().driver;
  if (d.cuCtxGetCurrent(&previous_) == CUDA_SUCCESS && previous_ != info.context)
    changed_ = d.cuCtxSetCurrent(info.context) == CUDA_SUCCESS;
}

ContextScope::~ContextScope() {
  if (changed_) state().driver->cuCtxSetCurrent(previous_);
}

std::shared_mutex& capture_guard(const DeviceInfo& info) {
  return const_cast<State&>(state()).capture_guards[std::size_t(info.index)];
}

void register_allocators() {
  static std::once_flag once;
  std::call_once(once, [] {
    for (const DeviceInfo& info : state().devices)
      if (!has_allocator(Device::cuda(info.index)))
        register_allocator(Device::cuda(info.index), std::make_shared<DeviceAllocator>(info));
  });
}

}  // namespace glia::detail::cuda
