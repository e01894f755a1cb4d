// What the data-parallel loop tests share (tests/optim over threads, tests/dist over MPI):
// a trainer of the checkpoint tests' classifier on a communicator, showing progress lines
// on `out`, and a process's shard of a data set's batches.
#pragma once

#include <memory>
#include <ostream>

#include "optim/checkpoint_test_util.hpp"

namespace glia::testing {

inline Loop rank_trainer(const std::shared_ptr<Communicator>& comm, std::ostream& out) {
  return trainer(small_classifier(), cross_entropy, optimizers::adam(1e-2),
                 {.backend = "cpu",
                  .seed = 3,
                  .metrics = {{"accuracy", accuracy}},
                  .output = &out,
                  .progress = ProgressMode::lines,
                  .communicator = comm});
}

inline Batches shards_of(const Dataset& d, int rank, int shards) {
  return Batches(d,
                 {.batch_size = 16, .shuffle = true, .seed = 4, .shard = rank, .shards = shards});
}

}  // namespace glia::testing
