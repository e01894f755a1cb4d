// What the concurrency tests share: kThreads threads released at once by a latch (so that
// their first calls really overlap: two threads compiling one signature, others another),
// inputs that differ per thread, and tensors compared bit for bit. Each test runs its calls
// on the threads first (cold caches), then computes what one thread gives on fresh
// functions, and asserts every threaded result equals it.
//   glia::testing::run_together([&](int t) { outputs[t] = f(inputs[t]); });
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <exception>
#include <latch>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "glia/compiler/registry.hpp"
#include "glia/core.hpp"

namespace glia::testing {

// As many threads as the issue asks for: more than this machine's cores, so that calls are
// preempted in the middle and interleave at arbitrary points.
inline constexpr int kThreads = 8;

// Runs body(t) for t in [0, kThreads) on kThreads threads that wait on one latch until all
// exist, then start together. An exception on a thread is rethrown here after the join.
template <class Body>
void run_together(const Body& body) {
  std::latch start(kThreads);
  std::mutex mutex;
  std::exception_ptr failure;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      start.arrive_and_wait();
      try {
        body(t);
      } catch (...) {
        std::lock_guard lock(mutex);
        if (!failure) failure = std::current_exception();
      }
    });
  for (std::thread& th : threads) th.join();
  if (failure) std::rethrow_exception(failure);
}

// f32 values in [-1, 1) from a xorshift of `seed`: every thread gets inputs of its own.
inline Tensor random_f32(const Shape& shape, std::uint64_t seed) {
  Tensor x(DType::f32, shape);
  float* p = x.data<float>();
  std::uint64_t s = seed * 0x9E3779B97F4A7C15ull + 0x2545F4914F6CDD1Dull;
  for (std::int64_t i = 0; i < x.numel(); ++i) {
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;
    p[i] = static_cast<float>(static_cast<double>(s % 2000003) / 1000001.5 - 1.0);
  }
  return x;
}

// Same dtype, shape and bytes (NaNs included): the same computation on the same code path.
inline bool same_bits(const Tensor& a, const Tensor& b) {
  return a.defined() && b.defined() && a.type() == b.type() &&
         std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) == 0;
}

// Why two tensors are not the same bits: their types, or the first element that differs.
inline std::string bits_difference(const Tensor& a, const Tensor& b) {
  if (!a.defined() || !b.defined()) return "an undefined tensor";
  if (!(a.type() == b.type()))
    return cat("types differ: ", a.type().to_string(), " vs ", b.type().to_string());
  const std::size_t width = dtype_size(a.dtype());
  const auto* pa = static_cast<const unsigned char*>(a.raw_data());
  const auto* pb = static_cast<const unsigned char*>(b.raw_data());
  for (std::int64_t i = 0; i < a.numel(); ++i)
    if (std::memcmp(pa + std::size_t(i) * width, pb + std::size_t(i) * width, width) != 0)
      return cat("element ", i, " of ", a.type().to_string(), ": ", a.element(i), " vs ",
                 b.element(i));
  return "the same bits";
}

// Every leaf of two flattened results, bit for bit.
inline void expect_same_bits(const std::vector<Tensor>& got, const std::vector<Tensor>& want,
                             const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (std::size_t i = 0; i < got.size(); ++i)
    EXPECT_TRUE(same_bits(got[i], want[i]))
        << what << ", leaf " << i << ": " << bits_difference(got[i], want[i]);
}

// A call's result flattened to its tensors.
using Leaves = std::vector<Tensor>;

// What each thread's calls gave: its first result for each of its inputs, and how many later
// calls gave other bits than that first result.
struct ThreadedRun {
  std::vector<std::vector<Leaves>> first;  // [thread][input]
  std::vector<int> changed;                // [thread]
};

// Each thread calls call(t, i) for its inputs i in [0, inputs), `rounds` times over, all
// threads at once; the first round (the raced compiles) is kept to compare with one
// thread's results, and every later round is compared with it here, bit for bit.
template <class Call>
ThreadedRun run_rounds(int inputs, int rounds, const Call& call) {
  ThreadedRun run{std::vector<std::vector<Leaves>>(kThreads), std::vector<int>(kThreads, 0)};
  run_together([&](int t) {
    std::vector<Leaves>& first = run.first[std::size_t(t)];
    for (int r = 0; r < rounds; ++r)
      for (int i = 0; i < inputs; ++i) {
        Leaves got = call(t, i);
        if (r == 0) {
          first.push_back(std::move(got));
          continue;
        }
        const Leaves& want = first[std::size_t(i)];
        bool same = got.size() == want.size();
        for (std::size_t k = 0; same && k < got.size(); ++k) same = same_bits(got[k], want[k]);
        run.changed[std::size_t(t)] += same ? 0 : 1;
      }
  });
  return run;
}

// Every thread's results equal want(t, i), computed afterwards on one thread, and no later
// call changed them.
template <class Want>
void expect_one_thread_results(const ThreadedRun& run, const Want& want, const std::string& what) {
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_EQ(run.changed[std::size_t(t)], 0) << what << ": thread " << t << "'s later calls";
    const std::vector<Leaves>& first = run.first[std::size_t(t)];
    for (std::size_t i = 0; i < first.size(); ++i)
      expect_same_bits(first[i], want(t, int(i)), cat(what, ", thread ", t, ", input ", i));
  }
}

// Whether glia was built with the backend of that name (cpu needs oneDNN).
inline bool have_backend(const std::string& name) {
  const std::vector<std::string> names = backend_names();
  return std::find(names.begin(), names.end(), name) != names.end();
}

}  // namespace glia::testing
