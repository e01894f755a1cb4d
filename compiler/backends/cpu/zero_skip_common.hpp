// Internal: what glia's zero-skipping kernels share (the matmul, zero_skip_matmul.hpp; a
// convolution's data and kernel gradients, zero_skip_conv.hpp): the environment switch,
// their scratchpad tables' alignment, and the wrapper around the dense kernel each falls
// back on, which counts the runs that skipped zeros for describe().
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "backends/cpu/realise.hpp"
#include "glia/core/error.hpp"

namespace glia::detail::cpu {

// False where GLIA_CPU_ZERO_SKIP=0 in the environment (read when a kernel is realised).
inline bool zero_skip_enabled() {
  const char* e = std::getenv("GLIA_CPU_ZERO_SKIP");
  return e == nullptr || std::strcmp(e, "0") != 0;
}

// Bytes rounded up to whole cache lines: each scratchpad table on its own.
inline std::size_t cache_aligned(std::size_t bytes) { return (bytes + 63) / 64 * 64; }

// A kernel that skips zeros where a run allows (skip_zeros), else runs the dense kernel it
// wraps, whose state, threads and scratchpad it shares.
class ZeroSkipping : public CpuKernel {
 public:
  explicit ZeroSkipping(std::unique_ptr<CpuKernel> dense) : dense_(std::move(dense)) {}

  void run(RunContext& ctx) const final {
    runs_.fetch_add(1, std::memory_order_relaxed);
    if (skip_zeros(ctx)) {
      skipped_.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    dense_->run(ctx);
  }
  // "<what()> (3 of 5 runs), else <the dense kernel's>"
  std::string describe() const final {
    return cat(what(), " (", skipped_.load(std::memory_order_relaxed), " of ",
               runs_.load(std::memory_order_relaxed), " runs), else ", dense_->describe());
  }
  std::size_t scratchpad_bytes() const final {
    return std::max(skipping_scratchpad_bytes(), dense_->scratchpad_bytes());
  }
  std::unique_ptr<KernelState> make_state() const final { return dense_->make_state(); }
  bool uses_openmp() const final { return dense_->uses_openmp(); }

 protected:
  // Whether the run skipped zeros (and wrote the output); false: the dense kernel runs.
  virtual bool skip_zeros(RunContext& ctx) const = 0;
  virtual std::string what() const = 0;
  virtual std::size_t skipping_scratchpad_bytes() const = 0;

 private:
  std::unique_ptr<CpuKernel> dense_;
  mutable std::atomic<std::int64_t> runs_{0}, skipped_{0};
};

}  // namespace glia::detail::cpu
