// The cpu backend's fused sweeps compiled to C by the system's compiler: a test backend
// `cpu_compiled` (the cpu backend with every sweep compiled) joins the op suite and the
// fuzz through the registry; here, large sweeps compiled in automatic mode and split
// between threads by their outer loop, against the interpreter; the disk cache (a
// second compile loads, a corrupt library is rebuilt); the tier-up of a small-swept
// executable that runs often; and no compiler (the tile executor runs, or an error where
// compiled kernels were asked for).
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>

#include "compiler/cpu_native_util.hpp"
#include "compiler/cpu_test_util.hpp"
#include "glia/compiler/aot.hpp"
#include "glia/compiler/registry.hpp"
#include "glia/core/threefry.hpp"
#include "scoped_env.hpp"

namespace glia::testing {
namespace {

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

// An executable whose sweeps were all small (no library when it was compiled) builds them
// on its 1,000th run, and runs them compiled from then on; GLIA_CPU_FUSED=tile keeps it on
// the tile executor.
TEST(CpuNative, SmallSweptExecutablesCompileTheirSweepsOnceTheyRunOften) {
  GLIA_REQUIRE_CPU_BACKEND();
  GLIA_REQUIRE_C_COMPILER();
  ScopedCache cache("tier_up");
  Graph g = trace(
      [](const std::vector<Expr>& in) {
        return std::vector<Expr>{exp(in[0]) * 2.0, sum(in[0] * 3.0)};
      },
      {{f32, {12}}}, "tier_up");
  std::vector<float> x(12);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = float(i) / 4.0f - 1.5f;
  const std::vector<Tensor> in{Tensor::from<float>(x)};
  const std::vector<Tensor> want = interpret(g, in);
  auto exe = on_cpu(g, 2);
  for (int r = 1; r < 1000; ++r) exe->run(in);
  EXPECT_EQ(count_text(exe->describe(), "compiled C"), 0) << exe->describe();
  EXPECT_EQ(count_files(cache.dir(), ".so"), 0);
  expect_close(exe->run(in), want, 1e-6, 1e-6);  // the 1,000th run
  EXPECT_GT(count_text(exe->describe(), "compiled C"), 0) << exe->describe();
  EXPECT_EQ(count_text(exe->describe(), "tile executor"), 0) << exe->describe();
  EXPECT_EQ(count_files(cache.dir(), ".so"), 1);
  expect_close(exe->run(in), want, 1e-6, 1e-6);
  ScopedEnv tile("GLIA_CPU_FUSED", "tile");
  auto kept = on_cpu(g, 2);
  for (int r = 0; r < 1100; ++r) kept->run(in);
  EXPECT_EQ(count_text(kept->describe(), "compiled C"), 0) << kept->describe();
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

// The compiled loop computes a chunk's words a Threefry block (two words) at a time: rows
// of 999 start at odd flat indices, end in a short chunk, and the second thread's part
// (from row 101, flat 100,899) starts on a block's second word.
TEST(CpuNative, RandomWordsInChunksOfPairsStartAnywhereInABlock) {
  GLIA_REQUIRE_CPU_BACKEND();
  GLIA_REQUIRE_C_COMPILER();
  ScopedCache cache("random_rows");
  constexpr std::int64_t kRows = 203, kCols = 999;
  Graph g = trace(
      [](const std::vector<Expr>& in) {
        return std::vector<Expr>{random::bits(in[0], {kRows, kCols}) +
                                 broadcast_to(in[1], Shape{kRows, kCols})};
      },
      {{u32, {2}}, {u32, {kCols}}}, "bits_rows");
  Tensor offsets(DType::u32, Shape{kCols});
  for (std::int64_t j = 0; j < kCols; ++j) offsets.data<std::uint32_t>()[j] = std::uint32_t(j * 7);
  std::vector<Tensor> in{random::key(99), offsets};
  auto exe = on_cpu(g, 2);
  EXPECT_EQ(count_text(exe->describe(), "compiled C"), 1) << exe->describe();
  Tensor got = exe->run(in)[0];
  const auto* y = got.data<std::uint32_t>();
  const auto* k = in[0].data<std::uint32_t>();
  for (std::int64_t f : {std::int64_t(0), kCols - 1, kCols, kCols + 256, 2 * kCols - 1,
                         101 * kCols - 1, 101 * kCols, 101 * kCols + 1, kRows * kCols - 1}) {
    const U32x2 r = threefry2x32({k[0], k[1]}, {0, std::uint32_t(f / 2)});
    const std::uint32_t word = f % 2 == 0 ? r.x0 : r.x1;
    EXPECT_EQ(y[f], word + std::uint32_t(f % kCols * 7)) << f;
  }
  EXPECT_TRUE(allclose(got, interpret(g, in)[0], 0, 0));
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
  // A small-swept executable's tier-up finds no compiler either: the tile executor goes on.
  Graph small = adam_like(16);
  auto few = on_cpu(small, 1);
  for (int r = 0; r < 1100; ++r) few->run(adam_inputs(16));
  EXPECT_EQ(count_text(few->describe(), "tile executor"), 1) << few->describe();
  expect_close(few->run(adam_inputs(16)), interpret(small, adam_inputs(16)), 1e-5, 1e-6);
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
