// Everything that runs compiled executables copes with outputs left on a device, as the
// cuda backend leaves them: a fake device (host memory, scrambled, behind an allocator for
// cuda:0) and a backend wrapping the default one that takes inputs from anywhere and puts
// every output on that device. Host access to a device tensor throws, so any read without
// to_host() fails here; training, checkpoints, resuming, evaluation, init, predict and
// export must give the default backend's values bit for bit.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <sstream>

#include "checkpoint_test_util.hpp"
#include "expect_error.hpp"
#include "glia/compiler/registry.hpp"
#include "glia/core/buffer.hpp"

namespace glia {
namespace {

using testing::cross_entropy;
using testing::expect_same;
using testing::TempDir;

constexpr Device kDevice = Device::cuda(0);
constexpr unsigned char kScramble = 0x5A;

// Host memory holding every byte XOR kScramble: code that reads device memory without
// going through the allocator (data_ptr() on the host) reads garbage.
class ScramblingAllocator : public Allocator {
 public:
  std::string name() const override { return "fake device"; }
  void* allocate(std::size_t bytes) override { return std::aligned_alloc(64, bytes); }
  void deallocate(void* data, std::size_t) noexcept override { std::free(data); }
  void copy_from_host(void* dst, const void* src, std::size_t bytes) override {
    scramble(dst, src, bytes);
  }
  void copy_to_host(void* dst, const void* src, std::size_t bytes) override {
    scramble(dst, src, bytes);
  }
  void copy_within(void* dst, const void* src, std::size_t bytes) override {
    std::memcpy(dst, src, bytes);
  }

 private:
  static void scramble(void* dst, const void* src, std::size_t bytes) {
    auto* d = static_cast<unsigned char*>(dst);
    const auto* s = static_cast<const unsigned char*>(src);
    for (std::size_t i = 0; i < bytes; ++i) d[i] = s[i] ^ kScramble;
  }
};

// The wrapped executable behind a device's interface: inputs are taken from the host or
// the device, outputs are left on the device.
class DeviceExecutable : public Executable {
 public:
  explicit DeviceExecutable(std::unique_ptr<Executable> inner) : inner_(std::move(inner)) {}
  std::vector<Tensor> run(std::span<const Tensor> inputs) const override {
    std::vector<Tensor> host;
    for (const Tensor& t : inputs) host.push_back(t.to_host());
    return to_device(inner_->run(host));
  }
  std::vector<Tensor> run_donated(std::vector<Tensor>&& inputs) const override {
    std::vector<Tensor> host = std::move(inputs);
    for (Tensor& t : host) t = t.to_host();  // a fresh host copy nobody else holds
    return to_device(inner_->run_donated(std::move(host)));
  }
  const Program& program() const override { return inner_->program(); }
  std::string describe() const override { return inner_->describe(); }

 private:
  static std::vector<Tensor> to_device(std::vector<Tensor> outputs) {
    for (Tensor& t : outputs) t = t.to(kDevice);
    return outputs;
  }
  std::unique_ptr<Executable> inner_;
};

class DeviceBackend : public Backend {
 public:
  std::string_view name() const override { return "fake_device"; }
  bool supports(Op op) const override { return backend(default_backend()).supports(op); }
  std::unique_ptr<Executable> compile(const Graph& graph,
                                      const CompileOptions& options) const override {
    return std::make_unique<DeviceExecutable>(backend(default_backend()).compile(graph, options));
  }
};

// A device backend on a machine without the device.
class MissingDeviceBackend : public Backend {
 public:
  std::string_view name() const override { return "fake_missing_device"; }
  bool supports(Op op) const override { return backend("interp").supports(op); }
  std::unique_ptr<Executable> compile(const Graph&, const CompileOptions&) const override {
    throw Error("no CUDA device: the fake device is missing");
  }
};

void register_fake_backends() {
  static const bool once = [] {
    register_backend("fake_device", [] { return std::make_unique<DeviceBackend>(); });
    register_backend("fake_missing_device",
                     [] { return std::make_unique<MissingDeviceBackend>(); });
    return true;
  }();
  (void)once;
}

ParamMap on_host(const ParamMap& m) {
  ParamMap out;
  for (const auto& [layer, entries] : m)
    for (const auto& [name, t] : entries) out[layer][name] = t.to_host();
  return out;
}

TrainState on_host(const TrainState& s) {
  TrainState out = s;
  out.model.params = on_host(s.model.params);
  out.model.state = on_host(s.model.state);
  for (auto& [key, t] : out.optimizer) t = t.to_host();
  return out;
}

void expect_on_device(const TrainState& s) {
  for (const ParamMap* m : {&s.model.params, &s.model.state})
    for (const auto& [layer, entries] : *m)
      for (const auto& [name, t] : entries) EXPECT_EQ(t.device(), kDevice) << layer << "/" << name;
  for (const auto& [key, t] : s.optimizer) EXPECT_EQ(t.device(), kDevice) << key;
}

class DeviceOutputs : public ::testing::Test {
 protected:
  void SetUp() override {
    register_fake_backends();
    previous_ = register_allocator(kDevice, std::make_shared<ScramblingAllocator>());
  }
  void TearDown() override { register_allocator(kDevice, previous_); }

  Dataset train_ = testing::synthetic_classes(40, 7);
  Dataset valid_ = testing::synthetic_classes(16, 8);

  Batches batches() const {
    return Batches(train_, {.batch_size = 8, .shuffle = true, .seed = 11});
  }
  // A trainer with every built-in handler that reads what the step computed: validation,
  // early stopping, plateaus, checkpoints (at epoch ends and mid-epoch) and a log.
  Loop make_loop(const Model& model, const std::string& backend, const std::string& path,
                 std::ostream& log) const {
    Loop loop = trainer(model, cross_entropy, optimizers::adam(0.02),
                        {.backend = backend,
                         .seed = 3,
                         .metrics = {{"accuracy", testing::accuracy}},
                         .output = &log,
                         .progress = ProgressMode::lines});
    loop.validate(Batches(valid_, {.batch_size = 8}))
        .early_stop({.patience = 10})
        .reduce_lr_on_plateau({.factor = 0.5, .patience = 1, .mode = MonitorMode::max})
        .log(log, Filter::every(2))
        .checkpoint({.path = path})
        .checkpoint({.path = path + ".mid.h5",
                     .event = Event::iteration_completed,
                     .filter = Filter::every(3)});
    return loop;
  }

  std::shared_ptr<Allocator> previous_;
};

TEST_F(DeviceOutputs, TrainCheckpointResumeAndEvaluateAsOnTheHost) {
  const std::string host = default_backend();
  TempDir dir;
  std::ostringstream host_log, device_log;
  Model model = testing::small_classifier();
  LoopState want =
      make_loop(model, host, dir.file("host.h5"), host_log).run(batches(), {.epochs = 4});
  ASSERT_LT(want.train.lr_scale, 1.0);  // the plateau handler acted on the metrics
  ASSERT_NE(want.history[0].at("loss"), want.history[3].at("loss"));  // it trained

  // Two epochs on the device, saved; resumed from the file to four.
  LoopState part =
      make_loop(model, "fake_device", dir.file("dev.h5"), device_log).run(batches(), {.epochs = 2});
  expect_on_device(part.train);  // parameters and optimizer state stay on the device
  Checkpoint c = load_checkpoint(dir.file("dev.h5"));
  EXPECT_EQ(c.loop.train.step, 10);
  EXPECT_EQ(c.loop.history, std::vector(want.history.begin(), want.history.begin() + 2));
  expect_same(on_host(part.train), c.loop.train);
  LoopState got = make_loop(c.model(), "fake_device", dir.file("dev.h5"), device_log)
                      .resume(batches(), {.epochs = 4}, c.loop);
  expect_on_device(got.train);
  EXPECT_EQ(got.history, want.history);
  expect_same(want.train, on_host(got.train));
  EXPECT_NE(device_log.str().find("validation_loss"), std::string::npos) << device_log.str();

  // The files the handlers wrote hold the host run's values.
  expect_same(load_checkpoint(dir.file("host.h5")).loop.train,
              load_checkpoint(dir.file("dev.h5")).loop.train);
  expect_same(load_checkpoint(dir.file("host.h5.mid.h5")).loop.train,
              load_checkpoint(dir.file("dev.h5.mid.h5")).loop.train);
  // A manual save of a state on the device.
  save_checkpoint(dir.file("manual.h5"), model, got.train);
  expect_same(want.train, load_checkpoint(dir.file("manual.h5")).loop.train);

  // Evaluating the device state on the device, and the loaded host state on the device.
  auto evaluate = [&](const std::string& backend, const ModelState& state) {
    Loop eval = evaluator(model, {.backend = backend,
                                  .metrics = {{"accuracy", testing::accuracy}},
                                  .loss = cross_entropy,
                                  .progress = ProgressMode::off});
    return eval.run(Batches(valid_, {.batch_size = 8}), {.epochs = 1}, TrainState{.model = state})
        .history.back();
  };
  std::map<std::string, double> expected = evaluate(host, want.train.model);
  ASSERT_EQ(expected.count("accuracy"), 1u);
  EXPECT_EQ(evaluate("fake_device", got.train.model), expected);
  EXPECT_EQ(evaluate("fake_device", load_checkpoint(dir.file("manual.h5")).loop.train.model),
            expected);
}

TEST_F(DeviceOutputs, InitPredictAndExportAsOnTheHost) {
  Model model = testing::small_classifier();
  BuiltModel host = build(model), device = build(model, {.backend = "fake_device"});
  ModelState want = host.init(5);
  ModelState got = device.init(5);
  for (const auto& [layer, entries] : got.params)
    for (const auto& [name, t] : entries) EXPECT_EQ(t.device(), kDevice) << layer << "/" << name;
  expect_same(want.params, on_host(got.params), "init");

  Tensor y = device.predict(got, valid_.x);
  EXPECT_EQ(y.device(), kDevice);
  EXPECT_THROW(y.to_vector<float>(), Error);  // host code cannot read the device
  EXPECT_TRUE(equal(y.to_host(), host.predict(want, valid_.x)));

  // The exporter binds the trained values as constants: a device state writes the same C.
  InputTypes types = default_input_types(model, 4);
  ExportResult a = export_predict(model, want, types), b = export_predict(model, got, types);
  EXPECT_EQ(a.source.source, b.source.source);
  EXPECT_EQ(a.source.weights_hash, b.source.weights_hash);
}

TEST_F(DeviceOutputs, ABackendThatCannotCompileSaysWhy) {
  Model model = testing::small_classifier();
  Loop loop = trainer(model, cross_entropy, optimizers::adam(0.02),
                      {.backend = "fake_missing_device", .progress = ProgressMode::off});
  testing::expect_error([&] { loop.run(batches(), {.epochs = 1}); }, "no CUDA device");
  testing::expect_error(
      [&] {
        build(model, {.backend = "fake_missing_device"}).predict(build(model).init(0), valid_.x);
      },
      "no CUDA device");
}

}  // namespace
}  // namespace glia
