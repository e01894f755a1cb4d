// jit'd functions called from kThreads threads at once on the cpu and interp backends, from
// the first call on (two signatures compiled at once by four threads each): a forward
// pass, value_and_grad and grad of a loss, and a donating training step that updates each
// thread's own parameters in place. Every result must be the bits one thread gets from
// freshly jitted functions: the same programs on the same backend.
#include "concurrency/concurrency_util.hpp"
#include "datasets/file_util.hpp"
#include "glia/autograd.hpp"
#include "glia/compiler.hpp"
#include "scoped_env.hpp"

namespace glia {
namespace {

using testing::kThreads;
using testing::Leaves;
using testing::random_f32;

using Params = std::map<std::string, Expr>;
using TensorParams = std::map<std::string, Tensor>;

constexpr int kRounds = 30;
constexpr std::int64_t kIn = 12, kHidden = 16, kOut = 6;
constexpr std::int64_t kBatches[] = {2, 7};

Expr loss(const Params& p, const Expr& x, const Expr& y) {
  Expr h = tanh(dot(x, p.at("w")) + p.at("b"));
  return mean(square(softmax(dot(h, p.at("v"))) - y));
}

// The functions under test, each jitted anew (a cold cache) on `backend`.
auto make_functions(const std::string& backend) {
  JitOptions options{.backend = backend};
  auto forward = jit(
      [](const Params& p, const Expr& x) {
        return softmax(dot(tanh(dot(x, p.at("w")) + p.at("b")), p.at("v")));
      },
      options);
  auto value_grad = jit(
      [](const Params& p, const Expr& x, const Expr& y) {
        auto [value, grads] = value_and_grad(loss)(p, x, y);
        return std::tuple{value, grads};
      },
      options);
  auto input_grad =
      jit([](const Params& p, const Expr& x, const Expr& y) { return grad<1>(loss)(p, x, y); },
          options);
  auto sgd_step = jit(
      [](const Params& p, const Expr& x, const Expr& y) {
        Params g = grad(loss)(p, x, y), next;
        for (const auto& [name, value] : p) next[name] = value - 0.05 * g.at(name);
        return next;
      },
      options);
  return std::tuple{forward, value_grad, input_grad, sgd_step};
}

TensorParams parameters(std::uint64_t seed) {
  return {{"w", random_f32({kIn, kHidden}, seed)},
          {"b", random_f32({kHidden}, seed + 1)},
          {"v", random_f32({kHidden, kOut}, seed + 2)}};
}

struct Inputs {
  std::vector<std::vector<Tensor>> x, y;  // [thread][input]
};
Inputs thread_inputs() {
  Inputs in{std::vector<std::vector<Tensor>>(kThreads), std::vector<std::vector<Tensor>>(kThreads)};
  for (int t = 0; t < kThreads; ++t)
    for (int i = 0; i < 2; ++i) {
      const std::int64_t rows = kBatches[(t + i) % 2];
      const auto seed = std::uint64_t(50 * t + 2 * i);
      in.x[std::size_t(t)].push_back(random_f32({rows, kIn}, seed));
      in.y[std::size_t(t)].push_back(random_f32({rows, kOut}, seed + 1));
    }
  return in;
}

// The forward pass, value_and_grad and grad (the latter with respect to the input) on
// parameters every thread reads at once.
void check_forward_and_gradients(const std::string& backend) {
  if (!testing::have_backend(backend)) GTEST_SKIP() << "backend " << backend << " is not built";
  // The cpu backend's kernel cache in a fresh directory: the threads compile its C modules.
  testing::TempDir cache;
  testing::ScopedEnv env("GLIA_CPU_CACHE", cache.path());
  const TensorParams p = parameters(7);
  const Inputs in = thread_inputs();
  auto calls = [&](const auto& fns, int t, int i) {
    const auto& [forward, value_grad, input_grad, sgd_step] = fns;
    const Tensor& x = in.x[std::size_t(t)][std::size_t(i)];
    const Tensor& y = in.y[std::size_t(t)][std::size_t(i)];
    Leaves leaves{forward(p, x), input_grad(p, x, y)};
    auto [value, grads] = value_grad(p, x, y);
    leaves.push_back(value);
    for (Tensor& g : tree_leaves<Tensor>(grads)) leaves.push_back(std::move(g));
    return leaves;
  };
  const auto threaded = make_functions(backend);
  testing::ThreadedRun run =
      testing::run_rounds(2, kRounds, [&](int t, int i) { return calls(threaded, t, i); });
  const auto single = make_functions(backend);
  testing::expect_one_thread_results(
      run, [&](int t, int i) { return calls(single, t, i); }, backend);
}

// A training step with buffer donation: each thread gives up its own parameters every step
// and gets them back updated, in place where the executable can, while the others do the
// same with theirs on the same executables.
void check_donating_steps(const std::string& backend) {
  if (!testing::have_backend(backend)) GTEST_SKIP() << "backend " << backend << " is not built";
  constexpr int kSteps = 40;
  const Inputs in = thread_inputs();
  auto train = [&](const auto& fns, int t) {
    const auto& sgd_step = std::get<3>(fns);
    TensorParams p = parameters(std::uint64_t(300 + t));
    for (int s = 0; s < kSteps; ++s) {
      const std::size_t i = std::size_t(s % 2);
      // The inputs are copies of tensors the test still holds: never written.
      p = sgd_step.call_donating(std::move(p), Tensor(in.x[std::size_t(t)][i]),
                                 Tensor(in.y[std::size_t(t)][i]));
    }
    return tree_leaves<Tensor>(p);
  };
  const auto threaded = make_functions(backend);
  testing::ThreadedRun run =
      testing::run_rounds(1, 1, [&](int t, int) { return train(threaded, t); });
  const auto single = make_functions(backend);
  testing::expect_one_thread_results(
      run, [&](int t, int) { return train(single, t); }, backend);
}

TEST(JitConcurrency, CpuForwardAndGradientsMatchOneThread) { check_forward_and_gradients("cpu"); }
TEST(JitConcurrency, InterpForwardAndGradientsMatchOneThread) {
  check_forward_and_gradients("interp");
}
TEST(JitConcurrency, CpuDonatingStepsMatchOneThread) { check_donating_steps("cpu"); }
TEST(JitConcurrency, InterpDonatingStepsMatchOneThread) { check_donating_steps("interp"); }

}  // namespace
}  // namespace glia
