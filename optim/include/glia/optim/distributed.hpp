// Data-parallel training over MPI. Start every process with mpirun; each holds a shard of
// every batch, the training step all-reduces the gradients, and every process applies the
// same update, so the parameters stay identical:
//   glia::mpi::Session mpi;                      // MPI_Init_thread ... MPI_Finalize
//   auto loop = glia::trainer(model, loss, opt, {.communicator = mpi.world()});
//   glia::Batches train(data, {.batch_size = 128, .shuffle = true,
//                               .shard = mpi.world()->rank(), .shards = mpi.world()->size()});
//   loop.run(train, {.epochs = 5});                // rank 0 prints and writes checkpoints
// A build without MPI compiles the same code; Session then throws a glia::Error that says
// how to get MPI.
#pragma once

#include <memory>

#include "glia/core/collective.hpp"
#include "glia/optim/step.hpp"

namespace glia::mpi {

// Whether this build of glia has MPI.
bool available();

// MPI for this process: initialised (MPI_THREAD_SERIALIZED: only the thread that runs the
// steps calls MPI) unless something else already did, finalised when the session that
// initialised it ends. One at a time; MPI cannot start again after it was finalised.
class Session {
 public:
  Session();
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;
  // Every process started by mpirun (a duplicate of MPI_COMM_WORLD).
  std::shared_ptr<Communicator> world() const { return world_; }

 private:
  bool initialised_here_ = false;
  std::shared_ptr<Communicator> world_;
};

// Ends every process of the job (MPI_Abort): a process that fails alone must not leave
// the others waiting in a collective. Without MPI (or before MPI starts): std::exit.
[[noreturn]] void abort(int code);

// The rank and size mpirun gave this process (its environment), without MPI: 0 and 1
// outside mpirun.
int launched_rank();
int launched_size();

}  // namespace glia::mpi

namespace glia {

// Every process gets `root`'s parameters, model state and optimizer state (same names,
// shapes and dtypes on every process; glia::Error otherwise, on every process).
void broadcast_state(TrainState& state, Communicator& communicator, int root = 0);

// How many processes hold other bytes than `root` in data[0, bytes), the same count on
// every process: what they must agree on, checked before a collective that needs it.
std::int64_t processes_differing(Communicator& communicator, const void* data, std::int64_t bytes,
                                 int root = 0);

}  // namespace glia
