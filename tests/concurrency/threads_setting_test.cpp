// glia::cpu::set_threads is the process's setting: programs run from any thread use that
// many OpenMP threads. It used to set the calling thread's OpenMP count only, so a call
// from another thread ran on the default count (every core, for a server that asked for one
// thread per request), and a whole-array f64 sum split into another number of parts gave
// other bits than the same call on the thread that set it.
#include "concurrency/concurrency_util.hpp"
#include "glia/compiler.hpp"
#include "glia/compiler/cpu_backend.hpp"

namespace glia {
namespace {

using testing::kThreads;

TEST(ThreadsSetting, SetThreadsHoldsOnEveryThread) {
  if (!testing::have_backend("cpu")) GTEST_SKIP() << "the cpu backend is not built";
  // Enough work that the compiled sum splits across threads where more than one runs.
  auto f = jit([](const Expr& x) { return sum(exp(x) * 0.5); }, {.backend = "cpu"});
  const Tensor x = testing::random_f32({1 << 20}, 5).cast(DType::f64);
  const int before = cpu::threads();
  cpu::set_threads(1);  // the default here is every core: on one core this checks little
  const Tensor want = f(x);
  std::vector<Tensor> got(kThreads);
  std::vector<int> seen(kThreads, 0);
  testing::run_together([&](int t) {
    got[std::size_t(t)] = f(x);
    seen[std::size_t(t)] = cpu::threads();
  });
  cpu::set_threads(before);
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_EQ(seen[std::size_t(t)], 1) << "thread " << t;
    EXPECT_TRUE(testing::same_bits(got[std::size_t(t)], want))
        << "thread " << t << ": " << testing::bits_difference(got[std::size_t(t)], want);
  }
}

}  // namespace
}  // namespace glia
