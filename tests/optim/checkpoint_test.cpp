// Checkpoint files: what is saved comes back bit for bit (every dtype, every optimizer's
// state, the loop's position and history), the atomic save, and the checks on load: the
// format and its version, names, shapes and dtypes against a model or an optimizer.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <hdf5.h>

#include <cmath>
#include <fstream>

#include "checkpoint_test_util.hpp"
#include "expect_error.hpp"

namespace glia {
namespace {

using testing::expect_error;
using testing::expect_error_parts;
using testing::expect_same;
using testing::TempDir;

// A loop state with every dtype among its tensors, nested optimizer paths, a history
// (one epoch lacking a metric) and a partly done epoch.
LoopState every_kind_of_state() {
  LoopState s;
  std::vector<float> v{1.5f, -2.25f, 3.0f, 0.0f, -0.5f, 65504.0f};
  s.train.model.params["dense_0"]["kernel"] = Tensor::from(v, Shape{2, 3});
  s.train.model.params["dense_0"]["bias"] = Tensor::from(std::vector<float>{0.25f, -1, 7});
  s.train.model.params["norm"]["f64"] = Tensor::from(std::vector<double>{1e-300, -2.5}, Shape{2});
  s.train.model.params["norm"]["f16"] = Tensor::from(v, Shape{3, 2}).cast(DType::f16);
  s.train.model.params["norm"]["bf16"] = Tensor::from(v, Shape{6}).cast(DType::bf16);
  s.train.model.params["ints"]["i32"] = Tensor::from(std::vector<std::int32_t>{-7, 2147483647});
  s.train.model.params["ints"]["i64"] =
      Tensor::from(std::vector<std::int64_t>{-9000000000000000000LL, 5});
  s.train.model.params["ints"]["u32"] = Tensor::from(std::vector<std::uint32_t>{4000000000u});
  s.train.model.params["ints"]["u8"] = Tensor::from(std::vector<std::uint8_t>{0, 255, 9});
  s.train.model.params["ints"]["bool"] = Tensor::from(std::vector<bool>{true, false, true});
  s.train.model.params["ints"]["scalar"] = Tensor::scalar(42, DType::i64);
  s.train.model.params["ints"]["empty"] = Tensor(DType::f32, Shape{0, 4});
  s.train.model.state["norm"]["mean"] = Tensor::from(std::vector<float>{0.5f, 0.75f});
  s.train.optimizer["0/mu/dense_0/kernel"] = Tensor::full({2, 3}, 0.125);
  s.train.optimizer["1/count"] = Tensor::scalar(3, DType::i32);
  s.train.step = 17;
  s.train.lr_scale = 0.1;
  s.train.seed = 0xfedcba9876543210ULL;
  s.epoch = 2;
  s.iteration = 5;
  s.total_iterations = 17;
  s.samples = 68;
  s.epochs = 4;
  s.event = Event::iteration_completed;
  s.history = {{{"loss", 0.9}, {"accuracy", 0.5}}, {{"loss", 0.7}}};
  s.metrics = {{"loss", 0.6}, {"accuracy", 0.625}};
  s.epoch_seconds = {1.25, 1.5};
  return s;
}

TEST(Checkpoint, EveryDtypeAndTheLoopStateComeBackBitForBit) {
  TempDir dir;
  LoopState s = every_kind_of_state();
  save_checkpoint(dir.file("m.h5"), testing::small_classifier(), s, {{"note", "a test"}});
  Checkpoint c = load_checkpoint(dir.file("m.h5"));
  expect_same(s.train, c.loop.train);
  EXPECT_EQ(c.format_version, kCheckpointFormatVersion);
  EXPECT_EQ(c.saved_at, "iteration_completed");
  EXPECT_EQ(c.config, (std::map<std::string, std::string>{{"note", "a test"}}));
  EXPECT_EQ(c.loop.epoch, 2);
  EXPECT_EQ(c.loop.iteration, 5);
  EXPECT_EQ(c.loop.total_iterations, 17);
  EXPECT_EQ(c.loop.samples, 68);
  EXPECT_EQ(c.loop.epochs, 4);
  EXPECT_EQ(c.loop.history, s.history);  // epoch 2's missing accuracy stays missing
  EXPECT_EQ(c.loop.metrics, s.metrics);
  EXPECT_EQ(c.loop.epoch_seconds, s.epoch_seconds);
  EXPECT_EQ(c.loop.event, Event::started);
  // f16 65504 (the largest half) and bf16's rounding survive as stored bits.
  EXPECT_EQ(c.loop.train.model.params["norm"]["f16"].element(5), 65504.0);
}

TEST(Checkpoint, AnEpochEndIsSavedAsTheStartOfTheNextEpoch) {
  TempDir dir;
  LoopState s = every_kind_of_state();
  s.event = Event::epoch_completed;  // epoch 3 (index 2) just ended; not yet in the history
  save_checkpoint(dir.file("m.h5"), testing::small_classifier(), s);
  Checkpoint c = load_checkpoint(dir.file("m.h5"));
  EXPECT_EQ(c.saved_at, "epoch_completed");
  EXPECT_EQ(c.loop.epoch, 3);
  EXPECT_EQ(c.loop.iteration, 0);
  ASSERT_EQ(c.loop.history.size(), 3u);
  EXPECT_EQ(c.loop.history[2], s.metrics);
  EXPECT_TRUE(c.loop.metrics.empty());
}

TEST(Checkpoint, TheArchitectureRebuildsTheModel) {
  TempDir dir;
  Model model = testing::small_classifier();
  ModelState state = build(model).init(3);
  save_checkpoint(dir.file("m.h5"), model, TrainState{.model = state});
  Checkpoint c = load_checkpoint(dir.file("m.h5"));
  EXPECT_EQ(c.saved_at, "manual");
  Model rebuilt = c.model();
  check_checkpoint(c, rebuilt);
  EXPECT_EQ(summary(rebuilt), summary(model));
  Tensor x = testing::synthetic_classes(5, 1).x;
  EXPECT_TRUE(equal(build(rebuilt).predict(c.loop.train.model, x), build(model).predict(state, x)));
}

TEST(Checkpoint, SavingReplacesTheFileAndLeavesNoTemporaryFiles) {
  TempDir dir;
  Model model = testing::small_classifier();
  LoopState s = every_kind_of_state();
  save_checkpoint(dir.file("m.h5"), model, s);
  s.train.step = 99;
  save_checkpoint(dir.file("m.h5"), model, s);
  EXPECT_EQ(load_checkpoint(dir.file("m.h5")).loop.train.step, 99);
  // A failed save (a name HDF5 cannot hold) keeps the previous file.
  s.train.model.params["a/b"]["w"] = Tensor::scalar(1);
  expect_error([&] { save_checkpoint(dir.file("m.h5"), model, s); }, "'a/b'");
  EXPECT_EQ(load_checkpoint(dir.file("m.h5")).loop.train.step, 99);
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir.path())) {
    ++files;
    EXPECT_EQ(e.path().filename(), "m.h5");
  }
  EXPECT_EQ(files, 1);
  expect_error([&] { save_checkpoint(dir.file("no/such/m.h5"), model, s); }, "does not exist");
  expect_error([&] { save_checkpoint(dir.path(), model, s); }, "is a folder");
}

// ---- Every optimizer's state ----------------------------------------------------------------

struct NamedOptimizer {
  const char* name;
  Transformation (*make)();
};

const NamedOptimizer kOptimizers[] = {
    {"sgd", [] { return optimizers::sgd(0.1); }},
    {"momentum", [] { return optimizers::sgd(0.1, 0.9); }},
    {"nesterov", [] { return optimizers::sgd(0.1, 0.9, true); }},
    {"adam", [] { return optimizers::adam(0.01); }},
    {"adamw", [] { return optimizers::adamw(0.01); }},
    {"adabelief", [] { return optimizers::adabelief(0.01); }},
    {"adagrad", [] { return optimizers::adagrad(0.01); }},
    {"lamb", [] { return optimizers::lamb(0.01); }},
    {"noisy_sgd", [] { return optimizers::noisy_sgd(0.01); }},
    {"radam", [] { return optimizers::radam(0.01); }},
    {"rmsprop", [] { return optimizers::rmsprop(0.01); }},
    {"yogi", [] { return optimizers::yogi(0.01); }},
    {"clipped_adam",
     [] {
       return compose({transforms::clip_by_global_norm(1.0), optimizers::adam(0.01)});
     }},
    {"accumulated_adam",
     [] { return transforms::accumulate_gradients(optimizers::adam(0.01), 2); }},
};

class OptimizerState : public ::testing::TestWithParam<NamedOptimizer> {};

TEST_P(OptimizerState, RoundTripsAndContinuesIdentically) {
  TempDir dir;
  Model model = testing::small_classifier();
  TrainStep step(model, testing::cross_entropy, GetParam().make());
  Dataset d = testing::synthetic_classes(8, 2);
  TrainState s = step.init(5);
  for (int i = 0; i < 3; ++i) step(s, d.x, d.y);
  save_checkpoint(dir.file("opt.h5"), model, s);
  TrainState loaded = load_checkpoint(dir.file("opt.h5")).loop.train;
  expect_same(s, loaded);
  EXPECT_FALSE(GetParam().name == std::string("sgd") ? !s.optimizer.empty() : s.optimizer.empty());
  step(s, d.x, d.y);
  step(loaded, d.x, d.y);
  expect_same(s, loaded);
}

INSTANTIATE_TEST_SUITE_P(Checkpoint, OptimizerState, ::testing::ValuesIn(kOptimizers),
                         [](const auto& info) { return std::string(info.param.name); });

// ---- Mismatches ------------------------------------------------------------------------------

TEST(Checkpoint, ALoadReportsTheFirstMismatchWithTheModel) {
  TempDir dir;
  Model model = testing::small_classifier();
  save_checkpoint(dir.file("m.h5"), model, TrainState{.model = build(model).init(0)});
  Checkpoint c = load_checkpoint(dir.file("m.h5"));
  Model wider =
      dense(dropout(dense(input("features", {-1, 6}), 16, {.activation = "relu"}), {.rate = 0.25}),
            3, {.activation = "softmax"});
  expect_error_parts([&] { check_checkpoint(c, wider); },
                     {dir.file("m.h5"), "dense_0/bias", "f32[8]", "f32[16]"});
  Model renamed = dense(input("features", {-1, 6}), 3, {.name = "head"});
  expect_error_parts([&] { check_checkpoint(c, renamed); }, {"dense_0/bias", "not expected"});
  Checkpoint other_dtype = c;
  Tensor& bias = other_dtype.loop.train.model.params["dense_1"]["bias"];
  bias = bias.cast(DType::f64);
  expect_error_parts([&] { check_checkpoint(other_dtype, model); },
                     {"dense_1/bias is f64[3] in the saved state, expected f32[3]"});
  Checkpoint missing = c;
  missing.loop.train.model.params.erase("dense_1");
  expect_error_parts([&] { check_checkpoint(missing, model); },
                     {"has no parameter dense_1/bias (f32[3])"});
}

TEST(Checkpoint, ResumingWithAnotherOptimizerIsAnError) {
  TempDir dir;
  Model model = testing::small_classifier();
  TrainStep step(model, testing::cross_entropy, optimizers::sgd(0.1, 0.9));
  save_checkpoint(dir.file("m.h5"), model, step.init(0));
  Checkpoint c = load_checkpoint(dir.file("m.h5"));
  Loop loop = trainer(model, testing::cross_entropy, optimizers::adam(1e-3),
                      {.progress = ProgressMode::off});
  Dataset d = testing::synthetic_classes(8, 2);
  expect_error_parts([&] { loop.resume(Batches(d, {.batch_size = 4}), {.epochs = 1}, c.loop); },
                     {"Loop::resume", "optimizer entry", "another optimizer"});
}

// Rewrites one attribute of a saved file with the HDF5 API, as another tool might.
void set_attr(const std::string& path, const char* object, const char* name, std::int64_t v) {
  hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  ASSERT_GE(f, 0);
  // Opened through its object: HDF5 1.10 fails to write a group's attribute opened by name.
  hid_t o = H5Oopen(f, object, H5P_DEFAULT);
  ASSERT_GE(o, 0);
  hid_t a = H5Aopen(o, name, H5P_DEFAULT);
  ASSERT_GE(a, 0);
  EXPECT_GE(H5Awrite(a, H5T_NATIVE_INT64, &v), 0);
  H5Aclose(a);
  H5Oclose(o);
  H5Fclose(f);
}

TEST(Checkpoint, NewerVersionsAndOtherHdf5FilesAreRefused) {
  TempDir dir;
  std::string path = dir.file("m.h5");
  save_checkpoint(path, testing::small_classifier(), every_kind_of_state());
  set_attr(path, "/", "format_version", kCheckpointFormatVersion + 1);
  expect_error_parts([&] { load_checkpoint(path); },
                     {path, cat("format version ", kCheckpointFormatVersion + 1)});
  save_checkpoint(path, testing::small_classifier(), every_kind_of_state());
  set_attr(path, "/loop", "epoch", 7);  // the history holds 2 epochs
  expect_error_parts([&] { load_checkpoint(path); }, {"/loop/history/", "f64[7]"});

  std::string plain = dir.file("plain.h5");
  hid_t f = H5Fcreate(plain.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  ASSERT_GE(f, 0);
  H5Fclose(f);
  expect_error_parts([&] { load_checkpoint(plain); }, {plain, "not a glia checkpoint"});
}

// ---- Damaged files ---------------------------------------------------------------------------

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}
void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

TEST(Checkpoint, MissingEmptyAndNonHdf5FilesAreClearErrors) {
  TempDir dir;
  expect_error_parts([&] { load_checkpoint(dir.file("none.h5")); },
                     {dir.file("none.h5"), "no such file"});
  expect_error_parts([&] { load_checkpoint(dir.path()); }, {"not a regular file"});
  write_bytes(dir.file("empty.h5"), "");
  expect_error_parts([&] { load_checkpoint(dir.file("empty.h5")); },
                     {dir.file("empty.h5"), "not an HDF5 file"});
  write_bytes(dir.file("text.h5"), "this is not an HDF5 file, only some text");
  expect_error_parts([&] { load_checkpoint(dir.file("text.h5")); }, {"not an HDF5 file"});
}

TEST(Checkpoint, TruncatedFilesAreErrors) {
  TempDir dir;
  std::string good = dir.file("m.h5"), cut = dir.file("cut.h5");
  save_checkpoint(good, testing::small_classifier(), every_kind_of_state());
  std::string bytes = read_bytes(good);
  for (double fraction : {0.001, 0.1, 0.5, 0.9, 0.999}) {
    write_bytes(cut, bytes.substr(0, static_cast<std::size_t>(bytes.size() * fraction)));
    expect_error([&] { load_checkpoint(cut); }, cut);
  }
  write_bytes(cut, bytes.substr(0, bytes.size() - 1));
  expect_error([&] { load_checkpoint(cut); }, cut);
}

// Flipping any byte gives an error naming the file, or, where the byte is unused, the same
// contents; never a crash or different numbers (metadata and data carry checksums).
TEST(Checkpoint, DamagedBytesAreErrorsNeverWrongNumbers) {
  TempDir dir;
  std::string good = dir.file("m.h5"), bad = dir.file("bad.h5");
  LoopState s = every_kind_of_state();
  s.train.model.params["big"]["w"] = Tensor::full({64, 64}, 0.5);
  save_checkpoint(good, testing::small_classifier(), s);
  Checkpoint original = load_checkpoint(good);
  std::string bytes = read_bytes(good);
  int errors = 0, same = 0;
  for (std::size_t at = 0; at < bytes.size(); at += 17) {
    std::string damaged = bytes;
    damaged[at] = static_cast<char>(damaged[at] ^ 0x5a);
    write_bytes(bad, damaged);
    try {
      Checkpoint c = load_checkpoint(bad);
      expect_same(original.loop.train, c.loop.train);
      EXPECT_EQ(original.loop.history, c.loop.history) << "byte " << at;
      EXPECT_EQ(original.architecture, c.architecture) << "byte " << at;
      ++same;
    } catch (const Error& e) {
      EXPECT_THAT(e.what(), ::testing::HasSubstr(bad)) << "byte " << at;
      ++errors;
    }
  }
  EXPECT_GT(errors, 0);
  // The 16 KiB of `big` are raw data under a checksum: every damaged byte there is caught.
  std::string pattern(reinterpret_cast<const char*>(s.train.model.params["big"]["w"].raw_data()),
                      64);
  std::size_t data_at = bytes.find(pattern);
  ASSERT_NE(data_at, std::string::npos);
  std::string damaged = bytes;
  damaged[data_at + 1000] ^= 0x01;
  write_bytes(bad, damaged);
  expect_error_parts([&] { load_checkpoint(bad); }, {bad, "/params/big/w"});
}

// ---- Weights alone ---------------------------------------------------------------------------

// save_weights / load_weights: the parameters and state come back bit for bit and predict
// the same; a checkpoint's weights load too; another model's, other files and missing ones
// are errors naming the file and the problem.
TEST(Weights, RoundTripAndPredictTheSame) {
  TempDir dir;
  Model model = testing::small_classifier();
  BuiltModel built = build(model);
  ModelState state = built.init(3);
  const std::string path = dir.file("w.h5");
  save_weights(path, model, state);
  ModelState back = load_weights(path, model);
  expect_same(back.params, state.params, "params");
  expect_same(back.state, state.state, "state");
  Tensor x = Tensor::from<float>({0.1f, -0.2f, 0.3f, 0.4f, -0.5f, 0.6f, 1, 0, -1, 0.5f, 0.25f, 2},
                                 Shape{2, 6});
  EXPECT_TRUE(equal(built.predict(back, x), built.predict(state, x)));
  // The file holds the checkpoint's layout and the architecture.
  std::vector<std::string> names;
  for (const auto& [layer, entries] : state.params)
    for (const auto& [name, t] : entries) names.push_back(layer + "/" + name);
  hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  ASSERT_GE(f, 0);
  for (const std::string& n : names)
    EXPECT_GT(H5Lexists(f, ("/params/" + n).c_str(), H5P_DEFAULT), 0) << n;
  EXPECT_GT(H5Lexists(f, "/architecture", H5P_DEFAULT), 0);
  H5Fclose(f);

  // A checkpoint's weights, through the same call.
  TrainStep step(model, losses::categorical_cross_entropy, optimizers::sgd(0.1));
  TrainState trained = step.init(5);
  save_checkpoint(dir.file("c.h5"), model, trained);
  ModelState from_checkpoint = load_weights(dir.file("c.h5"), model);
  expect_same(from_checkpoint.params, trained.model.params, "checkpoint params");
}

TEST(Weights, MismatchesAndBadFilesAreClearErrors) {
  TempDir dir;
  Model model = testing::small_classifier();
  ModelState state = build(model).init(0);
  const std::string path = dir.file("w.h5");
  save_weights(path, model, state);
  Model other = dense(dense(input("features", {-1, 6}), 5, {.activation = "relu"}), 3);
  expect_error_parts([&] { load_weights(path, other); },
                     {path, "dense_0/bias is f32[8]", "expected f32[5]"});
  expect_error_parts([&] { save_weights(dir.file("x.h5"), other, state); },
                     {"save_weights", "dense_0/bias is f32[8]"});
  EXPECT_FALSE(std::filesystem::exists(dir.file("x.h5")));
  expect_error_parts([&] { load_weights(dir.file("none.h5"), model); },
                     {dir.file("none.h5"), "no such file"});
  std::string plain = dir.file("plain.h5");
  hid_t f = H5Fcreate(plain.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  ASSERT_GE(f, 0);
  H5Fclose(f);
  expect_error_parts([&] { load_weights(plain, model); },
                     {plain, "neither glia weights nor a glia checkpoint"});
  write_bytes(dir.file("text.h5"), "not HDF5 at all");
  expect_error_parts([&] { load_weights(dir.file("text.h5"), model); }, {"not an HDF5 file"});
}

}  // namespace
}  // namespace glia
