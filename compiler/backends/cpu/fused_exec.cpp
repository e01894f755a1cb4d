// The fused-sweep executor, compiled three times (fused_exec.inc): for AVX-512, AVX2 and
// the baseline x86-64, chosen once at run time from the CPU's features, so the build
// needs no -march flag. Transcendental functions are declared with the `simd` attribute,
// which lets GCC call glibc's vector math library (libmvec: _ZGVeN16v_expf and the like,
// within 4 ulp) from vectorised tile loops. Registers are untyped tile buffers that hold
// a different dtype from one instruction to the next: this file is compiled with
// -fno-strict-aliasing (compiler/CMakeLists.txt).
#ifdef _OPENMP
#include <omp.h>
#endif

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string_view>
#include <type_traits>

#include "backends/cpu/fused_program.hpp"
#include "backends/cpu/realise.hpp"
#include "backends/cpu/spin_team.hpp"
#include "glia/core/elementwise.hpp"
#include "glia/core/monoid.hpp"
#include "glia/core/tensor.hpp"

#define GLIA_SIMD_MATH(name, type) type name(type) noexcept __attribute__((simd("notinbranch")));
#define GLIA_SIMD_MATH2(name, type) \
  type name(type, type) noexcept __attribute__((simd("notinbranch")));
#ifdef GLIA_HAVE_LIBMVEC
extern "C" {
GLIA_SIMD_MATH(expf, float)
GLIA_SIMD_MATH(expm1f, float)
GLIA_SIMD_MATH(logf, float)
GLIA_SIMD_MATH(log1pf, float)
GLIA_SIMD_MATH(tanhf, float)
GLIA_SIMD_MATH(erff, float)
GLIA_SIMD_MATH(sinf, float)
GLIA_SIMD_MATH(cosf, float)
GLIA_SIMD_MATH2(powf, float)
GLIA_SIMD_MATH2(atan2f, float)
GLIA_SIMD_MATH(exp, double)
GLIA_SIMD_MATH(expm1, double)
GLIA_SIMD_MATH(log, double)
GLIA_SIMD_MATH(log1p, double)
GLIA_SIMD_MATH(tanh, double)
GLIA_SIMD_MATH(erf, double)
GLIA_SIMD_MATH(sin, double)
GLIA_SIMD_MATH(cos, double)
GLIA_SIMD_MATH2(pow, double)
GLIA_SIMD_MATH2(atan2, double)
}
#endif
#undef GLIA_SIMD_MATH
#undef GLIA_SIMD_MATH2

namespace glia::detail::cpu::fused {

#pragma GCC push_options
#pragma GCC target("avx512f,avx512dq,avx512bw,avx512vl,avx2,fma,f16c")
namespace isa_avx512 {
#include "backends/cpu/fused_exec.inc"
}  // namespace isa_avx512
#pragma GCC pop_options

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")
namespace isa_avx2 {
#include "backends/cpu/fused_exec.inc"
}  // namespace isa_avx2
#pragma GCC pop_options

namespace isa_baseline {
#include "backends/cpu/fused_exec.inc"
}  // namespace isa_baseline

namespace {

using RunFn = void (*)(const Sweep&, const Bindings&, int, SpinTeam*);

RunFn pick() { return by_vector_isa<RunFn>(&isa_avx512::run, &isa_avx2::run, &isa_baseline::run); }

}  // namespace

}  // namespace glia::detail::cpu::fused

namespace glia::detail::cpu {

VectorIsa vector_isa() {
  __builtin_cpu_init();
  VectorIsa isa = VectorIsa::baseline;
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
      __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl"))
    isa = VectorIsa::avx512;
  else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    isa = VectorIsa::avx2;
  if (const char* cap = std::getenv("GLIA_CPU_ISA"); cap != nullptr) {
    const std::string_view c(cap);
    if (c == "baseline") isa = VectorIsa::baseline;
    if (c == "avx2" && isa == VectorIsa::avx512) isa = VectorIsa::avx2;
  }
  return isa;
}

}  // namespace glia::detail::cpu

namespace glia::detail::cpu::fused {

void run_sweep(const Sweep& sweep, const Bindings& bindings, int threads, SpinTeam* team) {
  static const RunFn fn = pick();
  fn(sweep, bindings, threads, team);
}

}  // namespace glia::detail::cpu::fused
