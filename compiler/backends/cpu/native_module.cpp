// The native module: the source file around the functions, the cache key, the compiler
// run (aot::build_library), and loading.
#include "backends/cpu/native_module.hpp"

#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>

#include "glia/compiler/aot.hpp"
#include "glia/core/elementwise.hpp"
#include "glia/core/error.hpp"
#include "glia/core/hash.hpp"
#include "src/user_cache.hpp"

#ifndef GLIA_VERSION
#define GLIA_VERSION "unknown"
#endif

namespace glia {
std::string_view vector_exp_source();  // generated from vector_exp.h (compiler/CMakeLists.txt)
}  // namespace glia

namespace glia::detail::cpu {

namespace {

// -fno-math-errno: sqrt and the vector library's calls vectorise (a negative gives NaN
// either way), as in the tile executor's own build. -fno-trapping-math: a select feeding a
// float's widening to a double accumulator is if-converted (GCC 12 keeps it a branch lest
// the conversion raise a flag nobody reads), so such a reduction vectorises; no result
// changes, glia never reads the floating-point exception flags. -fno-tree-pre: partial
// redundancy elimination threads a clamp's NaN tests (min(max(x, lo), hi), each
// `a != a ? a : ...`) into branches when a comparison follows, as in dropout's
// uniform(0, 1) < keep, and the loop stays scalar ("control flow in loop"); without it,
// of 60 modules' loops none vectorised fewer and 2-4 a module more.
constexpr const char* kFlags =
    "-O3 -march=native -std=gnu11 -fno-math-errno -fno-trapping-math -fno-tree-pre";

// expf's AVX2 and AVX-512 vector variants are glia's own (vector_exp.h; GCC calls the
// AVX2 one where its tuning prefers 256-bit vectors, as on Intel's AVX-512 parts, and for
// loop remainders); libmvec's AVX-512 variant took ~6.5 ns a vector here, this ~3.5. The
// scalar function and the SSE and AVX variants jump to libm's and libmvec's. GCC sees only
// the declaration, so it makes no clones of its own.
constexpr const char* kVectorExpHead =
    R"(#if defined(__GNUC__) && !defined(__clang__) && defined(__AVX2__) && defined(__FMA__)
float glia_expf(float) __attribute__((simd("notinbranch"), const, nothrow, leaf, visibility("hidden")));
__asm__(".pushsection .text\n"
        ".hidden glia_expf\n.type glia_expf,@function\nglia_expf: jmp expf@PLT\n"
        ".hidden _ZGVbN4v_glia_expf\n.type _ZGVbN4v_glia_expf,@function\n"
        "_ZGVbN4v_glia_expf: jmp _ZGVbN4v_expf@PLT\n"
        ".hidden _ZGVcN8v_glia_expf\n.type _ZGVcN8v_glia_expf,@function\n"
        "_ZGVcN8v_glia_expf: jmp _ZGVcN8v_expf@PLT\n"
        ".popsection\n");
)";
constexpr const char* kVectorExpTail = R"(
__attribute__((visibility("hidden"))) __m256 _ZGVdN8v_glia_expf(__m256 x) { GLIA_EXP8_BODY }
#ifdef __AVX512F__
__attribute__((visibility("hidden"))) __m512 _ZGVeN16v_glia_expf(__m512 x) { GLIA_EXP16_BODY }
#endif
#define expf glia_expf
#endif
)";

// The head of every module: the C library, glia's element-wise math, and (with glibc's
// vector math library) its functions declared with GCC's `simd` attribute so that loops
// calling them vectorise into libmvec's variants, within 4 ulp, as the tile executor's do.
std::string prelude() {
  std::string s =
      "/* glia: fused kernels compiled for this machine (compiler/backends/cpu). */\n"
      "#include <math.h>\n#include <stdint.h>\n";
#ifdef GLIA_HAVE_LIBMVEC
  s += "#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)\n";
  for (const char* f : {"exp", "expm1", "log", "log1p", "tanh", "erf", "sin", "cos"})
    s += cat("float ", f, "f(float) __attribute__((simd(\"notinbranch\")));\n", "double ", f,
             "(double) __attribute__((simd(\"notinbranch\")));\n");
  for (const char* f : {"pow", "atan2"})
    s += cat("float ", f, "f(float, float) __attribute__((simd(\"notinbranch\")));\n", "double ", f,
             "(double, double) __attribute__((simd(\"notinbranch\")));\n");
  s += "#endif\n";
  s += cat(kVectorExpHead, vector_exp_source(), kVectorExpTail);
#endif
  return s + std::string(elementwise_source()) + "\n";
}

std::string libraries() {
#ifdef GLIA_HAVE_LIBMVEC
  return "-lmvec -lm";
#else
  return "-lm";
#endif
}

// What ties a library to this machine besides its source: the CPU's model and features
// (-march=native), read once.
const std::string& machine_key() {
  static const std::string key = [] {
    std::ifstream f("/proc/cpuinfo");
    std::string line, model, flags;
    while (std::getline(f, line) && (model.empty() || flags.empty())) {
      if (model.empty() && line.rfind("model name", 0) == 0) model = line;
      if (flags.empty() && line.rfind("flags", 0) == 0) flags = line;
    }
    return model + "\n" + flags;
  }();
  return key;
}

// One lock per library name (the source's hash): threads compiling the same module wait
// for the first and load what it built (one compiler run, not one per thread); modules of
// other executables compile at the same time. The locks stay for the process's life, as
// the libraries do.
std::mutex& module_mutex(const std::string& stem) {
  static std::mutex guard;
  static std::map<std::string, std::unique_ptr<std::mutex>> by_stem;
  std::lock_guard lock(guard);
  std::unique_ptr<std::mutex>& m = by_stem[stem];
  if (!m) m = std::make_unique<std::mutex>();
  return *m;
}

}  // namespace

std::filesystem::path native_cache_dir() {
  const std::string dir = user_cache_dir("GLIA_CPU_CACHE", "cpu");
  if (!dir.empty()) return dir;
  return std::filesystem::temp_directory_path() / cat("glia-cpu-", ::getuid());
}

std::string NativeModule::name(int index) { return cat("glia_fn", index); }

int NativeModule::add(std::string function) {
  functions_.push_back(std::move(function));
  return int(functions_.size()) - 1;
}

void* NativeModule::symbol(int index) const { return symbols_.at(std::size_t(index)); }

void* NativeModule::symbol(int index, const std::string& suffix) const {
  return handle_ != nullptr ? ::dlsym(handle_, (name(index) + suffix).c_str()) : nullptr;
}

bool NativeModule::build(std::string& error) {
  std::string source = prelude();
  std::vector<long> first_line;  // of each function in the source
  long lines = long(std::count(source.begin(), source.end(), '\n'));
  for (const std::string& f : functions_) {
    source += "\n" + f;
    first_line.push_back(lines + 2);
    lines += 1 + long(std::count(f.begin(), f.end(), '\n'));
  }
  const std::string compiler = aot::find_c_compiler();
  if (compiler.empty()) {
    error = "no C compiler found (set CC, or install cc, gcc or clang)";
    return false;
  }
  std::uint64_t h = kFnv1aBasis;
  for (const std::string& part : {source, compiler, std::string(kFlags), libraries(), machine_key(),
                                  std::string(GLIA_VERSION)})
    h = fnv1a(fnv1a(h, part.data(), part.size()), "\n", 1);
  const std::filesystem::path dir = native_cache_dir();
  const std::string stem = "glia_" + hash_hex(h);
  library_ = dir / (stem + ".so");
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    error = cat("cannot create the kernel cache ", dir.string(), ": ", ec.message());
    return false;
  }
  std::lock_guard<std::mutex> lock(module_mutex(stem));
  void* handle = nullptr;
  if (std::filesystem::exists(library_, ec))
    handle = ::dlopen(library_.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    // Built under a name of this process's own, then renamed into place: a concurrent
    // build of the same module, or a crash mid-build, never leaves a torn library.
    static std::atomic<int> counter{0};
    const std::string temp = cat(stem, "_", ::getpid(), "_", counter++);
    {
      std::ofstream f(dir / (temp + ".c"), std::ios::binary);
      f << source;
      if (!f.good()) {
        error = cat("cannot write ", (dir / (temp + ".c")).string());
        return false;
      }
    }
    try {
      // GCC says which loops it could not vectorise (clang takes no -fopt-info).
      std::string flags = kFlags;
      if (compiler.find("clang") == std::string::npos)
        flags += " -fopt-info-vec-missed=" + (dir / (temp + ".vec")).string();
      aot::build_library(dir, temp, {compiler, flags, libraries()});
    } catch (const Error& e) {
      error = e.what();
      std::filesystem::remove(dir / (temp + ".c"), ec);
      return false;
    }
    {
      // The line of each function's innermost loops (after `ivdep`) in the source.
      std::map<long, int> loops;  // line -> function
      for (std::size_t i = 0; i < functions_.size(); ++i) {
        std::istringstream text(functions_[i]);
        long line = first_line[i];
        for (std::string l; std::getline(text, l); ++line)
          if (l.find("#pragma GCC ivdep") != std::string::npos) loops[line + 1] = int(i);
      }
      std::ifstream report(dir / (temp + ".vec"));
      std::ofstream scalar(dir / (temp + ".scalar"));
      for (std::string l; std::getline(report, l);) {
        // "glia_<hash>_<pid>_<n>.c:454:5: missed: couldn't vectorize loop"
        const std::size_t at = l.find(".c:");
        if (at == std::string::npos || l.find("couldn't vectorize loop") == std::string::npos)
          continue;
        auto it = loops.find(std::strtol(l.c_str() + at + 3, nullptr, 10));
        if (it != loops.end()) scalar << it->second << "\n";
      }
    }
    std::filesystem::remove(dir / (temp + ".vec"), ec);
    std::filesystem::rename(dir / (temp + ".scalar"), dir / (stem + ".scalar"), ec);
    std::filesystem::rename(dir / (temp + ".c"), dir / (stem + ".c"), ec);
    std::filesystem::rename(dir / ("lib" + temp + ".so"), library_, ec);
    if (ec) {
      error = cat("cannot move the compiled kernels to ", library_.string(), ": ", ec.message());
      return false;
    }
    compiled_ = true;
    handle = ::dlopen(library_.c_str(), RTLD_NOW | RTLD_LOCAL);
  }
  if (handle == nullptr) {
    const char* why = ::dlerror();
    error = cat("cannot load ", library_.string(), ": ", why != nullptr ? why : "dlopen failed");
    return false;
  }
  // The functions whose loops stayed scalar, from the report kept beside the library.
  scalar_.assign(functions_.size(), false);
  std::ifstream scalar(dir / (stem + ".scalar"));
  for (int i; scalar >> i;)
    if (i >= 0 && std::size_t(i) < scalar_.size()) scalar_[std::size_t(i)] = true;
  // The library stays loaded for the process's life: executables hold its functions.
  handle_ = handle;
  symbols_.clear();
  for (std::size_t i = 0; i < functions_.size(); ++i) {
    void* s = ::dlsym(handle, name(int(i)).c_str());
    if (s == nullptr) {
      error = cat(library_.string(), " has no ", name(int(i)));
      return false;
    }
    symbols_.push_back(s);
  }
  return true;
}

}  // namespace glia::detail::cpu
