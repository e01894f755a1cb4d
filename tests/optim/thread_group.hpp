// A Communicator over the threads of one process, for testing data parallelism without
// MPI: every rank is a thread; a sum adds the ranks' buffers in rank order, so every rank
// gets the same bits; a rank that fails aborts the group, so the others throw instead of
// waiting forever. run_ranks(n, f) runs f(rank, communicator) on n threads.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "glia/core/collective.hpp"
#include "glia/core/error.hpp"

namespace glia::testing {

class ThreadGroup {
 public:
  explicit ThreadGroup(int size) : size_(size), posted_(std::size_t(size)) {}
  int size() const { return size_; }

  struct Post {
    void* data = nullptr;
    std::int64_t count = 0;
    int kind = 0;  // what the rank is doing: a sum of a dtype, a broadcast, a barrier
  };
  // Everyone posts, then everyone reads the posts, then everyone leaves.
  template <class Use>
  void exchange(int rank, Post post, Use use) {
    posted_[std::size_t(rank)] = post;
    wait();
    for (const Post& p : posted_)
      check(p.count == post.count && p.kind == post.kind, "ThreadGroup: rank ", rank,
            " runs collective (kind ", post.kind, ", count ", post.count,
            ") while another runs (kind ", p.kind, ", count ", p.count, ")");
    use(posted_);
    wait();
  }
  void abort() {
    std::lock_guard lock(mutex_);
    aborted_ = true;
    cv_.notify_all();
  }

 private:
  void wait() {
    std::unique_lock lock(mutex_);
    check(!aborted_, "ThreadGroup: another rank failed");
    const std::int64_t generation = generation_;
    if (++arrived_ == size_) {
      arrived_ = 0;
      ++generation_;
      cv_.notify_all();
      return;
    }
    bool done = cv_.wait_for(lock, std::chrono::seconds(120),
                             [&] { return generation_ != generation || aborted_; });
    check(!aborted_, "ThreadGroup: another rank failed");
    check(done, "ThreadGroup: a collective waited 120 s for the other ranks");
  }

  int size_;
  std::vector<Post> posted_;
  std::mutex mutex_;
  std::condition_variable cv_;
  int arrived_ = 0;
  std::int64_t generation_ = 0;
  bool aborted_ = false;
};

class ThreadGroupCommunicator final : public Communicator {
 public:
  ThreadGroupCommunicator(std::shared_ptr<ThreadGroup> group, int rank)
      : group_(std::move(group)), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return group_->size(); }
  void all_reduce_sum(void* data, std::int64_t count, DType dtype) override {
    ++collectives;
    switch (dtype) {
      case DType::f32:
        return sum<float>(data, count, 1);
      case DType::f64:
        return sum<double>(data, count, 2);
      case DType::i32:
        return sum<std::int32_t>(data, count, 3);
      case DType::i64:
        return sum<std::int64_t>(data, count, 4);
      default:
        throw Error(cat("ThreadGroupCommunicator: no sum of ", dtype));
    }
  }
  void broadcast(void* data, std::int64_t bytes, int root) override {
    group_->exchange(rank_, {data, bytes, 10 + root}, [&](const std::vector<ThreadGroup::Post>& p) {
      if (rank_ != root && bytes > 0)
        std::memcpy(data, p[std::size_t(root)].data, std::size_t(bytes));
    });
  }
  void barrier() override {
    group_->exchange(rank_, {nullptr, 0, 5}, [](const auto&) {});
  }
  std::string name() const override { return "thread_group"; }
  int collectives = 0;  // all_reduce_sum calls so far

 private:
  template <class T>
  void sum(void* data, std::int64_t count, int kind) {
    std::vector<T> total(std::size_t(count), T(0));
    group_->exchange(rank_, {data, count, kind}, [&](const std::vector<ThreadGroup::Post>& p) {
      for (const ThreadGroup::Post& post : p)  // rank order: the same bits on every rank
        for (std::int64_t i = 0; i < count; ++i)
          total[std::size_t(i)] += static_cast<T*>(post.data)[i];
    });
    if (count > 0) std::memcpy(data, total.data(), total.size() * sizeof(T));
  }
  std::shared_ptr<ThreadGroup> group_;
  int rank_;
};

// Runs f(rank, communicator) on `size` threads and rethrows the error that came first (the
// others' are "another rank failed").
template <class F>
void run_ranks(int size, F f) {
  auto group = std::make_shared<ThreadGroup>(size);
  std::mutex mutex;
  std::exception_ptr first;
  std::vector<std::thread> threads;
  for (int r = 0; r < size; ++r)
    threads.emplace_back([&, r] {
      try {
        f(r, std::make_shared<ThreadGroupCommunicator>(group, r));
      } catch (...) {
        {
          std::lock_guard lock(mutex);
          if (!first) first = std::current_exception();
        }
        group->abort();
      }
    });
  for (std::thread& t : threads) t.join();
  if (first) std::rethrow_exception(first);
}

}  // namespace glia::testing
