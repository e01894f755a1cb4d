// export_predict: the generated C compiled with the system's compiler, loaded back and
// compared with the JIT's predict on the same inputs.
#include <gtest/gtest.h>

#include <unistd.h>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <thread>

#include "expect_error.hpp"
#include "glia/layers.hpp"
#include "gmock/gmock.h"

namespace glia {
namespace {

std::filesystem::path scratch_dir(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() /
             ("glia_export_test_" + std::to_string(::getpid()) + "_" + name);
  std::filesystem::remove_all(dir);
  return dir;
}

Tensor random_input(const Shape& shape, std::uint64_t seed) {
  Tensor x(DType::f32, shape);
  float* p = x.data<float>();
  std::uint64_t s = seed * 0x9e3779b97f4a7c15ULL + 1;
  for (std::int64_t i = 0; i < x.numel(); ++i) {
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;
    p[i] = float(double(s % 20001) / 10000.0 - 1.0);
  }
  return x;
}

// Largest |a - b| over two f32 tensors of one shape.
double max_abs_diff(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(a.type(), b.type());
  double m = 0;
  for (std::int64_t i = 0; i < a.numel(); ++i)
    m = std::max(m, std::abs(double(a.data<float>()[i]) - double(b.data<float>()[i])));
  return m;
}

ModelState init_for(const Model& model, const BuiltModel& built) {
  (void)model;
  return built.init(3);
}

bool have_cc() { return !aot::find_c_compiler().empty(); }

// Exports `model` for batch `batch`, builds and loads it, and compares it with the JIT on
// `rows` random rows.
void check_export(const Model& model, const std::string& name, std::int64_t batch,
                  std::int64_t rows, bool weights_file = false, double tol = 1e-5) {
  if (!have_cc()) GTEST_SKIP() << "no C compiler: set CC or install cc";
  auto built = build(model);
  ModelState state = init_for(model, built);
  InputTypes types = default_input_types(model, batch);
  auto dir = scratch_dir(name);
  ExportResult r = export_predict(model, state, types,
                                  {.name = name, .weights_file = weights_file, .output = dir});
  ASSERT_TRUE(r.library.has_value()) << r.build_note;
  aot::Library lib(*r.library);
  if (weights_file) lib.load_weights(dir / (name + ".weights"));
  std::vector<std::int64_t> dims = types.begin()->second.shape.dims();
  dims[0] = rows;
  Tensor x = random_input(Shape(dims), 7);
  Tensor want = built.predict(state, x);
  Tensor got = lib.predict(x);
  EXPECT_LE(max_abs_diff(got, want), tol) << r.source.info;
  if (std::getenv("GLIA_KEEP_EXPORT") == nullptr) std::filesystem::remove_all(dir);
}

TEST(ExportTest, MlpMatchesJit) {
  Model x = input("pixels", {-1, 784});
  Model h = dense(x, 128, {.activation = "relu"});
  h = dropout(h, {.rate = 0.5});
  Model y = dense(h, 10, {.activation = "softmax"});
  check_export(y, "mlp1", 1, 5);
  check_export(y, "mlp16", 16, 37);
}

}  // namespace
}  // namespace glia

namespace glia {
namespace {

TEST(ExportTest, CnnMatchesJit) {
  Model x = input("image", {-1, 12, 12, 1});
  Model y = conv(x, 6, {.kernel_size = {3, 3}, .activation = "relu"});
  y = max_pool(y, {.kernel_size = {2, 2}});
  y = conv(y, 8, {.kernel_size = {3, 3}, .activation = "relu"});
  y = dense(flatten(y), 16, {.activation = "relu"});
  y = dense(y, 10, {.activation = "softmax"});
  check_export(y, "cnn1", 1, 3);
  check_export(y, "cnn4", 4, 9, /*weights_file=*/true);
}

// Every built-in layer kind predict uses: norms in inference mode, the pools, shaping,
// combining, padding, and the activations.
TEST(ExportTest, LayerZooMatchesJit) {
  Model x = input("x", {-1, 8, 8, 3});
  Model a = conv(x, 4, {.kernel_size = {3, 3}, .padding = "same", .activation = "tanh"});
  a = batch_norm(a);
  Model b =
      depthwise_conv(x, 2, {.kernel_size = {3, 3}, .padding = "same", .activation = "sigmoid"});
  Model c = concatenate({a, b}, -1);
  c = avg_pool(c, {.kernel_size = {2, 2}});
  c = pad(c, {{1, 1}, {1, 1}, {0, 0}});
  c = group_norm(c, 2);
  Model g = global_max_pool(c);
  Model h = global_avg_pool(c);
  Model m = add({g, h});
  m = layer_norm(m);
  m = activation(dense(m, 12), "gelu");
  m = rms_norm(m);
  Model r = reshape(m, {-1, 3, 4});
  r = transpose(r, {0, 2, 1});
  r = flatten(r);
  r = multiply({r, activation(r, "silu")});
  r = dense(r, 5, {.activation = "log_softmax"});
  check_export(r, "zoo", 3, 7);
}

}  // namespace
}  // namespace glia

namespace glia {
namespace {

TEST(ExportTest, ErrorsNameTheProblem) {
  Model x = input("x", {-1, 4});
  Model y = dense(x, 3);
  auto built = build(y);
  ModelState state = built.init(0);
  testing::expect_error(
      [&] { export_predict(y, state, default_input_types(y, 2), {.name = "9bad"}); },
      "not a C identifier");
  testing::expect_error(
      [&] {
        export_predict(y, state, {{"x", {DType::f64, {2, 4}}}}, {.name = "m"});
      },
      "takes an f32 input");
  testing::expect_error(
      [&] {
        export_predict(y, state, {{"other", {DType::f32, {2, 4}}}}, {.name = "m"});
      },
      "give the type of input 'x'");
  ModelState missing = state;
  missing.params.clear();
  testing::expect_error(
      [&] { export_predict(y, missing, default_input_types(y, 2), {.name = "m"}); },
      "layer 'dense_0' (dense)");
  // Two inputs: the ABI takes one.
  Model a = input("a", {-1, 2}), b = input("b", {-1, 2});
  Model s = add({a, b});
  testing::expect_error(
      [&] {
        export_predict(s, {}, {{"a", {DType::f32, {1, 2}}}}, {.name = "m"});
      },
      "takes one input; the model has 2");
  // A custom layer computing in f16 is named.
  Model h =
      layer("half", {x}, [](LayerContext& ctx) { return cast(ctx.input() * 2.0, DType::f16); }, {},
            {.name = "halve"});
  Model back = layer("single", {h}, [](LayerContext& ctx) { return cast(ctx.input(), DType::f32); },
                     {}, {.name = "widen"});
  testing::expect_error(
      [&] { export_predict(back, {}, default_input_types(back, 1), {.name = "m"}); },
      "layer 'halve'");
}

TEST(ExportTest, WeightsFileIsChecked) {
  if (!have_cc()) GTEST_SKIP() << "no C compiler: set CC or install cc";
  Model x = input("x", {-1, 6});
  Model y = dense(x, 4, {.activation = "relu"});
  auto built = build(y);
  ModelState state = built.init(1);
  auto dir = scratch_dir("weights");
  ExportResult r = export_predict(y, state, default_input_types(y, 1),
                                  {.name = "wf", .weights_file = true, .output = dir});
  ASSERT_TRUE(r.library.has_value()) << r.build_note;
  aot::Library lib(*r.library);
  ASSERT_TRUE(lib.has_weights_file());
  Tensor xin = random_input({2, 6}, 3);
  // Not loaded yet: predict refuses.
  testing::expect_error([&] { lib.predict(xin); }, "not loaded");
  testing::expect_error([&] { lib.load_weights(dir / "missing.weights"); }, "cannot open");
  // A flipped byte in the weights: the hash does not match.
  std::string bytes;
  {
    std::ifstream f(dir / "wf.weights", std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(f), {});
  }
  std::string bad = bytes;
  bad[bad.size() - 1] ^= 0x40;
  std::ofstream(dir / "bad.weights", std::ios::binary) << bad;
  testing::expect_error([&] { lib.load_weights(dir / "bad.weights"); },
                        "not this library's weights");
  std::ofstream(dir / "short.weights", std::ios::binary) << bytes.substr(0, bytes.size() - 4);
  testing::expect_error([&] { lib.load_weights(dir / "short.weights"); },
                        "not this library's weights");
  testing::expect_error([&] { lib.predict(xin); }, "not loaded");
  lib.load_weights(dir / "wf.weights");
  EXPECT_LE(max_abs_diff(lib.predict(xin), built.predict(state, xin)), 1e-6);
  // The source mode embeds the same bytes: the info names the same hash.
  ExportResult embedded = export_predict(y, state, default_input_types(y, 1), {.name = "wf"});
  EXPECT_EQ(embedded.source.weights_hash, r.source.weights_hash);
  // The kernel (96 bytes) is a weight; the 16-byte bias stays in the source.
  EXPECT_EQ(embedded.source.weights_bytes, 6 * 4 * 4);
  std::filesystem::remove_all(dir);
}

TEST(ExportTest, LibraryChecksItsInput) {
  if (!have_cc()) GTEST_SKIP() << "no C compiler: set CC or install cc";
  Model x = input("x", {-1, 3});
  Model y = dense(x, 2);
  auto built = build(y);
  ModelState state = built.init(2);
  auto dir = scratch_dir("checks");
  ExportResult r =
      export_predict(y, state, default_input_types(y, 4), {.name = "chk", .output = dir});
  ASSERT_TRUE(r.library.has_value()) << r.build_note;
  aot::Library lib(*r.library);
  EXPECT_EQ(lib.batch(), 4);
  EXPECT_EQ(lib.input().to_string(), "f32[4][3]");
  EXPECT_EQ(lib.output().to_string(), "f32[4][2]");
  testing::expect_error(
      [&] {
        lib.predict(Tensor(DType::f32, {4, 5}));
      },
      "takes f32 inputs shaped");
  testing::expect_error([&] { aot::Library(dir / "chk.c"); }, "libNAME.so");
  testing::expect_error([&] { aot::Library(dir / "libnothere.so"); }, "does not exist");
  // The files the ABI promises.
  for (const char* f : {"chk.h", "chk.c", "Makefile", "CMakeLists.txt"})
    EXPECT_TRUE(std::filesystem::exists(dir / f)) << f;
  std::ifstream h(dir / "chk.h");
  std::string header((std::istreambuf_iterator<char>(h)), {});
  for (const char* s :
       {"int chk_predict(const float* input, float* output);",
        "int chk_predict_ws(const float* input, float* output, void* workspace);",
        "const char* chk_info(void);", "#define chk_INPUT_SIZE 12", "#define chk_OUTPUT_SIZE 8",
        "#define chk_BATCH 4", "#define chk_WORKSPACE_SIZE "})
    EXPECT_NE(header.find(s), std::string::npos) << s;
  // The generated Makefile rebuilds the library (where make is installed).
  if (std::system("command -v make > /dev/null 2>&1") == 0) {
    std::filesystem::remove(dir / "libchk.so");
    std::string make = "make -s -C '" + dir.string() + "' > /dev/null 2>&1";
    EXPECT_EQ(std::system(make.c_str()), 0) << make;
    EXPECT_TRUE(std::filesystem::exists(dir / "libchk.so"));
  }
  // Zero-row input: zero-row output.
  EXPECT_EQ(lib.predict(Tensor(DType::f32, {0, 3})).shape(), Shape({0, 2}));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace glia

namespace glia {
namespace {

// NAME_predict_ws from several threads at once, each with its own workspace, gives every
// thread the single-threaded result.
TEST(ExportTest, PredictWsIsThreadSafe) {
  if (!have_cc()) GTEST_SKIP() << "no C compiler: set CC or install cc";
  Model x = input("x", {-1, 32});
  Model y = dense(dense(x, 64, {.activation = "relu"}), 8, {.activation = "softmax"});
  auto built = build(y);
  ModelState state = built.init(4);
  auto dir = scratch_dir("threads");
  ExportResult r =
      export_predict(y, state, default_input_types(y, 2), {.name = "thr", .output = dir});
  ASSERT_TRUE(r.library.has_value()) << r.build_note;
  aot::Library lib(*r.library);
  constexpr int kThreads = 4, kInputs = 16;
  std::vector<Tensor> xs, want;
  for (int i = 0; i < kInputs; ++i) {
    xs.push_back(random_input({2, 32}, std::uint64_t(100 + i)));
    want.push_back(built.predict(state, xs.back()));
  }
  std::vector<int> mismatches(kThreads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      alignas(64) static thread_local unsigned char ws[1 << 16];
      ASSERT_LE(lib.workspace_bytes(), std::int64_t(sizeof ws));
      std::vector<float> out(16);
      for (int round = 0; round < 200; ++round)
        for (int i = 0; i < kInputs; ++i) {
          if (lib.call(xs[std::size_t(i)].data<float>(), out.data(), ws) != 0) ++mismatches[t];
          for (int j = 0; j < 16; ++j)
            if (std::abs(out[std::size_t(j)] - want[std::size_t(i)].data<float>()[j]) > 1e-6f)
              ++mismatches[t];
        }
    });
  for (auto& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(mismatches[t], 0) << "thread " << t;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace glia

namespace glia {
namespace {

// The other built-in layers predict uses: transposed convolution, resizing, instance
// norm, Lp and adaptive pools, bias, bilinear, subtract and the stochastic layers (identity
// in inference mode).
TEST(ExportTest, MoreLayersMatchJit) {
  Model x = input("x", {-1, 6, 6, 2});
  Model a = conv_transpose(x, 3, {.kernel_size = {3, 3}, .strides = {2, 2}});
  a = resize(a, {8, 8}, {.method = "bilinear"});
  a = instance_norm(a);
  a = spatial_dropout(a, {.rate = 0.3});
  Model b = lp_pool(a, {.kernel_size = {2, 2}});
  b = adaptive_avg_pool(b, {.output_size = {3, 3}});
  Model c = adaptive_max_pool(a, {.output_size = {3, 3}});
  Model d = subtract(b, c);
  Model f = bias(flatten(d));
  f = alpha_dropout(f, {.rate = 0.2});
  Model g = global_lp_pool(resize(x, {3, 3}));
  Model h = bilinear(f, g, 4, {.activation = "softplus"});
  check_export(h, "more", 2, 5);
}

// Attention's masked scores are -inf in the C too; query 0 sees no key (a row of out_bias).
TEST(ExportTest, AttentionMatchesJit) {
  Model x = input("x", {-1, 5, 8});
  std::vector<bool> keys(25, true);
  for (int j = 0; j < 5; ++j) keys[j] = false;
  Model mask = constant(Tensor::from<bool>(keys, Shape{5, 5}), {});
  Model y = multi_head_attention(x, 2, {.causal = true, .attention_mask = mask});
  check_export(dense(flatten(y), 3), "attention", 2, 3);
}

}  // namespace
}  // namespace glia
