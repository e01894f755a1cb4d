// The cpu backend's thread settings, here so that they exist in every build (they do
// nothing where glia is built without oneDNN's OpenMP runtime).
#include "glia/compiler/cpu_backend.hpp"

#ifdef GLIA_CPU_OPENMP
#include <omp.h>
#endif

#include "glia/core/error.hpp"

namespace glia::cpu {

void set_threads(int n) {
  check(n >= 1, "cpu::set_threads: need at least 1 thread, got ", n);
#ifdef GLIA_CPU_OPENMP
  omp_set_num_threads(n);
#endif
}

int threads() {
#ifdef GLIA_CPU_OPENMP
  return omp_get_max_threads();
#else
  return 1;
#endif
}

}  // namespace glia::cpu
