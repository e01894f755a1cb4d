// What the compiled-sweep tests share (cpu_native_test.cpp, cpu_native_reduction_test.cpp):
// a fresh kernel cache per test, Adam-like graphs and inputs, compiling on the cpu backend
// with a thread count, and closeness of several outputs.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "compiler/cpu_test_util.hpp"
#include "glia/compiler/aot.hpp"
#include "scoped_env.hpp"

namespace glia::testing {

namespace fs = std::filesystem;

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

inline int count_files(const fs::path& dir, const std::string& extension) {
  int n = 0;
  if (!fs::exists(dir)) return 0;
  for (const auto& e : fs::directory_iterator(dir)) n += e.path().extension() == extension;
  return n;
}

// Adam's update over n elements: three outputs from four inputs and scalar constants.
inline Graph adam_like(std::int64_t n) {
  return trace(
      [](const std::vector<Expr>& in) {
        Expr m = in[1] * 0.9 + in[3] * 0.1;
        Expr v = in[2] * 0.999 + in[3] * in[3] * 0.001;
        Expr p = in[0] - (m / 0.1) / (sqrt(v / 0.001) + 1e-8) * 0.01;
        return std::vector<Expr>{p, m, v};
      },
      {{f32, {n}}, {f32, {n}}, {f32, {n}}, {f32, {n}}}, "adam_like");
}

inline std::vector<Tensor> adam_inputs(std::int64_t n) {
  std::vector<Tensor> in;
  for (int k = 0; k < 4; ++k) {
    std::vector<float> x(std::size_t(n), 0.f);
    for (std::int64_t i = 0; i < n; ++i)
      x[std::size_t(i)] = float((i * (7 + 2 * k)) % 101) / 101.f - (k == 3 ? 0.5f : 0.f);
    in.push_back(Tensor::from<float>(x));
  }
  return in;
}

inline std::unique_ptr<Executable> on_cpu(
    const Graph& g, int threads,
    CompileOptions::Cpu::Fused fused = CompileOptions::Cpu::Fused::automatic) {
  CompileOptions o;
  o.cpu.threads = threads;
  o.cpu.fused = fused;
  return compile_graph(g, "cpu", o);
}

inline void expect_close(const std::vector<Tensor>& got, const std::vector<Tensor>& want,
                         double rtol, double atol) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i)
    EXPECT_TRUE(allclose(got[i], want[i], rtol, atol)) << "output " << i;
}

#define GLIA_REQUIRE_C_COMPILER() \
  if (aot::find_c_compiler().empty()) GTEST_SKIP() << "no C compiler (set CC)"

}  // namespace glia::testing
