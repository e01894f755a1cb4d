// The cuda backend's generated kernels without a GPU: shapes the op suite's small graphs
// do not reach (a block per result, reductions of two shapes in one sweep, embeddings'
// scatter_add, dropout's random bits, f16), max pooling (its kernels also run on the host
// against the interpreter), NVRTC's errors, and the disk cache that spares a second
// process the compile. Every test skips where glia was built without the cuda backend's
// code or NVRTC cannot be loaded.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>

#include "compiler/cuda_test_util.hpp"
#include "expect_error.hpp"
#include "glia/autograd/grad.hpp"
#include "glia/compiler/cuda.hpp"
#include "glia/core/expr.hpp"
#include "glia/core/interpreter.hpp"
#include "scoped_env.hpp"

namespace glia {
namespace {

using Fn = std::function<Expr(const std::vector<Expr>&)>;

Graph traced(const std::vector<TensorType>& types, const Fn& fn, const std::string& name) {
  return trace([&](const std::vector<Expr>& in) { return std::vector<Expr>{fn(in)}; }, types, name);
}

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

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

// ---- Max pooling --------------------------------------------------------------------

// The shape of window_max(x) for x of `type`.
Shape pooled_shape(const TensorType& type, const Ints& window, const WindowOptions& o) {
  Graph g = traced(
      {type}, [&](const std::vector<Expr>& in) { return window_max(in[0], window, o); }, "shape");
  return g.type(g.outputs()[0]).shape;
}

// Max pooling's forward and backward graphs: window_max(x), and the gradient of
// sum(window_max(x) * w) (select_and_scatter).
Graph max_pool_graph(DType dtype, const Shape& x, const Ints& window, const WindowOptions& o,
                     const std::string& name) {
  const Shape y = pooled_shape({dtype, x}, window, o);
  return trace(
      [&](const std::vector<Expr>& in) {
        Expr pooled = window_max(in[0], window, o);
        return std::vector<Expr>{pooled, gradients(sum(pooled * in[1]), {in[0]})[0]};
      },
      {{dtype, x}, {dtype, y}}, name);
}

TEST(CudaKernels, MaxPoolAndItsGradientAreGatherKernelsWithoutAtomics) {
  // NHWC, 2x2 windows at stride 2: 2 x 4 x 4 x 3 windows over 2 x 8 x 8 x 3 elements.
  Graph g = max_pool_graph(f32, {2, 8, 8, 3}, {1, 2, 2, 1}, {}, "nhwc_pool");
  cuda::KernelReport r;
  COMPILE_OR_SKIP(r, g);
  auto pools = r.program.specs<PoolSpec>();
  ASSERT_EQ(pools.size(), 2u) << r.program.describe();
  EXPECT_EQ(pools[0]->kind, PoolSpec::Kind::max);
  EXPECT_EQ(pools[1]->kind, PoolSpec::Kind::max_backward);
  EXPECT_TRUE(r.program.specs<ReferenceSpec>().empty()) << r.program.describe();
  EXPECT_TRUE(has(r.source, "// max pool 2x2 stride 2x2: 96 windows\n")) << r.source;
  EXPECT_TRUE(has(r.source, "// max pool adjoint 2x2 stride 2x2: gathered into 384 elements\n"))
      << r.source;
  EXPECT_FALSE(has(r.source, "atomicAdd(")) << "the adjoint gathers: one writer per element";
  EXPECT_GT(r.cubin_bytes, 0u);
}

TEST(CudaKernels, PoolingTheLoweringLeavesSaysWhy) {
  // Four pooled axes, and base dilation: no PoolSpec; the reference kernel, with a reason.
  cuda::KernelReport four, holes;
  COMPILE_OR_SKIP(four, max_pool_graph(f32, {4, 4, 4, 4}, {2, 2, 2, 2}, {}, "four_axes"));
  COMPILE_OR_SKIP(holes,
                  traced(
                      {{f32, {1, 5, 5, 2}}},
                      [](const std::vector<Expr>& x) {
                        return window_max(x[0], {1, 2, 2, 1}, {.base_dilation = {1, 2, 2, 1}});
                      },
                      "base_dilated"));
  auto reason = [](const cuda::KernelReport& r, Op op) {
    for (const ReferenceSpec* ref : r.program.specs<ReferenceSpec>())
      if (ref->op == op) return ref->reason;
    return std::string("(not on the reference kernel)");
  };
  EXPECT_EQ(reason(four, Op::window_max),
            "windows over more than three axes besides batch and channels");
  EXPECT_EQ(reason(four, Op::select_and_scatter),
            "windows over more than three axes besides batch and channels");
  EXPECT_EQ(reason(holes, Op::window_max), "base dilation");
}

// $CXX, else the first of c++, g++ and clang++ on the PATH; empty when there is none.
std::string host_compiler() {
  if (const char* cxx = std::getenv("CXX"); cxx != nullptr && *cxx != '\0') return cxx;
  for (const char* name : {"c++", "g++", "clang++"})
    if (std::system(cat("command -v ", name, " > /dev/null 2>&1").c_str()) == 0) return name;
  return "";
}

// The outputs of a program of generated kernels run on the host: the source compiled as
// C++ with CUDA's indices as globals, each kernel run by one block's threads one after
// another (a grid-stride loop covers the work with any grid; these kernels share nothing
// between threads). Each value gets a byte array; the parameters' hold `inputs`.
std::vector<Tensor> run_on_host(const cuda::KernelReport& r, const std::vector<Tensor>& inputs,
                                const std::string& cxx) {
  namespace fs = std::filesystem;
  const Graph& g = r.program.graph;
  std::string text =
      "#include <math.h>\n#include <stdint.h>\n#include <stdio.h>\n"
      "struct glia_dim3 { unsigned x, y, z; };\n"
      "static glia_dim3 blockIdx = {0, 0, 0}, threadIdx = {0, 0, 0}, gridDim = {1, 1, 1};\n"
      "#define __global__\n#define __launch_bounds__(n)\n" +
      r.source;
  auto bytes = [&](ValueId v) {
    return std::size_t(g.type(v).shape.numel()) * dtype_size(g.type(v).dtype);
  };
  for (ValueId v = 0; v < g.size(); ++v) {
    text += cat("alignas(16) static unsigned char b", v, "[", bytes(v) + 1, "] = {");
    auto p = std::find(g.parameters().begin(), g.parameters().end(), v);
    if (p != g.parameters().end()) {
      const auto* data = static_cast<const unsigned char*>(
          inputs[std::size_t(p - g.parameters().begin())].raw_data());
      for (std::size_t i = 0; i < bytes(v); ++i) text += cat(int(data[i]), ",");
    }
    text += "};\n";
  }
  text += "int main(int, char** argv) {\n";
  const std::string head = "extern \"C\" __global__ void __launch_bounds__(";
  for (std::size_t at = r.source.find(head); at != std::string::npos;
       at = r.source.find(head, at + 1)) {
    const std::size_t name = r.source.find(") ", at) + 2, open = r.source.find('(', name);
    std::string call = r.source.substr(name, open - name) + "(";
    std::stringstream params(r.source.substr(open + 1, r.source.find(')', open) - open - 1));
    for (std::string param; std::getline(params, param, ',');) {  // " const float* v3"
      const std::size_t star = param.rfind("* v");
      call += cat(call.back() == '(' ? "" : ", ", "(", param.substr(0, star + 1), ")b",
                  param.substr(star + 3));
    }
    text += cat("for (threadIdx.x = 0; threadIdx.x < 256; ++threadIdx.x) ", call, ");\n");
  }
  text += "FILE* f = fopen(argv[1], \"wb\");\n";
  for (ValueId v : g.outputs()) text += cat("fwrite(b", v, ", 1, ", bytes(v), ", f);\n");
  text += "return fclose(f);\n}\n";
  const fs::path dir = fs::temp_directory_path() / cat("glia_cuda_host_", ::getpid());
  fs::create_directories(dir);
  std::ofstream(dir / "kernels.cpp") << text;
  const std::string exe = (dir / "kernels").string(), out = (dir / "outputs.bin").string();
  const std::string command = cat(cxx, " -std=c++17 -O1 -w -o ", exe, " ",
                                  (dir / "kernels.cpp").string(), " && ", exe, " ", out);
  EXPECT_EQ(std::system(command.c_str()), 0) << command;
  std::ifstream file(out, std::ios::binary);
  std::vector<Tensor> outputs;
  for (ValueId v : g.outputs()) {
    outputs.emplace_back(g.type(v).dtype, g.type(v).shape);
    file.read(static_cast<char*>(outputs.back().raw_data()), std::streamsize(bytes(v)));
  }
  EXPECT_TRUE(file.good()) << "the kernels wrote every output";
  fs::remove_all(dir);
  return outputs;
}

TEST(CudaKernels, PoolKernelsComputeWhatTheInterpreterComputes) {
  // Windows that overlap, skip elements, hang over asymmetric padding or lie wholly in
  // it, over 1 to 3 axes and every float width, on inputs full of ties, NaNs, -0 and
  // -inf: each pool op's kernel, run on the host, against the reference kernels bit for
  // bit (the adjoint's first maximum decides which element a window's value goes to).
  struct Case {
    DType dtype;
    Shape x;
    Ints window;
    WindowOptions o;
  };
  const std::vector<Case> cases = {
      {f32, {2, 6, 6, 3}, {1, 2, 2, 1}, {}},
      {f32,
       {1, 2, 5, 6},
       {1, 1, 3, 3},
       {.strides = {1, 1, 1, 2}, .padding_low = {0, 0, 1, 2}, .padding_high = {0, 0, 1, 0}}},
      {f32,
       {2, 9, 7, 2},
       {1, 2, 2, 1},
       {.strides = {1, 2, 1, 1}, .padding_low = {0, 1, 0, 0}, .window_dilation = {1, 2, 3, 1}}},
      {f32,
       {1, 4, 5, 1},
       {1, 2, 2, 1},
       {.padding_low = {0, 3, 0, 0}, .padding_high = {0, 0, 2, 0}}},
      {f64, {3, 11, 2}, {1, 3, 1}, {.strides = {1, 2, 1}, .padding_low = {0, 1, 0}}},
      {f16,
       {1, 4, 3, 5, 2},
       {1, 2, 2, 3, 1},
       {.strides = {1, 1, 2, 1, 1}, .padding_low = {0, 1, 0, 1, 0}}},
      {bf16, {5, 7}, {2, 3}, {.strides = {1, 2}}},
      {i32, {4, 5, 3}, {2, 2, 1}, {.strides = {1, 1, 1}}},
  };
  // Values from a few levels (many ties); floats get a NaN, -0 or -inf now and then.
  auto values = [](DType dtype, const Shape& shape, int seed) {
    std::vector<double> v(std::size_t(shape.numel()));
    for (std::size_t i = 0; i < v.size(); ++i) {
      const std::size_t k = (i * 7 + std::size_t(seed) * 13) % 23;
      v[i] = double((k * 5) % 6) * 0.5 - 1.0;
      if (is_float(dtype) && k < 3) v[i] = k == 0 ? NAN : k == 1 ? -0.0 : -INFINITY;
      if (!is_float(dtype)) v[i] *= 2;
    }
    return Tensor::from(v, shape).cast(dtype);
  };
  std::vector<TensorType> types;
  std::vector<Tensor> inputs;
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const Case& c = cases[i];
    const Shape y = pooled_shape({c.dtype, c.x}, c.window, c.o);
    types.insert(types.end(), {{c.dtype, c.x}, {c.dtype, y}});
    inputs.push_back(values(c.dtype, c.x, int(i)));
    inputs.push_back(values(c.dtype, y, int(i) + 100));
  }
  Graph g = trace(
      [&](const std::vector<Expr>& in) {
        std::vector<Expr> out;
        for (std::size_t i = 0; i < cases.size(); ++i) {
          out.push_back(window_max(in[2 * i], cases[i].window, cases[i].o));
          out.push_back(select_and_scatter(in[2 * i], in[2 * i + 1], cases[i].window, cases[i].o));
        }
        return out;
      },
      types, "pools");
  cuda::KernelReport r;
  COMPILE_OR_SKIP(r, g);
  ASSERT_EQ(r.program.specs<PoolSpec>().size(), 2 * cases.size()) << r.program.describe();
  ASSERT_EQ(r.program.kernels.size(), 2 * cases.size()) << "pool kernels alone";
  EXPECT_GT(r.cubin_bytes, 0u) << "every dtype's kernels compile under NVRTC";
  const std::string cxx = host_compiler();
  if (cxx.empty()) GTEST_SKIP() << "no C++ compiler ($CXX, c++, g++ or clang++) to run them";
  std::vector<Tensor> got = run_on_host(r, inputs, cxx);
  std::vector<Tensor> want = interpret(g, inputs);
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t o = 0; o < want.size(); ++o) {
    SCOPED_TRACE(cat(o % 2 == 0 ? "max pool " : "adjoint ", o / 2));
    int wrong = 0;
    for (std::int64_t i = 0; i < want[o].numel(); ++i) {
      const double a = got[o].element(i), b = want[o].element(i);
      const bool same =
          std::isnan(a) ? std::isnan(b) : a == b && std::signbit(a) == std::signbit(b);
      if (!same && wrong++ < 5) ADD_FAILURE() << "element " << i << ": " << a << ", expected " << b;
    }
    EXPECT_EQ(wrong, 0);
  }
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
