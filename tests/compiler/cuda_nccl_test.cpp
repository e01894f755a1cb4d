// all_reduce on the cuda backend: with NCCL (nccl.h at build time, libnccl at run time) the
// lowering gives a CollectiveSpec kernel that NCCL sums in place on device buffers; the
// library loads without a GPU. On a GPU, one process's NCCL communicator (the sum is the
// value) runs a graph against the interpreter. Skips where the pieces are missing.
#include <gtest/gtest.h>

#include "compiler/cpu_test_util.hpp"
#include "glia/compiler/cuda.hpp"
#include "glia/core/collective.hpp"

namespace glia::testing {
namespace {

Graph summed(std::int64_t id) {
  return trace(
      [&](const std::vector<Expr>& in) {
        return std::vector<Expr>{all_reduce(in[0] * 2.0, id, 1) + 1.0};
      },
      {TensorType{DType::f32, Shape{5}}}, "nccl_sum");
}

TEST(CudaNccl, LibraryLoadsAndTheLoweringSumsOnTheDevice) {
  if (!cuda::built()) GTEST_SKIP() << "glia was built without the cuda backend's code";
  const int version = cuda::nccl_version();
  if (version == 0) GTEST_SKIP() << "no NCCL in this build, or libnccl.so.2 does not load";
  EXPECT_GE(version, 20000);  // NCCL 2.x: major * 10000 + minor * 100 + patch
  static const auto one = std::make_shared<LocalCommunicator>();
  cuda::KernelReport r = cuda::compile_kernels(summed(register_communicator(one)));
  int collectives = 0;
  for (const Kernel& k : r.program.kernels) collectives += std::string(k.kind()) == "collective";
  EXPECT_EQ(collectives, 1) << r.program.describe();
}

TEST(CudaNccl, OneProcessOnTheGpu) {
  if (!cuda::unavailable().empty()) GTEST_SKIP() << cuda::unavailable();
  if (cuda::nccl_version() == 0) GTEST_SKIP() << "no NCCL";
  static const auto one = std::make_shared<LocalCommunicator>();
  Graph g = summed(register_communicator(one));
  Tensor x = Tensor::from<float>({1, -2, 0.5f, 3, 0}, Shape{5});
  auto exe = backend("cuda").compile(g, {});
  EXPECT_NE(exe->describe().find("NCCL all_reduce"), std::string::npos) << exe->describe();
  std::vector<Tensor> out = exe->run(std::vector<Tensor>{x.to(Device::cuda(0))});
  EXPECT_EQ(out[0].to_host().to_vector<float>(), (std::vector<float>{3, -3, 2, 7, 1}));
  // Host inputs are staged at one device address, and outputs alternate between two
  // buffers: from the third run on, the runs are captured and replayed as CUDA graphs,
  // NCCL's sum inside them, each on its own values.
  for (int run = 0; run < 8; ++run) {
    const float v = float(run) - 2.5f;
    Tensor in = Tensor::from<float>({v, 2 * v, -v, 0, 1}, Shape{5});
    EXPECT_EQ(exe->run(std::vector<Tensor>{in})[0].to_host().to_vector<float>(),
              (std::vector<float>{2 * v + 1, 4 * v + 1, -2 * v + 1, 1, 3}))
        << "run " << run;
  }
  EXPECT_NE(exe->describe().find("CUDA graphs: on"), std::string::npos) << exe->describe();
}

}  // namespace
}  // namespace glia::testing
