// Internal: C functions that the system's C compiler builds while an executable compiles
// (Inductor's way on CPU): one source file per executable, compiled with -O3
// -march=native into a shared library in a disk cache keyed by the source, the compiler,
// its flags and the CPU, and loaded with dlopen. A second compile of the same program, in
// this process or a later one, loads the cached library without running the compiler.
//   NativeModule m;
//   int f = m.add("void glia_fn0(...) { ... }");  // named by m.name(f)
//   if (m.build(error)) auto* fn = m.symbol(f);
// Cache: $GLIA_CPU_CACHE, else $XDG_CACHE_HOME/glia/cpu, else ~/.cache/glia/cpu (as the
// cuda backend's $GLIA_CUDA_CACHE); NAME.c beside each NAME.so, to read what ran.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace glia::detail::cpu {

class NativeModule {
 public:
  // The name the function at `index` must have: glia_fn<index>.
  static std::string name(int index);
  // Adds a function's text (named name(index)); returns its index.
  int add(std::string function);
  bool empty() const { return functions_.empty(); }
  int next() const { return int(functions_.size()); }  // the index add() gives next
  // Compiles the functions (or finds them in the cache) and loads them. False, with the
  // reason in `error`, where no C compiler is found, it fails, or the library does not
  // load.
  bool build(std::string& error);
  // The loaded function at `index` (after a successful build), or the function named
  // name(index) + suffix that the same text defines (null where there is none).
  void* symbol(int index) const;
  void* symbol(int index, const std::string& suffix) const;
  // Whether the compiler left an innermost loop of that function scalar (GCC's
  // -fopt-info report, kept beside the library as NAME.scalar).
  bool scalar(int index) const { return scalar_.at(std::size_t(index)); }
  // The library loaded (after a successful build).
  const std::filesystem::path& library() const { return library_; }
  // Whether build() ran the compiler (false: the library came from the cache).
  bool compiled() const { return compiled_; }

 private:
  std::vector<std::string> functions_;
  std::vector<void*> symbols_;
  void* handle_ = nullptr;  // dlopen's, once built
  std::vector<bool> scalar_;
  std::filesystem::path library_;
  bool compiled_ = false;
};

// The directory of cached libraries (created on first use).
std::filesystem::path native_cache_dir();

}  // namespace glia::detail::cpu
