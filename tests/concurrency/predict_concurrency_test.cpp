// build()'s init, predict and predict.train on the cpu backend called from kThreads threads
// at once, from the first call on: threads compile the same signature at the same time
// (jit's executable cache, the kernel cache on disk, oneDNN's primitives) and other batch
// sizes beside it, then keep calling. Every result must be the bits one thread gets from a
// fresh build of the same model: the same programs run, on the same OpenMP thread count.
#include <algorithm>
#include <optional>

#include "concurrency/concurrency_util.hpp"
#include "datasets/file_util.hpp"
#include "glia/layers.hpp"
#include "scoped_env.hpp"

namespace glia {
namespace {

using testing::kThreads;
using testing::Leaves;

// Calls per input per thread: enough that calls of different threads overlap in every
// phase of a run (binding a workspace, kernels, releasing it).
constexpr int kRounds = 12;
// Thread t's first input has kBatches[t % 2] rows, its second the other: four threads
// compile one signature while four compile another.
constexpr std::int64_t kBatches[] = {3, 8};

// Each thread's inputs: [thread][input], input i with kBatches[(t + i) % 2] rows.
std::vector<std::vector<Tensor>> thread_inputs(std::vector<std::int64_t> row_shape) {
  std::vector<std::vector<Tensor>> inputs(kThreads);
  for (int t = 0; t < kThreads; ++t)
    for (int i = 0; i < 2; ++i) {
      std::vector<std::int64_t> dims = row_shape;
      dims.insert(dims.begin(), kBatches[(t + i) % 2]);
      inputs[std::size_t(t)].push_back(
          testing::random_f32(Shape(dims), std::uint64_t(100 * t + i)));
    }
  return inputs;
}

// Dense layers with dropout between them (active in train mode: random bits from a key).
Model mlp() {
  Model x = input("x", {-1, 24});
  Model h = dense(x, 32, {.activation = "relu"});
  h = dropout(h, {.rate = 0.25});
  return dense(h, 10, {.activation = "softmax"});
}

// Convolution, batch norm (its running statistics updated in train mode) and pooling.
Model cnn() {
  Model x = input("image", {-1, 9, 9, 3});
  Model y = conv(x, 6, {.kernel_size = {3, 3}, .activation = "relu"});
  y = batch_norm(y);
  y = max_pool(y, {.kernel_size = {2, 2}});
  return dense(flatten(y), 5);
}

// An LSTM: a loop whose body is a cpu executable of its own, run by every workspace of
// the model's executable at once.
Model rnn() {
  Model x = input("sequence", {-1, 5, 4});
  return dense(lstm(x, 6, {.return_sequences = false}), 3);
}

// predict and predict.train (each thread with keys of its own) on `model`'s inputs of
// `row_shape`, threaded on a cold build against one thread on another build. With
// `cold_kernels`, the cpu backend's kernel cache is a fresh directory, so the threads also
// run the C compiler for the same modules at once; otherwise its libraries come from the
// usual cache (each C compile costs a few tenths of a second).
void check_predict(const Model& model, std::vector<std::int64_t> row_shape, const std::string& name,
                   bool cold_kernels) {
  if (!testing::have_backend("cpu")) GTEST_SKIP() << "the cpu backend is not built";
  std::optional<testing::TempDir> cache;
  std::optional<testing::ScopedEnv> env;
  if (cold_kernels) env.emplace("GLIA_CPU_CACHE", cache.emplace().path());
  const ModelState state = build(model, {.backend = "cpu"}).init(5);
  const std::vector<std::vector<Tensor>> inputs = thread_inputs(std::move(row_shape));
  auto calls = [&](const BuiltModel& built, int t, int i) {
    const Tensor& x = inputs[std::size_t(t)][std::size_t(i)];
    TrainResult train =
        built.predict.train(state, x, random::key(std::uint64_t(1000 + 10 * t + i)));
    Leaves leaves{built.predict(state, x), train.output};
    for (Tensor& s : tree_leaves<Tensor>(train.state)) leaves.push_back(std::move(s));
    return leaves;
  };
  const BuiltModel threaded = build(model, {.backend = "cpu"});
  testing::ThreadedRun run =
      testing::run_rounds(2, kRounds, [&](int t, int i) { return calls(threaded, t, i); });
  const BuiltModel single = build(model, {.backend = "cpu"});
  testing::expect_one_thread_results(
      run, [&](int t, int i) { return calls(single, t, i); }, name);
}

TEST(PredictConcurrency, MlpPredictAndTrainMatchOneThread) {
  check_predict(mlp(), {24}, "mlp", /*cold_kernels=*/true);
}

TEST(PredictConcurrency, CnnPredictAndTrainMatchOneThread) {
  check_predict(cnn(), {9, 9, 3}, "cnn", /*cold_kernels=*/false);
}

TEST(PredictConcurrency, LstmPredictAndTrainMatchOneThread) {
  check_predict(rnn(), {5, 4}, "rnn", /*cold_kernels=*/false);
}

// init's first calls race too (its compiled function per input types, under its own lock):
// each thread draws from seeds of its own.
TEST(PredictConcurrency, InitMatchesOneThread) {
  if (!testing::have_backend("cpu")) GTEST_SKIP() << "the cpu backend is not built";
  auto draw = [](const BuiltModel& built, int t) {
    ModelState s = built.init(std::uint64_t(t));
    Leaves leaves = tree_leaves<Tensor>(s.params);
    for (Tensor& v : tree_leaves<Tensor>(s.state)) leaves.push_back(std::move(v));
    return leaves;
  };
  const BuiltModel threaded = build(cnn(), {.backend = "cpu"});
  testing::ThreadedRun run =
      testing::run_rounds(1, 4, [&](int t, int) { return draw(threaded, t); });
  const BuiltModel single = build(cnn(), {.backend = "cpu"});
  testing::expect_one_thread_results(
      run, [&](int t, int) { return draw(single, t); }, "init");
}

}  // namespace
}  // namespace glia
