// Max pooling on the cuda backend without a GPU: its forward and adjoint as generated
// gather kernels (no atomics), the pooling the lowering leaves to the reference kernel
// with its reason, and the generated source compiled as host C++ and run against the
// interpreter over ties, NaN, -0 and padding. Every test skips where glia was built
// without the cuda backend's code or NVRTC cannot be loaded.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "compiler/cuda_test_util.hpp"
#include "glia/autograd/grad.hpp"
#include "glia/compiler/cuda.hpp"
#include "glia/core/expr.hpp"
#include "glia/core/interpreter.hpp"

namespace glia {
namespace {

using testing::has;
using testing::traced;

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

}  // namespace
}  // namespace glia
