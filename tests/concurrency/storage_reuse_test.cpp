// Storage an executable writes again — an output buffer it handed out before, or an input
// given up for donation — is written only after every other holder has let it go, and
// that letting go happens before the write even when a holder on another thread is
// ordered with the writer by nothing but the reference count. Under ThreadSanitizer an
// unordered read on the other thread is reported; here, the values and the reuse itself
// are checked.
#include <atomic>

#include "concurrency/concurrency_util.hpp"
#include "glia/compiler.hpp"

namespace glia {
namespace {

using testing::random_f32;
using testing::same_bits;

// The tile executor is glia's own code (instrumented under TSan), unlike compiled C.
JitOptions tile_options() {
  return {.backend = "cpu",
          .compile_options = {.cpu = {.fused = CompileOptions::Cpu::Fused::tile}}};
}

// Reads every element of `held` on a thread of its own, drops it, and only then raises a
// flag that orders nothing (relaxed): what orders the drop before the caller's next write
// is the reference count alone, as between two threads that share tensors through no lock.
class ReadAndLetGo {
 public:
  explicit ReadAndLetGo(Tensor held)
      : thread_([this, held = std::move(held)]() mutable {
          double sum = 0;
          for (std::int64_t i = 0; i < held.numel(); ++i) sum += held.data<float>()[i];
          sum_ = sum;
          held = Tensor();
          done_.store(true, std::memory_order_relaxed);
        }) {}
  ~ReadAndLetGo() { thread_.join(); }
  void wait_until_done() const {
    while (!done_.load(std::memory_order_relaxed)) std::this_thread::yield();
  }
  double sum() const { return sum_; }

 private:
  std::atomic<bool> done_{false};
  double sum_ = 0;
  std::thread thread_;
};

double sum_of(const Tensor& t) {
  double sum = 0;
  for (std::int64_t i = 0; i < t.numel(); ++i) sum += t.data<float>()[i];
  return sum;
}

TEST(StorageReuse, AnOutputLetGoOnAnotherThreadIsWrittenAfterItsReads) {
  if (!testing::have_backend("cpu")) GTEST_SKIP() << "the cpu backend is not built";
  auto fn = [](const Expr& x) { return tanh(x) * 2.0 + 1.0; };
  auto f = jit(fn, tile_options());
  const Tensor x = random_f32({64, 33}, 1), x2 = random_f32({64, 33}, 2);
  Tensor y = f(x);
  const void* storage = y.raw_data();
  const double want_sum = sum_of(y);
  Tensor z;
  {
    ReadAndLetGo reader(std::move(y));
    reader.wait_until_done();
    z = f(x2);  // the workspace's buffer that y held is free again: written in place
    EXPECT_EQ(reader.sum(), want_sum);
  }
  EXPECT_EQ(z.raw_data(), storage) << "the output buffer was not reused";
  EXPECT_TRUE(same_bits(z, jit(fn, tile_options())(x2)));
}

TEST(StorageReuse, ADonatedInputLetGoOnAnotherThreadIsWrittenAfterItsReads) {
  if (!testing::have_backend("cpu")) GTEST_SKIP() << "the cpu backend is not built";
  auto fn = [](const Expr& p, const Expr& g) { return p - 0.5 * g; };
  auto step = jit(fn, tile_options());
  Tensor p = random_f32({48, 40}, 3);
  const Tensor g = random_f32({48, 40}, 4);
  const Tensor want = jit(fn, tile_options())(p, g);
  const void* storage = p.raw_data();
  const double want_sum = sum_of(p);
  Tensor q;
  {
    ReadAndLetGo reader(p);  // a second holder: p is not donated until it lets go
    reader.wait_until_done();
    q = step.call_donating(std::move(p), Tensor(g));
    EXPECT_EQ(reader.sum(), want_sum);
  }
  EXPECT_EQ(q.raw_data(), storage) << "the donated input was not updated in place";
  EXPECT_TRUE(same_bits(q, want));
}

}  // namespace
}  // namespace glia
