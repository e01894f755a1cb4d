// Data parallelism inside the one training-step graph: each process traces the step on
// its shard of the batch; the shard's example count n, its n-weighted loss and metrics
// (bucket 0) and its n-weighted gradients and float model state (buckets 1, 2, ... of at
// most StepOptions::bucket_bytes, earliest-computed first, like PyTorch DDP) are summed
// over the processes by all_reduce nodes and divided by the total N, so every process
// applies the same update, equal to one process's on the whole batch up to rounding.
#pragma once

#include <memory>
#include <set>
#include <string>

#include "glia/core/collective.hpp"
#include "objective.hpp"

namespace glia::detail {

struct DataParallel {
  std::shared_ptr<Communicator> communicator;  // null: one process, no collectives
  std::int64_t id = 0;                         // its registry id
  std::int64_t bucket_bytes = 0;
  std::set<std::string> summed;  // metrics summed over processes, not averaged
  bool active() const { return id != 0; }
  int rank() const { return communicator ? communicator->rank() : 0; }
};

// Registers options.communicator (none, or a single process: inactive).
DataParallel data_parallel(const StepOptions& options, const char* who);

// The step's global loss and metrics from this shard's: n examples, the loss (a mean
// over the shard) and the batch metrics (means, or counts for `summed` ones). `total`
// becomes the global example count N.
struct GlobalStats {
  Expr total, loss;
  NamedExprs metrics;
};
GlobalStats reduce_stats(const DataParallel& dp, double n, const Expr& loss,
                         const NamedExprs& metrics);

// Gradients of an n-weighted loss and n-weighted float model state, in place: summed over
// the processes in buckets and divided by `total`.
void reduce_buckets(const DataParallel& dp, ExprParamMap& grads, ExprParamMap& weighted_state,
                    const Expr& total);

}  // namespace glia::detail
