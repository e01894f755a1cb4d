// The data-parallel suite's main, run by tests/dist/run_mpi.sh under mpirun: one MPI
// session for the whole run, GoogleTest's output from rank 0 alone, and one exit status
// for every rank (a test failing on any rank fails the run on all).
#include <gtest/gtest.h>

#include "dist_env.hpp"

namespace glia::dist {
Communicator& world() { return *session().world(); }
mpi::Session& session() {
  static mpi::Session s;
  return s;
}
}  // namespace glia::dist

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  glia::Communicator& world = glia::dist::world();
  if (world.rank() != 0) {
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
  }
  std::int64_t failed = RUN_ALL_TESTS() != 0 ? 1 : 0;
  world.all_reduce_sum(&failed, 1, glia::DType::i64);
  if (world.rank() == 0 && failed > 0)
    std::printf("FAILED on %lld rank(s)\n", static_cast<long long>(failed));
  return failed > 0 ? 1 : 0;
}
