// all_reduce on the cuda backend with NCCL: the input copied to the output on the stream
// (unless they share storage), then ncclAllReduce in place on the same stream, so it runs
// in order with the kernels around it. One NCCL communicator per (glia communicator,
// device), made the first time the step runs, by every process together: rank 0's unique
// id travels over the glia communicator (MPI), the only host traffic.
#include <map>
#include <mutex>
#include <utility>

#include "backends/cuda/cuda_kernel.hpp"
#include "backends/cuda/device.hpp"
#include "glia/compiler/cuda.hpp"
#include "glia/core/collective.hpp"

namespace glia::detail::cuda {

namespace {

void check_nccl(ncclResult_t r, const char* what) {
  if (r != ncclSuccess) throw Error(cat("cuda: NCCL ", what, ": ", nccl().ncclGetErrorString(r)));
}

ncclDataType_t nccl_type(DType dtype) {
  switch (dtype) {
    case DType::f32:
      return ncclFloat32;
    case DType::f64:
      return ncclFloat64;
    case DType::i32:
      return ncclInt32;
    case DType::i64:
      return ncclInt64;
    default:
      throw Error(cat("cuda: NCCL all_reduce sums f32, f64, i32 or i64, got ", dtype));
  }
}

// Kept for the process's life: destroying one needs every process, which may be gone.
ncclComm_t nccl_communicator(std::int64_t id, const DeviceInfo& device) {
  static std::mutex mutex;
  static std::map<std::pair<std::int64_t, int>, ncclComm_t> made;
  std::lock_guard lock(mutex);
  auto key = std::pair{id, device.index};
  if (auto it = made.find(key); it != made.end()) return it->second;
  std::shared_ptr<Communicator> comm = registered_communicator(id);
  ncclUniqueId unique{};
  if (comm->rank() == 0) check_nccl(nccl().ncclGetUniqueId(&unique), "ncclGetUniqueId");
  comm->broadcast(&unique, sizeof unique, 0);
  ContextScope scope(device);
  ncclComm_t c = nullptr;
  check_nccl(nccl().ncclCommInitRank(&c, comm->size(), unique, comm->rank()), "ncclCommInitRank");
  made.emplace(key, c);
  return c;
}

class NcclAllReduce final : public CudaKernel {
 public:
  NcclAllReduce(const CollectiveSpec& spec, ValueId input, const DeviceInfo& device)
      : spec_(spec), input_(input), device_(device) {}
  void run(const RunContext& ctx) const override {
    const auto bytes = static_cast<std::size_t>(spec_.count) * dtype_size(spec_.dtype);
    void* out = ctx.at(spec_.node);
    const void* in = ctx.at(input_);
    if (bytes == 0) return;
    if (in != out)
      check_cu(driver().cuMemcpyDtoDAsync_v2(reinterpret_cast<CUdeviceptr>(out),
                                             reinterpret_cast<CUdeviceptr>(in), bytes, ctx.stream),
               "all_reduce: copy the input to the output");
    ncclComm_t comm = nccl_communicator(spec_.communicator, device_);
    check_nccl(nccl().ncclAllReduce(out, out, static_cast<std::size_t>(spec_.count),
                                    nccl_type(spec_.dtype), ncclSum, comm,
                                    reinterpret_cast<cudaStream_t>(ctx.stream)),
               "ncclAllReduce");
  }
  // Captured into CUDA graphs like the kernels around it (NCCL 2.9 on): a run is captured
  // only once its addresses repeat, so the communicator exists by then (made on the first
  // run, outside any capture).
  std::string describe() const override { return "NCCL all_reduce in place on the stream"; }

 private:
  CollectiveSpec spec_;
  ValueId input_;
  const DeviceInfo& device_;
};

}  // namespace

std::unique_ptr<CudaKernel> realise_collective(const Kernel& kernel, const DeviceInfo& device) {
  nccl_type(std::get<CollectiveSpec>(kernel.spec).dtype);  // refuses other dtypes here
  return std::make_unique<NcclAllReduce>(std::get<CollectiveSpec>(kernel.spec),
                                         kernel.inputs.front(), device);
}

}  // namespace glia::detail::cuda

namespace glia::cuda {

int nccl_version() {
  try {
    int v = 0;
    return detail::cuda::nccl().ncclGetVersion(&v) == ncclSuccess ? v : 0;
  } catch (const Error&) {
    return 0;
  }
}

}  // namespace glia::cuda
