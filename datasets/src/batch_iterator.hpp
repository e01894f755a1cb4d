// BatchIterator::Impl: hands out batches 0..count-1 made by a function, either on the
// caller's thread or prepared ahead on a background thread through a small bounded queue.
// Private to datasets/ (and its tests, which drive it with failing batch functions).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>

#include "glia/datasets/dataset.hpp"

namespace glia {

struct BatchIterator::Impl {
  // The worker makes a batch only when the queue has room: it is at most this many ahead.
  static constexpr std::size_t kQueueCapacity = 2;

  Impl(std::int64_t count, std::function<Batch(std::int64_t)> make_batch, bool prefetch);
  ~Impl();  // stops the worker and joins it, even mid-epoch
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;

  // The next batch; nullopt at the end, and after an exception from make_batch has been
  // rethrown (the epoch ends there).
  std::optional<Batch> next();

 private:
  void produce();  // the worker's loop

  std::int64_t count_;
  std::function<Batch(std::int64_t)> make_batch_;
  bool prefetch_;
  std::int64_t next_index_ = 0;  // without prefetch

  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<Batch> queue_;
  bool done_ = false;  // the worker has made its last batch (or failed)
  bool stop_ = false;  // the iterator is going away
  std::exception_ptr error_;
  std::thread worker_;
};

}  // namespace glia
