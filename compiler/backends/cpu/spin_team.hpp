// Internal: glia's own team of helper threads for the parallel loops of its kernels, and
// run_parts, which spreads a loop's parts over it or over OpenMP.
//
// An OpenMP region costs ~0.5 us on this project's machines, whether or not its workers
// sleep: libgomp wakes them with a futex call at the region's start and at its barrier.
// A handoff between two spinning threads costs ~60 ns. The team's helpers spin a while
// after each job, then yield the core between checks, then sleep; a job wakes them with a
// system call only if one sleeps. Helpers claim parts from a shared counter; the caller
// runs part 0, then claims too, taking every part no helper has: a helper that is asleep,
// descheduled or slow to see the job costs its share of the work, never a wait.
//
// Executables use the team only when none of their kernels enter OpenMP (oneDNN's
// primitives do): its helpers and OpenMP's workers would otherwise spin for the same
// cores, each stalling the other's regions.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "backends/cpu/realise.hpp"

namespace glia::detail::cpu {

class SpinTeam {
 public:
  using PartFn = void (*)(const void* body, int part);

  // The process's team; null where GLIA_CPU_TEAM=openmp.
  static SpinTeam* instance();

  // Runs fn(body, p) for each p in [0, parts) on the calling thread and up to parts - 1
  // helpers, returning once every part is done (their writes visible to the caller).
  // False, running nothing, where another thread's job holds the team: run it otherwise.
  bool run(int parts, PartFn fn, const void* body);

  SpinTeam(const SpinTeam&) = delete;
  SpinTeam& operator=(const SpinTeam&) = delete;

 private:
  SpinTeam() = default;
  void grow(int helpers);
  void serve();
  void claim_parts();

  std::atomic<bool> busy_{false};
  std::atomic<std::uint32_t> generation_{0};  // a new job bumps it; helpers futex-wait on it
  // generation << 32 | parts << 16 | the next part: a claim takes a part of the job the
  // word names, and only then reads the job's function (published before the word).
  std::atomic<std::uint64_t> claims_{0};
  std::atomic<PartFn> fn_{nullptr};
  std::atomic<const void*> body_{nullptr};
  std::atomic<int> done_{0};
  std::atomic<int> sleepers_{0};
  std::mutex grow_mutex_;
  std::atomic<int> helpers_{0};
};

// The threads a run's parallel loops may use: the run's OpenMP thread count (ThreadScope
// sets it), 1 without OpenMP.
inline int run_threads() {
#ifdef _OPENMP
  return omp_get_max_threads();
#else
  return 1;
#endif
}

// Runs body(part) for each part in [0, parts), each part whole on one thread. Given a
// team: on it, or all on the calling thread where another run holds it (never in OpenMP,
// whose workers would then spin beside the team's). Else in an OpenMP region of `parts`
// threads, each taking every team-size-th part (a nested or capped team may have fewer
// threads than asked). Helpers and OpenMP workers flush denormals, as the calling thread
// does during a run.
template <class Body>
void run_parts(SpinTeam* team, int parts, const Body& body) {
  if (parts <= 1) {
    if (parts == 1) body(0);
    return;
  }
  if (team != nullptr) {
    auto part = [](const void* b, int p) { (*static_cast<const Body*>(b))(p); };
    if (!team->run(parts, part, &body))
      for (int p = 0; p < parts; ++p) body(p);
    return;
  }
#ifdef _OPENMP
#pragma omp parallel num_threads(parts)
  {
    FlushDenormals flush;
    for (int p = omp_get_thread_num(); p < parts; p += omp_get_num_threads()) body(p);
  }
#else
  for (int p = 0; p < parts; ++p) body(p);
#endif
}

}  // namespace glia::detail::cpu
