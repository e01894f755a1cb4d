// glia's side of the benchmark cases: the models of apps/cli/mnist_models.cpp, built and
// compiled through the public APIs (build, jit, TrainStep) on the backend asked for.
#include "cases.hpp"

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <random>

#include "../cli/mnist_models.hpp"
#include "glia/glia.hpp"

namespace glia::bench {

const std::vector<CaseInfo>& all_cases() {
  static const std::vector<CaseInfo> kCases{
      {.name = "tiny_init",
       .description = "tiny model (Axon's guide) {2,18} -> dense 32 -> relu -> dense 1 -> softmax: "
                      "init (parameters from a seed)"},
      {.name = "tiny_predict", .description = "tiny model: predict on x {2,18}"},
      {.name = "softmax_1k", .description = "softmax over 1,000 f32"},
      {.name = "softmax_1m", .description = "softmax over 1,000,000 f32"},
      {.name = "adam_update",
       .description = "Adam update of the MNIST MLP's 101,770 parameters (one optimizer step, "
                      "in place)"},
      {.name = "mlp_predict_b1",
       .description = "MNIST MLP (784-128 relu-dropout 0.5-10) predict, batch 1",
       .items_per_call = 1,
       .batch = 1},
      {.name = "mlp_predict_b128",
       .description = "MNIST MLP predict, batch 128",
       .items_per_call = 128,
       .has_peer = false,
       .batch = 128},
      {.name = "mlp_predict_b10000",
       .description = "MNIST MLP predict, batch 10,000 (MNIST's test images)",
       .items_per_call = 10000,
       .interp_by_default = false,
       .test_images = true,
       .batch = 10000},
      {.name = "mlp_epoch_b128",
       .description = "MNIST MLP training epoch (Adam 1e-3, cross-entropy), batch 128",
       .items_per_call = 60000,
       .interp_by_default = false,
       .epoch = true,
       .model = "mlp",
       .batch = 128},
      {.name = "mlp_epoch_b32",
       .description = "MNIST MLP training epoch, batch 32",
       .items_per_call = 60000,
       .interp_by_default = false,
       .epoch = true,
       .model = "mlp",
       .batch = 32},
      {.name = "cnn_epoch_b128",
       .description = "MNIST CNN (conv3x3x32-pool-conv3x3x64-pool-dense128-dense10) training "
                      "epoch, batch 128",
       .items_per_call = 60000,
       .interp_by_default = false,
       .epoch = true,
       .model = "cnn",
       .batch = 128},
      {.name = "lstm_epoch_b128",
       .description = "MNIST read row by row (28 steps of 28 pixels) -> lstm 128 (last step) -> "
                      "dense 10: training epoch, batch 128",
       .items_per_call = 60000,
       .interp_by_default = false,
       .epoch = true,
       .model = "lstm",
       .batch = 128},
      {.name = "mlp_step_compile",
       .description = "MLP training step (batch 128) on a fresh TrainStep: trace + optimize + "
                      "compile",
       .has_peer = false,
       .model = "mlp",
       .batch = 128},
      {.name = "aot_tiny_predict",
       .description = "tiny model predict on x {2,18}: exported C (glia export) vs the JIT",
       .has_peer = false,
       .batch = 2,
       .jit_case = "tiny_predict"},
      {.name = "aot_mlp_predict_b1",
       .description = "MNIST MLP predict, batch 1: exported C vs the JIT",
       .items_per_call = 1,
       .has_peer = false,
       .batch = 1,
       .jit_case = "mlp_predict_b1"},
      {.name = "aot_mlp_predict_b128",
       .description = "MNIST MLP predict, batch 128: exported C vs the JIT",
       .items_per_call = 128,
       .has_peer = false,
       .batch = 128,
       .jit_case = "mlp_predict_b128"},
  };
  return kCases;
}

const CaseInfo& case_named(const std::string& name) {
  for (const CaseInfo& c : all_cases())
    if (c.name == name) return c;
  throw Error(cat("unknown bench case '", name, "'"));
}

Tensor uniform_tensor(Shape shape, std::uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> u(0, 1);
  std::vector<float> v(static_cast<std::size_t>(shape.numel()));
  for (float& f : v) f = u(gen);
  return Tensor::from(v, shape);
}

namespace {

Model tiny_model() {
  Model x = input("data", {-1, 18});
  Model h = dense(x, 32);
  h = activation(h, "relu");
  h = dense(h, 1);
  return activation(h, "softmax");
}

Expr cross_entropy(const Expr& y_true, const Expr& y_pred) {
  return losses::categorical_cross_entropy(y_true, y_pred);
}

// One training epoch (or the first part of one) of TrainStep over shuffled batches, the
// batching inside the timed call as in `glia train`.
PreparedCase epoch_case(const CaseInfo& info, const std::string& backend,
                        const CaseContext& context) {
  check(context.data != nullptr, "bench case ", info.name, " needs the training data");
  Model model = cli::mnist_model(info.model);
  Dataset data = context.data->train;
  data.x = cli::inputs_for(model, data.x);  // [N, 784] as the model's input takes it
  auto step = std::make_shared<TrainStep>(model, cross_entropy, optimizers::adam(1e-3),
                                          StepOptions{.backend = backend});
  auto state = std::make_shared<TrainState>(step->init(0));
  auto batches = std::make_shared<Batches>(
      data, BatchOptions{.batch_size = info.batch, .shuffle = true, .seed = 0});
  std::int64_t per_epoch = batches->batches_per_epoch();
  auto timed =
      static_cast<std::int64_t>(std::ceil(context.epoch_fraction * static_cast<double>(per_epoch)));
  timed = std::clamp<std::int64_t>(timed, 1, per_epoch);
  // Compile both batch shapes (the full one and the epoch's last, partial one) up front.
  {
    BatchIterator it = batches->epoch(0);
    std::optional<Batch> last;
    for (std::int64_t i = 0; i < per_epoch; ++i) last = it.next();
    Batch first = *batches->epoch(0).next();
    (*step)(*state, first.x, first.y);
    (*step)(*state, last->x, last->y);
  }
  auto epoch = std::make_shared<std::int64_t>(1);
  PreparedCase c;
  c.call = [=] {
    BatchIterator it = batches->epoch((*epoch)++);
    for (std::int64_t i = 0; i < timed; ++i) {
      std::optional<Batch> b = it.next();
      (*step)(*state, b->x, b->y);
    }
  };
  c.time_scale = static_cast<double>(per_epoch) / static_cast<double>(timed);
  if (timed < per_epoch)
    c.note = cat("timed ", timed, " of ", per_epoch, " batches, scaled to an epoch");
  return c;
}

}  // namespace

TrainData load_train_data(const std::string& dir) {
  TrainData d;
  if (std::filesystem::exists(std::filesystem::path(dir) / "train-images-idx3-ubyte") ||
      std::filesystem::exists(std::filesystem::path(dir) / "train-images-idx3-ubyte.gz")) {
    Mnist m = load_mnist(dir);
    d.train = {cli::mnist_inputs_for(cli::mnist_model("mlp"), m.train_images),
               one_hot_labels(m.train_labels, 10)};
    d.test_x = cli::mnist_inputs_for(cli::mnist_model("mlp"), m.test_images);
    return d;
  }
  d.synthetic = true;
  std::mt19937 gen(0);
  std::vector<std::uint8_t> labels(60000);
  for (std::uint8_t& l : labels) l = static_cast<std::uint8_t>(gen() % 10);
  d.train = {uniform_tensor({60000, 784}, 1), one_hot_labels(Tensor::from(labels), 10)};
  d.test_x = uniform_tensor({10000, 784}, 4);
  return d;
}

PreparedCase prepare_glia_case(const CaseInfo& info, const std::string& backend,
                               const CaseContext& context) {
  PreparedCase c;
  const std::string& n = info.name;
  // A device backend's case reads its inputs where a GPU program keeps them, on the device
  // (the epoch cases upload every batch, as glia train does).
  auto placed = [&](const Tensor& t) {
    if (backend != "cuda") return t;
    c.note = "inputs on the device";
    return t.to(Device::cuda(0));
  };
  if (n == "tiny_init" || n == "tiny_predict") {
    BuiltModel built = build(tiny_model(), {.backend = backend});
    auto state = std::make_shared<ModelState>(built.init(0));
    if (n == "tiny_init") {
      c.call = [init = built.init] { init(0); };
    } else {
      Tensor x = placed(uniform_tensor({2, 18}, 2));
      c.call = [predict = built.predict, state, x] { predict(*state, x); };
    }
    c.call();  // compiles
  } else if (n == "softmax_1k" || n == "softmax_1m") {
    auto f = jit([](const Expr& x) { return softmax(x); },
                 {.backend = backend,
                  .name = "softmax",
                  .compile_options = {.cpu = {.threads = context.threads}}});
    Tensor x = placed(uniform_tensor({n == "softmax_1k" ? 1000 : 1000000}, 3));
    c.call = [f, x] { f(x); };
    c.call();
  } else if (n == "adam_update") {
    // The optimizer's step alone, as a training step runs it: parameters and moments
    // donated and updated in place, the gradients held (read only).
    Transformation adam = optimizers::adam(1e-3);
    JitOptions options{.backend = backend,
                       .name = "adam_update",
                       .compile_options = {.cpu = {.threads = context.threads}}};
    auto init = jit([adam](const ExprParamMap& p) { return adam.init(p); }, options);
    auto step = jit(
        [adam](const ExprParamMap& p, const ExprParamMap& g, const OptState& state) {
          auto [updates, next] = adam.update(g, state, p);
          return std::make_tuple(apply_updates(p, updates), next);
        },
        options);
    struct Held {
      ParamMap params, grads;
      TensorOptState state;
    };
    auto held = std::make_shared<Held>();
    held->params = build(cli::mnist_model("mlp")).init(0).params;
    std::uint32_t seed = 6;
    for (const auto& [layer, leaves] : held->params)
      for (const auto& [name, t] : leaves)
        held->grads[layer][name] = placed(uniform_tensor(t.shape(), seed++));
    held->state = init(held->params);
    c.call = [step, held] {
      ParamMap grads = held->grads;  // shared, so never written
      auto [params, state] =
          step.call_donating(std::move(held->params), std::move(grads), std::move(held->state));
      held->params = std::move(params);
      held->state = std::move(state);
    };
    c.call();
  } else if (n == "mlp_predict_b1" || n == "mlp_predict_b128" || n == "mlp_predict_b10000") {
    BuiltModel built = build(cli::mnist_model("mlp"), {.backend = backend});
    auto state = std::make_shared<ModelState>(built.init(0));
    // The test images where the case predicts them: ~81% of their pixels are zeros, which
    // the cpu backend's first product skips (uniform pixels have none).
    Tensor x = placed(info.test_images && context.data != nullptr
                          ? context.data->test_x.slice(0, 0, info.batch)
                          : uniform_tensor({info.batch, 784}, 4));
    c.call = [predict = built.predict, state, x] { predict(*state, x); };
    c.call();
  } else if (info.epoch) {
    return epoch_case(info, backend, context);
  } else if (n == "mlp_step_compile") {
    Model model = cli::mnist_model("mlp");
    TrainState state =
        TrainStep(model, cross_entropy, optimizers::adam(1e-3), {.backend = backend}).init(0);
    Tensor x = uniform_tensor({info.batch, 784}, 5);
    Tensor y = Tensor::zeros({info.batch, 10});
    c.call = [=] {
      TrainStep fresh(model, cross_entropy, optimizers::adam(1e-3), {.backend = backend});
      fresh.graph_text(state, x, y);
    };
    c.note = "TrainStep::graph_text: trace, optimize, compile, print";
  } else {
    throw Error(cat("unknown bench case '", n, "'"));
  }
  return c;
}

PreparedCase prepare_aot_case(const CaseInfo& info) {
  const bool tiny = info.jit_case == "tiny_predict";
  Model model = tiny ? tiny_model() : cli::mnist_model("mlp");
  // The JIT case's parameters (init(0)) and input.
  ModelState state = build(model).init(0);
  Tensor x = tiny ? uniform_tensor({2, 18}, 2) : uniform_tensor({info.batch, 784}, 4);
  auto dir = std::filesystem::temp_directory_path() /
             cat("glia_bench_", info.name, "_", std::random_device{}());
  ExportResult r = export_predict(model, state, default_input_types(model, info.batch),
                                  {.name = "bench", .output = dir});
  check(r.library.has_value(), "bench case ", info.name, ": ", r.build_note);
  auto lib = std::make_shared<aot::Library>(*r.library);
  std::filesystem::remove_all(dir);  // loaded: the mapping outlives the file
  auto out = std::make_shared<std::vector<float>>(std::size_t(lib->output().shape.numel()));
  auto ws = std::shared_ptr<std::byte>(
      static_cast<std::byte*>(std::aligned_alloc(64, std::size_t(lib->workspace_bytes()))),
      [](std::byte* p) { std::free(p); });
  PreparedCase c;
  c.call = [lib, x, out, ws] { lib->call(x.data<float>(), out->data(), ws.get()); };
  c.call();
  c.note = "exported C: cc -O3 -march=native, one thread";
  return c;
}

}  // namespace glia::bench
