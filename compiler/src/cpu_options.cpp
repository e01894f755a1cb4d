// The cpu backend's thread settings, here so that they exist in every build (they do
// nothing where glia is built without oneDNN's OpenMP runtime).
#include "glia/compiler/cpu_backend.hpp"

#ifdef GLIA_CPU_OPENMP
#include <omp.h>
#endif

#include <atomic>

#include "glia/core/error.hpp"
#include "src/cpu_threads.hpp"

namespace glia {

namespace {
// The process's setting, not the calling thread's: omp_set_num_threads sets the count of
// the calling thread only (each thread has its own OpenMP ICVs; a new thread starts from
// the default), so a program run from another thread would use every core, and a
// whole-array reduction split into another number of parts would give other bits.
std::atomic<int> g_threads{0};
}  // namespace

int detail::cpu_threads_setting() { return g_threads.load(std::memory_order_relaxed); }

void cpu::set_threads(int n) {
  check(n >= 1, "cpu::set_threads: need at least 1 thread, got ", n);
  g_threads.store(n, std::memory_order_relaxed);
#ifdef GLIA_CPU_OPENMP
  omp_set_num_threads(n);  // OpenMP code of the caller's own follows it too, as before
#endif
}

int cpu::threads() {
#ifdef GLIA_CPU_OPENMP
  const int set = g_threads.load(std::memory_order_relaxed);
  return set > 0 ? set : omp_get_max_threads();
#else
  return 1;
#endif
}

}  // namespace glia
