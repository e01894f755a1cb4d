// Collectives across processes, with no transport in core: a Communicator is the
// interface a transport implements (MPI in optim/, a thread group in the tests), and the
// all_reduce op of a traced graph names one through the registry below. Every process of
// a communicator must run the same collectives in the same order.
//   auto comm = std::make_shared<glia::LocalCommunicator>();  // one process: the identity
//   std::int64_t id = glia::register_communicator(comm);
//   glia::Expr total = glia::all_reduce(g, id, /*bucket=*/1);
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "glia/core/dtype.hpp"

namespace glia {

class Expr;

// A collective under way (Communicator::start_all_reduce_sum).
class CollectiveRequest {
 public:
  virtual ~CollectiveRequest() = default;
  virtual void wait() = 0;  // returns once the buffer holds the result
  // Moves the collective on without blocking (MPI progresses inside its calls); true once
  // it completed (wait() then returns at once).
  virtual bool test() = 0;
};

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // The rank among the processes of this machine (which GPU to take).
  virtual int local_rank() const { return rank(); }
  // In place: every process's `count` elements become their sum over the processes, the
  // same bits on every process. dtype f32, f64, i32 or i64.
  virtual void all_reduce_sum(void* data, std::int64_t count, DType dtype) = 0;
  // The same sum started, not awaited: the buffer belongs to the collective until its
  // request's wait(). Null: it completed already (the default: all_reduce_sum).
  virtual std::unique_ptr<CollectiveRequest> start_all_reduce_sum(void* data, std::int64_t count,
                                                                  DType dtype) {
    all_reduce_sum(data, count, dtype);
    return nullptr;
  }
  // In place: `bytes` bytes of `root` on every process.
  virtual void broadcast(void* data, std::int64_t bytes, int root) = 0;
  virtual void barrier() = 0;
  virtual std::string name() const = 0;  // "mpi", "local", ...
};

// One process: the sum is the value, a broadcast leaves it, a barrier returns at once.
class LocalCommunicator final : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  void all_reduce_sum(void*, std::int64_t, DType) override {}
  void broadcast(void*, std::int64_t, int) override {}
  void barrier() override {}
  std::string name() const override { return "local"; }
};

// The registry: an id (from 1, never reused) for a communicator; graphs hold the id, the
// caller keeps the communicator alive as long as graphs that name it run.
std::int64_t register_communicator(std::shared_ptr<Communicator> communicator);
// The communicator of `id`, or glia::Error when it was never registered or is gone.
std::shared_ptr<Communicator> registered_communicator(std::int64_t id);

// The element-wise sum of x over the processes of communicator `id` (f32, f64, i32 or
// i64). Not differentiable: a training step adds it after autograd. Collectives of one
// communicator run in `bucket` order within a graph.
Expr all_reduce(const Expr& x, std::int64_t communicator, std::int64_t bucket);

}  // namespace glia
