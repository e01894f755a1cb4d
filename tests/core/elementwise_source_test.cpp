// elementwise_source() is elementwise_math.h's text, and that text builds where generated
// code will use it: as C11 (compiled with warnings as errors and run, checking edge
// cases) and under NVRTC, in both cases calling every function the list and the monoids
// name. Each test skips, saying why, where no C compiler or no libnvrtc is found.
#include <dlfcn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>

#include "core/test_util.hpp"
#include "glia/core/monoid.hpp"

namespace glia {
namespace {

namespace fs = std::filesystem;

// The C suffix of each compute type, with a dtype of that compute type.
constexpr std::pair<DType, std::string_view> kComputeTypes[] = {
    {f32, "f32"}, {f64, "f64"}, {i32, "i32"},     {i64, "i64"},
    {u8, "u8"},   {u32, "u32"}, {boolean, "bool"}};

#define GLIA_MONOID_STEM(op, m) monoid<Op::op>::c_stem,
constexpr std::string_view kMonoidStems[] = {GLIA_REDUCTION_MONOIDS(GLIA_MONOID_STEM)};
#undef GLIA_MONOID_STEM

// Statements adding to `double s` one call of every function: each element-wise op on
// each compute type of its row's domain, and each monoid's five names on each numeric
// type. Built from the list, so a row whose C functions are missing fails to compile.
std::string calls_to_every_function() {
  std::string code;
  for (const EwRow& row : kElementwiseOps)
    for (const auto& [dtype, t] : kComputeTypes)
      if (ew_accepts(row.domain, dtype))
        code += cat("  s += (double)glia_", row.c_stem, "_", t,
                    row.op_class == OpClass::unary ? "(0);\n" : "(0, 0);\n");
  for (std::string_view m : kMonoidStems)
    for (const auto& [dtype, t] : kComputeTypes)
      if (dtype != boolean) {
        std::string f = cat("glia_", m, "_");
        code +=
            cat("  { ", f, "acc_", t, " a = ", f, "identity_", t, "();\n    a = ", f, "combine_", t,
                "(a, ", f, "widen_", t, "(1));\n    s += (double)", f, "narrow_", t, "(a); }\n");
      }
  return code;
}

// A C program: every function once, then edge cases against hand-computed values.
// Prints each failed check and exits with their count.
std::string c_program() {
  return cat(R"(#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include "elementwise_math.h"

static int failures = 0;
#define CHECK(c) do { if (!(c)) { printf("failed: %s\n", #c); ++failures; } } while (0)

static double every_function(void) {
  double s = 0;
)",
             calls_to_every_function(), R"(  return s;
}

int main(void) {
  volatile double sink = every_function();
  (void)sink;
  CHECK(glia_divide_i32(7, 0) == 0);
  CHECK(glia_divide_i32(INT32_MIN, -1) == INT32_MIN);
  CHECK(glia_divide_i64(-7, 2) == -3);
  CHECK(glia_divide_u32(7u, 0u) == 0u);
  CHECK(glia_remainder_i32(-7, 3) == -1 && glia_remainder_i32(7, -3) == 1);
  CHECK(glia_remainder_i32(7, 0) == 7 && glia_remainder_i64(INT64_MIN, -1) == 0);
  CHECK(glia_remainder_f64(-5.5, 2.0) == -1.5);
  CHECK(glia_pow_i32(3, 5) == 243 && glia_pow_i32(2, 31) == INT32_MIN);
  CHECK(glia_pow_i64(-1, -3) == -1 && glia_pow_i64(-1, -4) == 1 && glia_pow_i64(2, -1) == 0);
  CHECK(glia_pow_u8(2, 8) == 0 && glia_pow_u8(3, 4) == 81);
  CHECK(glia_neg_u8(1) == 255 && glia_abs_i32(INT32_MIN) == INT32_MIN);
  CHECK(glia_add_i32(INT32_MAX, 1) == INT32_MIN && glia_subtract_u8(1, 2) == 255);
  CHECK(glia_logistic_f32(-1000.0f) == 0.0f && glia_logistic_f32(1000.0f) == 1.0f);
  CHECK(glia_logistic_f64(0.0) == 0.5 && isnan(glia_logistic_f32(NAN)));
  CHECK(isnan(glia_max_f32(NAN, 1.0f)) && isnan(glia_max_f32(1.0f, NAN)));
  CHECK(isnan(glia_min_f64(NAN, 1.0)) && glia_min_f64(-0.5, 2.0) == -0.5);
  CHECK(glia_round_f32(-2.5f) == -3.0f && glia_round_f64(0.5) == 1.0);
  CHECK(glia_sign_f32(-0.0f) == 0.0f && !signbit(glia_sign_f32(-0.0f)));
  CHECK(isnan(glia_sign_f64(NAN)) && glia_sign_i64(-9) == -1 && glia_sign_u8(9) == 1);
  CHECK(glia_not_bool(0) == 1 && glia_not_i32(5) == -6 && glia_not_u8(0) == 255);
  CHECK(glia_and_bool(1, 0) == 0 && glia_or_u32(12u, 3u) == 15u);
  CHECK(glia_lt_u32(1u, 4294967295u) == 1 && glia_eq_f32(NAN, NAN) == 0);
  CHECK(glia_sum_narrow_i32(glia_sum_combine_i32(glia_sum_widen_i32(INT32_MAX),
                                                 glia_sum_widen_i32(1))) == INT32_MIN);
  CHECK(glia_sum_narrow_u8(glia_sum_combine_u8(glia_sum_widen_u8(200), glia_sum_widen_u8(100))) == 44);
  CHECK(sizeof(glia_sum_acc_f32) == sizeof(double) && sizeof(glia_prod_acc_i32) == 8);
  CHECK(isnan(glia_max_combine_f32(glia_max_combine_f32(glia_max_identity_f32(), NAN), 5.0f)));
  CHECK(glia_max_identity_f64() == -INFINITY && glia_min_identity_f32() == INFINITY);
  CHECK(glia_max_identity_i64() == INT64_MIN && glia_min_identity_u32() == UINT32_MAX);
  CHECK(glia_prod_identity_u8() == 1 && glia_sum_identity_f64() == 0.0);
  return failures;
}
)");
}

// Runs a shell command; its exit status and everything it printed.
std::pair<int, std::string> run(const std::string& command) {
  std::string output;
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (!pipe) return {-1, "popen failed"};
  char buffer[4096];
  while (std::size_t n = std::fread(buffer, 1, sizeof buffer, pipe)) output.append(buffer, n);
  int status = pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, output};
}

// $CC, else cc, gcc or clang on the PATH.
std::optional<std::string> find_c_compiler() {
  if (const char* cc = std::getenv("CC"); cc && *cc) return std::string(cc);
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "";
  for (const char* name : {"cc", "gcc", "clang"}) {
    std::size_t start = 0;
    while (start <= dirs.size()) {
      std::size_t end = std::min(dirs.find(':', start), dirs.size());
      fs::path candidate = fs::path(dirs.substr(start, end - start)) / name;
      if (!candidate.parent_path().empty() && access(candidate.c_str(), X_OK) == 0)
        return candidate.string();
      start = end + 1;
    }
  }
  return std::nullopt;
}

TEST(ElementwiseSource, IsTheHeadersText) {
  std::string_view text = elementwise_source();
  EXPECT_EQ(text.substr(0, 2), "/*");
  EXPECT_NE(text.find("#ifndef GLIA_ELEMENTWISE_MATH_H"), std::string_view::npos);
  EXPECT_NE(text.find("glia_logistic_##t"), std::string_view::npos);
  EXPECT_EQ(text.find("\n#include"), std::string_view::npos) << "NVRTC has no standard headers";
  EXPECT_EQ(text.back(), '\n');
}

TEST(ElementwiseSource, CompilesAndRunsAsC11) {
  std::optional<std::string> cc = find_c_compiler();
  if (!cc) GTEST_SKIP() << "no C compiler ($CC, cc, gcc or clang): the C11 check is skipped";
  fs::path dir = fs::temp_directory_path() / cat("glia_ew_c_", getpid());
  fs::create_directories(dir);
  std::ofstream(dir / "elementwise_math.h") << elementwise_source();
  std::ofstream(dir / "probe.c") << c_program();
  fs::path exe = dir / "probe";
  auto [build_status, build_log] = run(cat(*cc, " -std=c11 -Wall -Wextra -pedantic -Werror -O1 -o ",
                                           exe.string(), " ", (dir / "probe.c").string(), " -lm"));
  ASSERT_EQ(build_status, 0) << build_log;
  EXPECT_EQ(build_log, "");
  auto [status, output] = run(exe.string());
  EXPECT_EQ(status, 0) << output;
  EXPECT_EQ(output, "");
  fs::remove_all(dir);
}

// The few NVRTC entry points used, declared here: core and its tests include no CUDA
// header. nvrtcResult is an int enum (0: success); nvrtcProgram an opaque pointer.
struct Nvrtc {
  using Create = int (*)(void**, const char*, const char*, int, const char* const*,
                         const char* const*);
  using Compile = int (*)(void*, int, const char* const*);
  using Size = int (*)(void*, std::size_t*);
  using Text = int (*)(void*, char*);
  using Destroy = int (*)(void**);
  using Archs = int (*)(int*);

  void* lib = nullptr;
  Create create = nullptr;
  Compile compile = nullptr;
  Size log_size = nullptr, ptx_size = nullptr;
  Text log = nullptr, ptx = nullptr;
  Destroy destroy = nullptr;
  Archs num_archs = nullptr, archs = nullptr;

  Nvrtc() {
    for (const char* name :
         {"libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12", "/usr/local/cuda/lib64/libnvrtc.so"})
      if ((lib = dlopen(name, RTLD_NOW | RTLD_LOCAL))) break;
    if (!lib) return;
    create = reinterpret_cast<Create>(dlsym(lib, "nvrtcCreateProgram"));
    compile = reinterpret_cast<Compile>(dlsym(lib, "nvrtcCompileProgram"));
    log_size = reinterpret_cast<Size>(dlsym(lib, "nvrtcGetProgramLogSize"));
    log = reinterpret_cast<Text>(dlsym(lib, "nvrtcGetProgramLog"));
    ptx_size = reinterpret_cast<Size>(dlsym(lib, "nvrtcGetPTXSize"));
    ptx = reinterpret_cast<Text>(dlsym(lib, "nvrtcGetPTX"));
    destroy = reinterpret_cast<Destroy>(dlsym(lib, "nvrtcDestroyProgram"));
    num_archs = reinterpret_cast<Archs>(dlsym(lib, "nvrtcGetNumSupportedArchs"));
    archs = reinterpret_cast<Archs>(dlsym(lib, "nvrtcGetSupportedArchs"));
  }
  // No dlclose: like the cuda backend, the test keeps NVRTC loaded for the process. Its
  // static C++ runtime holds a 71 KB exception pool in a global; unloading the library
  // orphans that block (LeakSanitizer reports it from an unknown module).
  bool usable() const { return create && compile && log_size && log && ptx_size && ptx && destroy; }

  // compute_90 where this NVRTC knows it, else the newest architecture it supports.
  int architecture() const {
    int n = 0;
    if (!num_archs || !archs || num_archs(&n) != 0 || n <= 0) return 90;
    std::vector<int> list(static_cast<std::size_t>(n));
    if (archs(list.data()) != 0) return 90;
    for (int a : list)
      if (a == 90) return 90;
    return list.back();
  }
};

TEST(ElementwiseSource, CompilesUnderNvrtc) {
  Nvrtc nvrtc;
  if (!nvrtc.lib)
    GTEST_SKIP() << "libnvrtc not found (no CUDA toolkit): the NVRTC check is skipped";
  ASSERT_TRUE(nvrtc.usable()) << "libnvrtc lacks an entry point this test calls";
  std::string source = cat(elementwise_source(),
                           "\nextern \"C\" __global__ void glia_ew_probe(double* out) {\n"
                           "  double s = 0;\n",
                           calls_to_every_function(), "  *out = s;\n}\n");
  void* program = nullptr;
  ASSERT_EQ(nvrtc.create(&program, source.c_str(), "glia_ew_probe.cu", 0, nullptr, nullptr), 0);
  std::string arch = cat("--gpu-architecture=compute_", nvrtc.architecture());
  const char* options[] = {arch.c_str()};
  int result = nvrtc.compile(program, 1, options);
  std::size_t size = 0;
  nvrtc.log_size(program, &size);
  std::string log(size, '\0');
  if (size) nvrtc.log(program, log.data());
  log = log.c_str();  // drop the terminating NUL
  EXPECT_EQ(result, 0) << arch << "\n" << log;
  EXPECT_EQ(log.find("warning"), std::string::npos) << log;
  if (result == 0) {
    nvrtc.ptx_size(program, &size);
    std::string ptx(size, '\0');
    nvrtc.ptx(program, ptx.data());
    EXPECT_NE(ptx.find(".entry glia_ew_probe"), std::string::npos);
  }
  nvrtc.destroy(&program);
}

}  // namespace
}  // namespace glia
