// The cpu backend's fused sweeps compiled to C by the system's compiler: a test backend
// `cpu_compiled` (the cpu backend with every sweep compiled) joins the op suite and the
// fuzz through the registry; here, large sweeps compiled in automatic mode and split
// between threads by their outer loop, against the interpreter; the disk cache (a
// second compile loads, a corrupt library is rebuilt); and no compiler (the tile
// executor runs, or an error where compiled kernels were asked for).
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>

#include "compiler/cpu_test_util.hpp"
#include "glia/compiler/aot.hpp"
#include "glia/compiler/registry.hpp"
#include "glia/core/threefry.hpp"
#include "scoped_env.hpp"

namespace glia::testing {
namespace {

namespace fs = std::filesystem;

class CompiledCpuBackend final : public Backend {
 public:
  std::string_view name() const override { return "cpu_compiled"; }
  bool supports(Op op) const override { return cpu_backend_built() && backend("cpu").supports(op); }
  std::string unavailable() const override {
    if (!cpu_backend_built()) return "glia was built without oneDNN";
    if (aot::find_c_compiler().empty()) return "no C compiler (set CC)";
    return "";
  }
  std::unique_ptr<Executable> compile(const Graph& graph,
                                      const CompileOptions& options) const override {
    CompileOptions o = options;
    o.cpu.fused = CompileOptions::Cpu::Fused::compiled;
    return backend("cpu").compile(graph, o);
  }
};

[[maybe_unused]] const bool registered = [] {
  register_backend("cpu_compiled", [] { return std::make_unique<CompiledCpuBackend>(); });
  return true;
}();

// GLIA_CPU_CACHE at a fresh directory for one test, removed after it.
class ScopedCache {
 public:
  explicit ScopedCache(const std::string& test)
      : dir_(fs::temp_directory_path() / cat("glia_native_", test, "_", ::getpid())),
        env_("GLIA_CPU_CACHE", (fs::remove_all(dir_), dir_.string())) {}
  ~ScopedCache() { fs::remove_all(dir_); }
  const fs::path& dir() const { return dir_; }

 private:
  fs::path dir_;
  ScopedEnv env_;
};

int count_files(const fs::path& dir, const std::string& extension) {
  int n = 0;
  if (!fs::exists(dir)) return 0;
  for (const auto& e : fs::directory_iterator(dir)) n += e.path().extension() == extension;
  return n;
}

// Adam's update over n elements: three outputs from four inputs and scalar constants.
Graph adam_like(std::int64_t n) {
  return trace(
      [](const std::vector<Expr>& in) {
        Expr m = in[1] * 0.9 + in[3] * 0.1;
        Expr v = in[2] * 0.999 + in[3] * in[3] * 0.001;
        Expr p = in[0] - (m / 0.1) / (sqrt(v / 0.001) + 1e-8) * 0.01;
        return std::vector<Expr>{p, m, v};
      },
      {{f32, {n}}, {f32, {n}}, {f32, {n}}, {f32, {n}}}, "adam_like");
}

std::vector<Tensor> adam_inputs(std::int64_t n) {
  std::vector<Tensor> in;
  for (int k = 0; k < 4; ++k) {
    std::vector<float> x(std::size_t(n), 0.f);
    for (std::int64_t i = 0; i < n; ++i)
      x[std::size_t(i)] = float((i * (7 + 2 * k)) % 101) / 101.f - (k == 3 ? 0.5f : 0.f);
    in.push_back(Tensor::from<float>(x));
  }
  return in;
}

std::unique_ptr<Executable> on_cpu(
    const Graph& g, int threads,
    CompileOptions::Cpu::Fused fused = CompileOptions::Cpu::Fused::automatic) {
  CompileOptions o;
  o.cpu.threads = threads;
  o.cpu.fused = fused;
  return compile_graph(g, "cpu", o);
}

void expect_close(const std::vector<Tensor>& got, const std::vector<Tensor>& want, double rtol,
                  double atol) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i)
    EXPECT_TRUE(allclose(got[i], want[i], rtol, atol)) << "output " << i;
}

#define GLIA_REQUIRE_C_COMPILER() \
  if (aot::find_c_compiler().empty()) GTEST_SKIP() << "no C compiler (set CC)"

TEST(CpuNative, LargeSweepsRunCompiledAndSplitBetweenThreads) {
  GLIA_REQUIRE_CPU_BACKEND();
  GLIA_REQUIRE_C_COMPILER();
  ScopedCache cache("large");
  constexpr std::int64_t kN = 100003;  // two threads' halves of unequal length
  Graph g = adam_like(kN);
  auto inputs = adam_inputs(kN);
  std::vector<Tensor> want = interpret(g, inputs);
  for (int threads : {1, 2}) {
    auto exe = on_cpu(g, threads);
    EXPECT_EQ(count_text(exe->describe(), "compiled C"), 1) << exe->describe();
    expect_close(exe->run(inputs), want, 1e-5, 1e-6);
  }
  // Rows: a row-wise softmax whose reductions are kept by the outer loop, split by rows.
  constexpr std::int64_t kRows = 301, kCols = 517;
  Graph s = trace(
      [](const std::vector<Expr>& in) {
        Expr e = exp(in[0] - broadcast_to(reduce_max(in[0], {1}, true), {kRows, kCols}));
        return std::vector<Expr>{e / broadcast_to(sum(e, {1}, true), {kRows, kCols})};
      },
      {{f32, {kRows, kCols}}}, "softmax_rows");
  std::vector<float> x(std::size_t(kRows * kCols));
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = float(i % 613) / 61.f - 5.f;
  std::vector<Tensor> xs{Tensor::from<float>(x, Shape{kRows, kCols})};
  auto exe = on_cpu(s, 2);
  EXPECT_GE(count_text(exe->describe(), "compiled C"), 1) << exe->describe();
  expect_close(exe->run(xs), interpret(s, xs), 1e-5, 1e-7);
}

// A dropout's select on a bool mask: the mask is read as bytes, so the loop vectorises and
// runs compiled (a loop loading a _Bool beside floats stayed scalar, on the tile executor).
TEST(CpuNative, SelectsOnBoolMasksRunCompiled) {
  GLIA_REQUIRE_CPU_BACKEND();
  GLIA_REQUIRE_C_COMPILER();
  ScopedCache cache("mask");
  constexpr std::int64_t kN = 40000;
  Graph g = trace(
      [](const std::vector<Expr>& in) {
        return std::vector<Expr>{select(in[0], in[1] * 2.0, 0.0)};
      },
      {{DType::boolean, {kN}}, {f32, {kN}}}, "mask");
  std::vector<std::uint8_t> mask(static_cast<std::size_t>(kN), 0);
  std::vector<float> x(static_cast<std::size_t>(kN));
  for (std::int64_t i = 0; i < kN; ++i) {
    mask[std::size_t(i)] = std::uint8_t(i % 3 == 0);
    x[std::size_t(i)] = float(i % 11) - 5.0f;
  }
  std::vector<Tensor> in{Tensor::from<std::uint8_t>(mask).cast(DType::boolean),
                         Tensor::from<float>(x)};
  auto exe = on_cpu(g, 2);
  EXPECT_EQ(count_text(exe->describe(), "compiled C"), 1) << exe->describe();
  Tensor got = exe->run(in)[0];
  for (std::int64_t i = 0; i < kN; i += 7)
    EXPECT_EQ(got.data<float>()[i], i % 3 == 0 ? 2.0f * x[std::size_t(i)] : 0.0f) << i;
}

// An executable with a sweep large enough to pay for a compiler run compiles its small
// sweeps into the same library; one with small sweeps alone builds no library.
TEST(CpuNative, SmallSweepsJoinALibraryBuiltAnyway) {
  GLIA_REQUIRE_CPU_BACKEND();
  GLIA_REQUIRE_C_COMPILER();
  ScopedCache cache("small");
  auto graph = [](std::int64_t big) {
    return trace(
        [](const std::vector<Expr>& in) {
          return std::vector<Expr>{exp(in[0]) * 2.0, sum(in[1] * 3.0)};
        },
        {{f32, {big}}, {f32, {10}}}, "small_and_large");
  };
  auto inputs = [](std::int64_t big) {
    std::vector<float> a(static_cast<std::size_t>(big)), b(10);
    for (std::size_t i = 0; i < a.size(); ++i) a[i] = float(i % 17) / 17.0f;
    for (std::size_t i = 0; i < b.size(); ++i) b[i] = float(i) - 4.0f;
    return std::vector<Tensor>{Tensor::from<float>(a), Tensor::from<float>(b)};
  };
  Graph both = graph(50000);
  auto exe = on_cpu(both, 2);
  EXPECT_EQ(count_text(exe->describe(), "compiled C"), 2) << exe->describe();
  EXPECT_EQ(count_text(exe->describe(), "tile executor"), 0) << exe->describe();
  std::vector<Tensor> got = exe->run(inputs(50000));
  EXPECT_FLOAT_EQ(got[1].item<float>(), 15.0f);  // 3 * sum(i - 4) over i < 10
  expect_close(got, interpret(both, inputs(50000)), 1e-6, 1e-6);
  const int libraries = count_files(cache.dir(), ".so");
  EXPECT_EQ(libraries, 1);
  Graph small = graph(100);
  auto tiny = on_cpu(small, 2);
  EXPECT_EQ(count_text(tiny->describe(), "compiled C"), 0) << tiny->describe();
  EXPECT_EQ(count_files(cache.dir(), ".so"), libraries);
  expect_close(tiny->run(inputs(100)), interpret(small, inputs(100)), 1e-6, 1e-6);
}

// Whole-array reductions: each thread accumulates its part of the outer loop in blocks of
// lanes (and a remainder), writes its partials, and the merge combines them in thread
// order. Several accumulators of different types in one sweep; a NaN in a lane block, in
// a remainder and in the merge all reach the max.
TEST(CpuNative, WholeArrayReductionsSplitBetweenThreadsMergeTheirPartials) {
  GLIA_REQUIRE_CPU_BACKEND();
  GLIA_REQUIRE_C_COMPILER();
  ScopedCache cache("partials");
  constexpr std::int64_t kN = 200003;  // halves and thirds of unequal length, not of 16
  Graph g = trace(
      [](const std::vector<Expr>& in) {
        Expr e = exp(in[0]);
        return std::vector<Expr>{sum(in[0]), reduce_max(in[0]), reduce_min(in[0]),
                                 sum(e),     sum(in[1]),        e * 2.0};
      },
      {{f32, {kN}}, {i32, {kN}}}, "whole_array");
  std::vector<float> x(static_cast<std::size_t>(kN));
  std::vector<std::int32_t> k(static_cast<std::size_t>(kN));
  double want_sum = 0, want_exp = 0;
  std::int64_t want_k = 0;
  float want_max = -1e30f, want_min = 1e30f;
  for (std::int64_t i = 0; i < kN; ++i) {
    x[std::size_t(i)] = float((i * 37) % 1009) / 1009.f - 0.5f;
    k[std::size_t(i)] = std::int32_t(i % 97) - 40;
  }
  x[123456] = 0.75f;  // the max in the second thread's half
  x[17] = -0.875f;    // the min in the first lane block
  for (std::int64_t i = 0; i < kN; ++i) {
    want_sum += x[std::size_t(i)];
    want_exp += std::exp(double(x[std::size_t(i)]));
    want_k += k[std::size_t(i)];
    want_max = std::max(want_max, x[std::size_t(i)]);
    want_min = std::min(want_min, x[std::size_t(i)]);
  }
  for (int threads : {1, 2, 3}) {
    auto exe = on_cpu(g, threads);
    EXPECT_EQ(count_text(exe->describe(), "glia tile executor"), 0) << exe->describe();
    std::vector<Tensor> got =
        exe->run(std::vector<Tensor>{Tensor::from<float>(x), Tensor::from<std::int32_t>(k)});
    ASSERT_EQ(got.size(), 6u);
    EXPECT_NEAR(got[0].item<float>(), want_sum, 1e-3) << threads << " threads";
    EXPECT_EQ(got[1].item<float>(), want_max) << threads << " threads";
    EXPECT_EQ(got[2].item<float>(), want_min) << threads << " threads";
    EXPECT_NEAR(got[3].item<float>(), want_exp, 1e-5 * want_exp) << threads << " threads";
    EXPECT_EQ(got[4].item<std::int32_t>(), want_k) << threads << " threads";
    EXPECT_FLOAT_EQ(got[5].data<float>()[kN - 1], 2.f * std::exp(x[std::size_t(kN - 1)]));
  }
  // NaN wherever it falls: a lane block of the first part, the last part's remainder.
  for (std::int64_t at : {std::int64_t(5), kN - 2}) {
    std::vector<float> y = x;
    y[std::size_t(at)] = std::nanf("");
    for (int threads : {1, 2, 3}) {
      auto exe = on_cpu(g, threads);
      std::vector<Tensor> got =
          exe->run(std::vector<Tensor>{Tensor::from<float>(y), Tensor::from<std::int32_t>(k)});
      EXPECT_TRUE(std::isnan(got[1].item<float>())) << "NaN at " << at << ", " << threads;
      EXPECT_TRUE(std::isnan(got[2].item<float>())) << "NaN at " << at << ", " << threads;
      EXPECT_TRUE(std::isnan(got[0].item<float>())) << "NaN at " << at << ", " << threads;
    }
  }
}

// Reductions over outer axes (a bias's gradient: the sum over every axis but channels)
// and over a middle axis: each thread accumulates its part of the outer loop in an array on
// the stack, the merge adds the threads' arrays in thread order. A relu's adjoint (a
// select widened into f64 sums) in the same sweep still vectorises.
TEST(CpuNative, ReductionsOverOuterAxesRunCompiledAndSplitBetweenThreads) {
  GLIA_REQUIRE_CPU_BACKEND();
  GLIA_REQUIRE_C_COMPILER();
  ScopedCache cache("columns");
  constexpr std::int64_t kN = 1001, kH = 7, kC = 37;  // rows split unevenly; odd channels
  Graph g = trace(
      [](const std::vector<Expr>& in) {
        Expr d = select(greater(in[1], 0.0), in[0], 0.0);
        return std::vector<Expr>{d, sum(d, {0, 1}), reduce_max(in[0], {0, 1}), sum(in[0], {1})};
      },
      {{f32, {kN, kH, kC}}, {f32, {kN, kH, kC}}}, "columns");
  std::vector<float> g0(std::size_t(kN * kH * kC)), y(g0.size());
  for (std::size_t i = 0; i < g0.size(); ++i) {
    g0[i] = float((i * 29) % 1013) / 1013.f - 0.5f;
    y[i] = float((i * 17) % 89) / 89.f - 0.3f;
  }
  // By hand: the sums in f64, the maxima, and the middle-axis sums.
  std::vector<double> col(kC, 0.0), mid(std::size_t(kN * kC), 0.0);
  std::vector<float> top(kC, -1e30f);
  for (std::int64_t n = 0; n < kN; ++n)
    for (std::int64_t h = 0; h < kH; ++h)
      for (std::int64_t c = 0; c < kC; ++c) {
        const std::size_t i = std::size_t((n * kH + h) * kC + c);
        col[std::size_t(c)] += y[i] > 0 ? g0[i] : 0.0f;
        top[std::size_t(c)] = std::max(top[std::size_t(c)], g0[i]);
        mid[std::size_t(n * kC + c)] += g0[i];
      }
  std::vector<Tensor> in{Tensor::from<float>(g0, Shape{kN, kH, kC}),
                         Tensor::from<float>(y, Shape{kN, kH, kC})};
  for (int threads : {1, 2, 3}) {
    SCOPED_TRACE(cat(threads, " threads"));
    auto exe = on_cpu(g, threads);
    EXPECT_EQ(count_text(exe->describe(), "glia tile executor"), 0) << exe->describe();
    std::vector<Tensor> got = exe->run(in);
    ASSERT_EQ(got.size(), 4u);
    for (std::int64_t c = 0; c < kC; ++c) {
      EXPECT_NEAR(got[1].data<float>()[c], col[std::size_t(c)], 1e-4) << "channel " << c;
      EXPECT_EQ(got[2].data<float>()[c], top[std::size_t(c)]) << "channel " << c;
    }
    for (std::int64_t i = 0; i < kN * kC; i += 97)
      EXPECT_NEAR(got[3].data<float>()[i], mid[std::size_t(i)], 1e-5) << "element " << i;
    expect_close({got[0]}, {interpret(g, in)[0]}, 0, 0);
  }
}

// Donated inputs taken crosswise by outputs (the new moment written over the parameter
// that the same element still reads): each element's loads come before its stores.
TEST(CpuNative, OutputsWrittenOverDonatedInputsReadTheirElementsFirst) {
  GLIA_REQUIRE_CPU_BACKEND();
  GLIA_REQUIRE_C_COMPILER();
  ScopedCache cache("donated");
  constexpr std::int64_t kN = 100000;
  Graph g = trace(
      [](const std::vector<Expr>& in) {
        Expr m = in[1] * 0.9 + in[3] * 0.1;
        Expr v = in[2] * 0.999 + in[3] * in[3] * 0.001;
        Expr p = in[0] - (m / 0.1) / (sqrt(v / 0.001) + 1e-8) * 0.01;
        return std::vector<Expr>{m, v, p};  // m first: it takes the parameter's storage
      },
      {{f32, {kN}}, {f32, {kN}}, {f32, {kN}}, {f32, {kN}}}, "adam_crosswise");
  auto inputs = adam_inputs(kN);
  std::vector<Tensor> want = interpret(g, inputs);
  for (int threads : {1, 2}) {
    auto exe = on_cpu(g, threads);
    ASSERT_EQ(count_text(exe->describe(), "compiled C"), 1) << exe->describe();
    std::vector<Tensor> given;
    std::set<const void*> storage;
    for (const Tensor& t : inputs) {
      given.push_back(t.clone());
      storage.insert(given.back().raw_data());
    }
    std::vector<Tensor> got = exe->run_donated(std::move(given));
    int reused = 0;
    for (const Tensor& t : got) reused += int(storage.count(t.raw_data()));
    EXPECT_EQ(reused, 3) << "every output in a donated input's storage";
    expect_close(got, want, 1e-5, 1e-6);
  }
}

TEST(CpuNative, RandomBitsSplitBetweenThreadsAreTheReferenceStream) {
  GLIA_REQUIRE_CPU_BACKEND();
  GLIA_REQUIRE_C_COMPILER();
  ScopedCache cache("random");
  constexpr std::int64_t kN = 200001;  // odd: the last pair's second word is dropped
  Graph g = trace(
      [](const std::vector<Expr>& in) { return std::vector<Expr>{random::bits(in[0], {kN})}; },
      {{u32, {2}}}, "bits");
  std::vector<Tensor> key{random::key(1234)};
  auto exe = on_cpu(g, 2);
  EXPECT_EQ(count_text(exe->describe(), "compiled C"), 1) << exe->describe();
  Tensor got = exe->run(key)[0];
  const auto* bits = got.data<std::uint32_t>();
  const auto* k = key[0].data<std::uint32_t>();
  // threefry.hpp's block function, word by word: pair j gives words 2j and 2j + 1.
  for (std::int64_t i : {std::int64_t(0), std::int64_t(1), std::int64_t(100000),
                         std::int64_t(100001), kN - 2, kN - 1}) {
    const U32x2 r = threefry2x32({k[0], k[1]}, {0, std::uint32_t(i / 2)});
    EXPECT_EQ(bits[i], i % 2 == 0 ? r.x0 : r.x1) << i;
  }
  EXPECT_TRUE(allclose(got, interpret(g, key)[0], 0, 0));
}

TEST(CpuNative, ASecondCompileLoadsTheCachedLibraryAndACorruptOneIsRebuilt) {
  GLIA_REQUIRE_CPU_BACKEND();
  GLIA_REQUIRE_C_COMPILER();
  constexpr std::int64_t kN = 65537;
  Graph g = adam_like(kN);
  auto inputs = adam_inputs(kN);
  std::vector<Tensor> want = interpret(g, inputs);
  fs::path library;
  {
    ScopedCache cache("first");
    const fs::path& first = cache.dir();
    expect_close(on_cpu(g, 1)->run(inputs), want, 1e-5, 1e-6);
    ASSERT_EQ(count_files(first, ".so"), 1);
    ASSERT_EQ(count_files(first, ".c"), 1);  // the source beside it, to read
    for (const auto& e : fs::directory_iterator(first))
      if (e.path().extension() == ".so") library = e.path();
    const auto written = fs::last_write_time(library);
    expect_close(on_cpu(g, 2)->run(inputs), want, 1e-5, 1e-6);
    EXPECT_EQ(count_files(first, ".so"), 1);
    EXPECT_EQ(fs::last_write_time(library), written) << "the second compile rebuilt it";
  }
  // The same module's name in another cache, holding garbage: rebuilt, then loaded.
  ScopedCache cache("second");
  fs::create_directories(cache.dir());
  const fs::path garbage = cache.dir() / library.filename();
  std::ofstream(garbage) << "not a shared library";
  expect_close(on_cpu(g, 1)->run(inputs), want, 1e-5, 1e-6);
  EXPECT_GT(fs::file_size(garbage), 100u);
}

TEST(CpuNative, WithoutACompilerTheTileExecutorRunsUnlessCompiledKernelsAreAskedFor) {
  GLIA_REQUIRE_CPU_BACKEND();
  ScopedCache cache("nocc");
  ScopedEnv cc("CC", "/nonexistent/glia-test-cc");
  constexpr std::int64_t kN = 40000;
  Graph g = adam_like(kN);
  auto inputs = adam_inputs(kN);
  auto exe = on_cpu(g, 1);
  EXPECT_EQ(count_text(exe->describe(), "compiled C"), 0) << exe->describe();
  EXPECT_EQ(count_text(exe->describe(), "tile executor"), 1) << exe->describe();
  expect_close(exe->run(inputs), interpret(g, inputs), 1e-5, 1e-6);
  EXPECT_GLIA_ERROR(on_cpu(g, 1, CompileOptions::Cpu::Fused::compiled),
                    "cannot compile its fused kernels");
  // GLIA_CPU_FUSED=tile asks for no compiler; anything but auto, compiled or tile is an error.
  {
    ScopedEnv fused("GLIA_CPU_FUSED", "tile");
    EXPECT_EQ(count_text(on_cpu(g, 1)->describe(), "tile executor"), 1);
  }
  ScopedEnv fused("GLIA_CPU_FUSED", "fast");
  EXPECT_GLIA_ERROR(on_cpu(g, 1), "GLIA_CPU_FUSED must be auto, compiled or tile");
}

}  // namespace
}  // namespace glia::testing
