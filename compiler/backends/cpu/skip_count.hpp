// Internal: a zero-skipping kernel's count of the runs that skipped zeros, for describe().
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

#include "glia/core/error.hpp"

namespace glia::detail::cpu {

class SkipCount {
 public:
  // skip() (whether the run could skip zeros), else dense(): counted either way.
  template <class Skip, class Dense>
  void run(const Skip& skip, const Dense& dense) const {
    runs_.fetch_add(1, std::memory_order_relaxed);
    if (skip()) {
      skipped_.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    dense();
  }
  // "(3 of 5 runs)"
  std::string text() const {
    return cat("(", skipped_.load(std::memory_order_relaxed), " of ",
               runs_.load(std::memory_order_relaxed), " runs)");
  }

 private:
  mutable std::atomic<std::int64_t> runs_{0}, skipped_{0};
};

}  // namespace glia::detail::cpu
