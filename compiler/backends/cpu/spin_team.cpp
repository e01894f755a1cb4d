// glia's team of spinning helper threads (spin_team.hpp).
#include "backends/cpu/spin_team.hpp"

#include <chrono>
#include <climits>
#include <cstdlib>
#include <string_view>
#include <system_error>
#include <thread>

#if defined(__linux__)
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace glia::detail::cpu {

namespace {

// A helper spins this long after its last job, then yields its core between checks until
// kYield, then sleeps until the next job wakes it. While it spins it still yields every
// kSpinYield: where the scheduler has put it on the caller's core (it does, now and then,
// until it balances them again), the caller gets the core back at once rather than at the
// end of the helper's time slice. The caller waiting for a helper's part yields as often.
constexpr auto kSpin = std::chrono::microseconds(20);
constexpr auto kYield = std::chrono::microseconds(200);
constexpr auto kSpinYield = std::chrono::microseconds(2);
// Parts a job may have: the claim word keeps them in 16 bits.
constexpr int kMaxParts = 1 << 15;

void relax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#endif
}

void futex_wait(std::atomic<std::uint32_t>& word, std::uint32_t seen) {
#if defined(__linux__)
  syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&word), FUTEX_WAIT_PRIVATE, seen, nullptr,
          nullptr, 0);
#else
  (void)word;
  (void)seen;
  std::this_thread::sleep_for(std::chrono::microseconds(50));
#endif
}

void futex_wake_all([[maybe_unused]] std::atomic<std::uint32_t>& word) {
#if defined(__linux__)
  syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&word), FUTEX_WAKE_PRIVATE, INT_MAX, nullptr,
          nullptr, 0);
#endif
}

constexpr std::uint64_t next_part(std::uint64_t claims) { return claims & 0xFFFFu; }
constexpr std::uint64_t part_count(std::uint64_t claims) { return (claims >> 16) & 0xFFFFu; }

}  // namespace

SpinTeam* SpinTeam::instance() {
  // Never destroyed: helpers may still be between jobs when the process exits.
  static SpinTeam* const team = [] {
    const char* e = std::getenv("GLIA_CPU_TEAM");
    return e != nullptr && std::string_view(e) == "openmp" ? nullptr : new SpinTeam;
  }();
  return team;
}

void SpinTeam::grow(int helpers) {
  if (helpers_.load(std::memory_order_acquire) >= helpers) return;
  std::lock_guard lock(grow_mutex_);
  for (int h = helpers_.load(std::memory_order_relaxed); h < helpers; ++h) {
    try {
      std::thread([this] { serve(); }).detach();
    } catch (const std::system_error&) {
      return;  // no more threads: the caller takes the parts nobody claims
    }
    helpers_.store(h + 1, std::memory_order_release);
  }
}

void SpinTeam::claim_parts() {
  std::uint64_t c = claims_.load(std::memory_order_acquire);
  while (next_part(c) < part_count(c)) {
    if (!claims_.compare_exchange_weak(c, c + 1, std::memory_order_acq_rel,
                                       std::memory_order_acquire))
      continue;
    fn_.load(std::memory_order_relaxed)(body_.load(std::memory_order_relaxed),
                                        static_cast<int>(next_part(c)));
    done_.fetch_add(1, std::memory_order_release);
    c = claims_.load(std::memory_order_acquire);
  }
}

void SpinTeam::serve() {
  FlushDenormals flush;  // for the thread's life: it only ever runs glia's kernels
  std::uint32_t seen = generation_.load(std::memory_order_acquire);
  for (;;) {
    auto start = std::chrono::steady_clock::now(), yielded = start;
    for (unsigned i = 1; generation_.load(std::memory_order_acquire) == seen; ++i) {
      if (i % 64 != 0) {
        relax();
        continue;
      }
      const auto now = std::chrono::steady_clock::now();
      const auto waited = now - start;
      if (waited < kSpin) {
        if (now - yielded >= kSpinYield) std::this_thread::yield(), yielded = now;
        continue;
      }
      if (waited < kYield) {
        std::this_thread::yield();
        continue;
      }
      // Either the job's author sees this sleeper and wakes it, or the futex sees the
      // new generation and returns at once (both sides sequentially consistent).
      sleepers_.fetch_add(1, std::memory_order_seq_cst);
      if (generation_.load(std::memory_order_seq_cst) == seen) futex_wait(generation_, seen);
      sleepers_.fetch_sub(1, std::memory_order_relaxed);
      start = std::chrono::steady_clock::now();
    }
    seen = generation_.load(std::memory_order_acquire);
    claim_parts();
  }
}

bool SpinTeam::run(int parts, PartFn fn, const void* body) {
  if (parts > kMaxParts || busy_.exchange(true, std::memory_order_acquire)) return false;
  grow(parts - 1);
  fn_.store(fn, std::memory_order_relaxed);
  body_.store(body, std::memory_order_relaxed);
  done_.store(0, std::memory_order_relaxed);
  const std::uint32_t generation = generation_.load(std::memory_order_relaxed) + 1;
  // Part 0 is the caller's (claims start at 1): a kernel run again and again keeps its
  // parts on the same cores, their data in those cores' caches (a row product's weights:
  // half of 400 KB in each L2), rather than swapping them whenever a helper claims first.
  claims_.store(std::uint64_t{generation} << 32 | std::uint64_t(parts) << 16 | 1u,
                std::memory_order_release);
  generation_.store(generation, std::memory_order_seq_cst);
  if (sleepers_.load(std::memory_order_seq_cst) > 0) futex_wake_all(generation_);
  fn(body, 0);
  done_.fetch_add(1, std::memory_order_relaxed);
  claim_parts();
  for (unsigned i = 1; done_.load(std::memory_order_acquire) != parts; ++i) {
    relax();
    if (i % 128 == 0) std::this_thread::yield();
  }
  busy_.store(false, std::memory_order_release);
  return true;
}

}  // namespace glia::detail::cpu
