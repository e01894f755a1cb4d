// The cuda backend's generated kernels without a GPU: shapes the op suite's small graphs
// do not reach (a block per result, split reductions, reductions of two shapes in one
// sweep, embeddings' scatter_add, dropout's random bits, f16), NVRTC's errors, and the
// disk cache that spares a second process the compile (max pooling's kernels:
// cuda_pool_test.cpp). Every test skips where glia was built without the cuda backend's
// code or NVRTC cannot be loaded.
#include <gtest/gtest.h>

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "compiler/cuda_test_util.hpp"
#include "expect_error.hpp"
#include "glia/autograd/grad.hpp"
#include "glia/compiler/cuda.hpp"
#include "glia/core/expr.hpp"
#include "scoped_env.hpp"

namespace glia {
namespace {

using testing::has;
using testing::traced;

TEST(CudaKernels, LongRowsFoldOnABlockPerResult) {
  // Softmax over rows of 1,000: max and sum sweeps of a block per row.
  Graph g = traced(
      {{f32, {64, 1000}}},
      [](const std::vector<Expr>& x) {
        Expr e = exp(x[0] - reduce_max(x[0], {1}, true));
        return e / sum(e, {1}, true);
      },
      "softmax");
  cuda::KernelReport r;
  COMPILE_OR_SKIP(r, g);
  EXPECT_TRUE(has(r.source, "block per result: 64 x 1000")) << r.source.substr(r.source.size() / 2);
  EXPECT_TRUE(has(r.source, "__syncthreads()"));
  EXPECT_GT(r.cubin_bytes, 0u);
}

TEST(CudaKernels, FewLongReductionsSplitOverBlocks) {
  // One result of 1,000,000 elements, and 32 columns of 86,528 (a channels-last bias
  // gradient): too few results to fill a GPU a block each, so each result's elements are
  // split over blocks (at least 2,048 elements a block, about 1,024 blocks in all) and a
  // second kernel combines their partials. 256 rows of 4,096 fill it as they are.
  Graph g = trace(
      [](const std::vector<Expr>& x) {
        return std::vector<Expr>{sum(x[0]), sum(x[1], {0}), sum(x[2], {1})};
      },
      {{f32, {1000000}}, {f32, {86528, 32}}, {f32, {256, 4096}}}, "split_sums");
  cuda::KernelReport r;
  COMPILE_OR_SKIP(r, g);
  EXPECT_TRUE(has(r.source, "split: 1 x 1000000 over 489 blocks a result")) << r.source;
  EXPECT_TRUE(has(r.source, "split: 1 results from 489 partials each"));
  EXPECT_TRUE(has(r.source, "split: 32 x 86528 over 32 blocks a result"));
  EXPECT_TRUE(has(r.source, "block per result: 256 x 4096"));
  EXPECT_TRUE(has(r.source, "unsigned char* scratch"));
  EXPECT_GT(r.cubin_bytes, 0u);
}

TEST(CudaKernels, ReductionsOfTwoShapesInOneSweepGetAKernelEach) {
  // Row and column sums of one matrix: one sweep, two reduction shapes.
  Graph g = trace(
      [](const std::vector<Expr>& x) {
        Expr y = x[0] * 2.0;
        return std::vector<Expr>{sum(y, {0}), sum(y, {1})};
      },
      {{f32, {6, 5}}}, "row_and_column_sums");
  cuda::KernelReport r;
  COMPILE_OR_SKIP(r, g);
  ASSERT_EQ(r.program.specs<FusedSpec>().size(), 1u) << r.program.describe();
  EXPECT_EQ(r.kernels, 2u) << r.source;
}

TEST(CudaKernels, EmbeddingGradientsScatterWithAtomics) {
  // gather forward, scatter_add in its gradient.
  Graph g = trace(
      [](const std::vector<Expr>& x) { return gradients(sum(take(x[0], x[1], 0) * 3.0), {x[0]}); },
      {{f32, {10, 4}}, {i32, {7}}}, "embedding_grad");
  cuda::KernelReport r;
  COMPILE_OR_SKIP(r, g);
  EXPECT_TRUE(has(r.source, "atomicAdd(")) << r.source.substr(r.source.size() / 2);
  EXPECT_TRUE(has(r.source, "atomicCAS(status")) << "out-of-range indices are reported";
}

TEST(CudaKernels, DropoutDrawsRandomWordsFromTheSharedThreefry) {
  Graph g = traced(
      {{u32, {2}}, {f32, {32, 10}}},
      [](const std::vector<Expr>& x) {
        return select(less(random::uniform(x[0], {32, 10}), 0.5), x[1] * 2.0, 0.0);
      },
      "dropout");
  cuda::KernelReport r;
  COMPILE_OR_SKIP(r, g);
  EXPECT_TRUE(has(r.source, "glia_random_word(key")) << r.source.substr(r.source.size() / 2);
}

TEST(CudaKernels, HalfPrecisionComputesInFloatAndRoundsToStorage) {
  Graph g = traced(
      {{f16, {8, 8}}, {bf16, {8}}},
      [](const std::vector<Expr>& x) { return tanh(x[0]) * cast(x[1], f16) + 1.0; }, "half");
  cuda::KernelReport r;
  COMPILE_OR_SKIP(r, g);
  EXPECT_TRUE(has(r.source, "glia_f16_from_f32(")) << r.source.substr(r.source.size() / 2);
  EXPECT_TRUE(has(r.source, "glia_f32_from_bf16("));
}

TEST(CudaKernels, AnArchitectureNvrtcDoesNotKnowIsAClearError) {
  Graph g = traced(
      {{f32, {4}}}, [](const std::vector<Expr>& x) { return exp(x[0]); }, "exp");
  cuda::KernelReport r;
  COMPILE_OR_SKIP(r, g);  // NVRTC loads
  testing::expect_error([&] { cuda::compile_kernels(g, "sm_1"); }, "NVRTC");
}

// ---- The disk cache --------------------------------------------------------------------

// A graph no earlier run has compiled: its constant is this moment's clock.
Graph fresh_graph(std::int64_t stamp) {
  return traced(
      {{f32, {16}}},
      [&](const std::vector<Expr>& x) { return exp(x[0]) * double(stamp % 1000003); }, "fresh");
}

// Run by CudaKernelCache.ASecondProcessReadsTheDisk in a child process: compiles the
// parent's graph and writes where the module came from.
TEST(CudaKernelCache, DISABLED_ChildProcess) {
  const char* stamp = std::getenv("GLIA_TEST_CUDA_STAMP");
  const char* out = std::getenv("GLIA_TEST_CUDA_OUT");
  if (stamp == nullptr || out == nullptr) GTEST_SKIP() << "run by ASecondProcessReadsTheDisk";
  cuda::KernelReport r = cuda::compile_kernels(fresh_graph(std::atoll(stamp)));
  std::ofstream(out) << r.cache;
}

TEST(CudaKernelCache, ASecondProcessReadsTheDisk) {
  namespace fs = std::filesystem;
  const auto stamp = std::chrono::steady_clock::now().time_since_epoch().count();
  const fs::path dir = fs::temp_directory_path() / cat("glia_cuda_cache_", ::getpid(), "_", stamp);
  testing::ScopedEnv cache("GLIA_CUDA_CACHE", dir.string());
  cuda::KernelReport first;
  COMPILE_OR_SKIP(first, fresh_graph(stamp));
  EXPECT_EQ(first.cache, "nvrtc");
  EXPECT_EQ(cuda::compile_kernels(fresh_graph(stamp)).cache, "memory");
  auto child = [&] {
    const fs::path out = dir / "child.txt";
    std::string command = cat(
        "GLIA_TEST_CUDA_STAMP=", stamp, " GLIA_TEST_CUDA_OUT=", out.string(), " /proc/", ::getpid(),
        "/exe --gtest_also_run_disabled_tests --gtest_filter=CudaKernelCache.DISABLED_ChildProcess "
        "> /dev/null 2>&1");
    EXPECT_EQ(std::system(command.c_str()), 0) << command;
    std::stringstream text;
    text << std::ifstream(out).rdbuf();
    return text.str();
  };
  EXPECT_EQ(child(), "disk");
  // A corrupt file is compiled again and replaced, never trusted.
  std::vector<fs::path> cubins;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".cubin") cubins.push_back(e.path());
  ASSERT_EQ(cubins.size(), 1u);
  const auto size = fs::file_size(cubins[0]);
  {
    std::fstream f(cubins[0], std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(std::streamoff(size - 5));
    const char byte = char(f.get() ^ 0xff);
    f.seekp(std::streamoff(size - 5));
    f.put(byte);
  }
  EXPECT_EQ(child(), "nvrtc");
  EXPECT_EQ(child(), "disk");
  fs::remove_all(dir);
}

}  // namespace
}  // namespace glia
