// What the data-parallel suite's tests share: the MPI session and its world.
#pragma once

#include "glia/optim/distributed.hpp"

namespace glia::dist {
mpi::Session& session();
Communicator& world();
}  // namespace glia::dist
