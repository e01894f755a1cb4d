// The batch iterator: synchronous, or with a worker thread that stays at most
// kQueueCapacity batches ahead. The worker's exceptions are handed to next() in order,
// after the batches made before them.
#include "batch_iterator.hpp"

#include <utility>

namespace glia {

BatchIterator::Impl::Impl(std::int64_t count, std::function<Batch(std::int64_t)> make_batch,
                          bool prefetch)
    : count_(count), make_batch_(std::move(make_batch)), prefetch_(prefetch) {
  // Started last: the worker reads every member initialized above.
  if (prefetch_) worker_ = std::thread([this] { produce(); });
}

BatchIterator::Impl::~Impl() {
  if (!worker_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  changed_.notify_all();
  worker_.join();
}

void BatchIterator::Impl::produce() {
  for (std::int64_t i = 0; i < count_; ++i) {
    {
      std::unique_lock<std::mutex> lock(mutex_);
      changed_.wait(lock, [&] { return stop_ || queue_.size() < kQueueCapacity; });
      if (stop_) return;
    }
    Batch batch;
    try {
      batch = make_batch_(i);
    } catch (...) {
      std::lock_guard<std::mutex> lock(mutex_);
      error_ = std::current_exception();
      done_ = true;
      changed_.notify_all();
      return;
    }
    std::lock_guard<std::mutex> lock(mutex_);
    queue_.push_back(std::move(batch));
    changed_.notify_all();
  }
  std::lock_guard<std::mutex> lock(mutex_);
  done_ = true;
  changed_.notify_all();
}

std::optional<Batch> BatchIterator::Impl::next() {
  if (!prefetch_) {
    if (next_index_ >= count_) return std::nullopt;
    std::int64_t i = next_index_++;
    try {
      return make_batch_(i);
    } catch (...) {
      next_index_ = count_;
      throw;
    }
  }
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait(lock, [&] { return !queue_.empty() || done_; });
  if (!queue_.empty()) {
    Batch batch = std::move(queue_.front());
    queue_.pop_front();
    changed_.notify_all();
    return batch;
  }
  if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
  return std::nullopt;
}

BatchIterator::BatchIterator(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
BatchIterator::~BatchIterator() = default;
BatchIterator::BatchIterator(BatchIterator&&) noexcept = default;
BatchIterator& BatchIterator::operator=(BatchIterator&&) noexcept = default;

std::optional<Batch> BatchIterator::next() {
  check(impl_ != nullptr, "BatchIterator::next: this iterator was moved from");
  return impl_->next();
}

}  // namespace glia
