// The exported C predictor's NAME_predict_ws called from kThreads threads at once, each with
// a workspace of its own: glia's exporter writes the C, the system's C compiler builds it
// (under ThreadSanitizer with -fsanitize=thread too, so the generated code's own loads and
// stores are checked), and every thread's outputs must be the bits one thread gets from the
// same library, and glia's predict's values within float rounding.
#include <cmath>
#include <cstdlib>
#include <memory>

#include "concurrency/concurrency_util.hpp"
#include "datasets/file_util.hpp"
#include "glia/layers.hpp"

#if defined(__SANITIZE_THREAD__)
#define GLIA_TEST_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define GLIA_TEST_TSAN 1
#endif
#endif

namespace glia {
namespace {

using testing::kThreads;
using testing::Leaves;

constexpr int kRounds = 40;
constexpr std::int64_t kBatch = 4;

// Calls of one exported library through NAME_predict_ws on raw buffers, as a C program
// would (apps/examples/classify.c), with a 64-byte aligned workspace of the caller's own.
class Caller {
 public:
  explicit Caller(const aot::Library& lib)
      : lib_(lib),
        workspace_(std::aligned_alloc(64, std::size_t((lib.workspace_bytes() + 63) / 64 * 64 + 64)),
                   &std::free) {}
  Tensor operator()(const Tensor& x) const {
    Tensor y(DType::f32, lib_.output().shape);
    EXPECT_EQ(x.type(), lib_.input());
    EXPECT_EQ(lib_.call(x.data<float>(), y.data<float>(), workspace_.get()), 0);
    return y;
  }

 private:
  const aot::Library& lib_;
  std::unique_ptr<void, decltype(&std::free)> workspace_;
};

void check_exported(const Model& model, std::vector<std::int64_t> row_shape,
                    const std::string& name) {
  if (aot::find_c_compiler().empty()) GTEST_SKIP() << "no C compiler: set CC or install cc";
  const BuiltModel built = build(model);
  const ModelState state = built.init(11);
  std::vector<std::int64_t> dims = row_shape;
  dims.insert(dims.begin(), kBatch);
  testing::TempDir dir;
  ExportOptions options{.name = name, .output = dir.path()};
#ifdef GLIA_TEST_TSAN
  // The generated C instrumented like the test: a store to anything shared between calls
  // (a static buffer where the workspace belongs) is reported as the race it is. Only with
  // a C compiler of the test's own family, whose TSan runtime is the one already loaded.
#ifdef __clang__
  const bool same_family = aot::find_c_compiler().find("clang") != std::string::npos;
#else
  const bool same_family = aot::find_c_compiler().find("clang") == std::string::npos;
#endif
  if (same_family) options.build_options.flags += " -fsanitize=thread";
#endif
  ExportResult exported = export_predict(model, state, {{"x", {DType::f32, Shape(dims)}}}, options);
  ASSERT_TRUE(exported.library.has_value()) << exported.build_note;
  const aot::Library lib(*exported.library);

  std::vector<std::vector<Tensor>> inputs(kThreads);
  for (int t = 0; t < kThreads; ++t)
    for (int i = 0; i < 2; ++i)
      inputs[std::size_t(t)].push_back(testing::random_f32(Shape(dims), std::uint64_t(70 * t + i)));
  std::vector<std::unique_ptr<Caller>> callers;  // one workspace per thread, for all its calls
  for (int t = 0; t < kThreads; ++t) callers.push_back(std::make_unique<Caller>(lib));
  testing::ThreadedRun run = testing::run_rounds(2, kRounds, [&](int t, int i) {
    return Leaves{(*callers[std::size_t(t)])(inputs[std::size_t(t)][std::size_t(i)])};
  });
  const Caller single(lib);
  testing::expect_one_thread_results(
      run, [&](int t, int i) { return Leaves{single(inputs[std::size_t(t)][std::size_t(i)])}; },
      name);

  // glia's predict runs other kernels (oneDNN's matmul and convolution, fused loops) that
  // sum in another order: equal within float rounding, not bit for bit.
  for (int t = 0; t < kThreads; ++t)
    for (int i = 0; i < 2; ++i) {
      const Tensor& got = run.first[std::size_t(t)][std::size_t(i)].at(0);
      const Tensor want = built.predict(state, inputs[std::size_t(t)][std::size_t(i)]);
      ASSERT_EQ(got.type(), want.type());
      for (std::int64_t k = 0; k < got.numel(); ++k)
        EXPECT_NEAR(got.element(k), want.element(k), 1e-5 * (1 + std::abs(want.element(k))))
            << name << ", thread " << t << ", input " << i << ", element " << k;
    }
}

TEST(ExportConcurrency, MlpPredictWsMatchesOneThread) {
  Model x = input("x", {-1, 40});
  Model h = dense(x, 48, {.activation = "relu"});
  check_exported(dense(h, 7, {.activation = "softmax"}), {40}, "conc_mlp");
}

TEST(ExportConcurrency, CnnPredictWsMatchesOneThread) {
  Model x = input("x", {-1, 10, 10, 2});
  Model y = conv(x, 4, {.kernel_size = {3, 3}, .activation = "relu"});
  y = avg_pool(max_pool(y, {.kernel_size = {2, 2}}), {.kernel_size = {2, 2}});
  check_exported(dense(flatten(y), 6, {.activation = "tanh"}), {10, 10, 2}, "conc_cnn");
}

}  // namespace
}  // namespace glia
