// The data flags and helpers shared by the training, evaluation and checkpoint commands.
#include "training.hpp"

#include <fstream>
#include <iterator>
#include <optional>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <iostream>

#include "args.hpp"
#include "glia/compiler/cpu_backend.hpp"
#include "glia/compiler/registry.hpp"
#include "mnist_models.hpp"

namespace glia::cli {

void add_data_flags(CLI::App* cmd, DataFlags& f) {
  cmd->add_option("--dataset", f.dataset,
                  "Dataset: mnist or fashion-mnist (IDX files), npz (arrays x, y and "
                  "optionally x_test, y_test) or csv (--data FILE)")
      ->check(CLI::IsMember({"mnist", "fashion-mnist", "npz", "csv"}))
      ->capture_default_str();
  cmd->add_option("--data", f.data, "With --dataset npz or csv: the file");
  cmd->add_option("--label", f.label, "With --dataset csv: the label column (default: the last)");
  cmd->add_option("--classes", f.classes,
                  "With --dataset npz or csv: classes of the integer labels (default: the "
                  "largest label + 1)")
      ->check(CLI::Range(std::int64_t{0}, std::int64_t{1} << 20));
  cmd->add_option(
      "--data-dir", f.data_dir,
      "Folder with the four IDX files (default: $GLIA_DATA_DIR, else ./data/<dataset>)");
  cmd->add_option("--model", f.model,
                  "Model: mlp (784-128-10), cnn (two conv layers) or lstm (128 units over the "
                  "image's 28 rows)")
      ->check(CLI::IsMember({"mlp", "cnn", "lstm"}))
      ->capture_default_str();
  cmd->add_option("--batch-size", f.batch_size, "Examples per batch")
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 30))
      ->capture_default_str();
  cmd->add_option("--seed", f.seed, "Seed of the parameters, shuffling and dropout")
      ->capture_default_str();
  cmd->add_option("--backend", f.backend, "Backend that runs the compiled graphs (see the README)")
      ->capture_default_str();
  cmd->add_option("--threads", f.threads,
                  "Worker threads for backends that use them (interp runs on one)")
      ->check(CLI::Range(1, 1024))
      ->capture_default_str();
  cmd->add_flag("--json", f.json, "Print one final JSON object line with the figures");
}

namespace {

std::string data_dir(const DataFlags& f) {
  if (!f.data_dir.empty()) return f.data_dir;
  if (const char* env = std::getenv("GLIA_DATA_DIR"); env != nullptr && f.dataset == "mnist")
    return env;
  return "data/" + f.dataset;
}

}  // namespace

namespace {

// Integer class labels [N] as one-hot rows of `classes` (0: the largest label + 1);
// float targets [N, C] as they are.
Tensor targets(const Tensor& y, std::int64_t classes, const std::string& what) {
  if (is_float(y.dtype())) {
    check(y.rank() == 2, what, ": float targets must be [N, classes], got ", y.type());
    return y.dtype() == DType::f32 ? y : y.cast(DType::f32);
  }
  check(y.rank() == 1, what, ": integer labels must be [N], got ", y.type());
  std::vector<std::int64_t> labels = y.to_vector<std::int64_t>();
  std::int64_t top = 0;
  for (std::int64_t l : labels) {
    check(l >= 0, what, ": label ", l, " is negative");
    top = std::max(top, l + 1);
  }
  const std::int64_t c = classes > 0 ? classes : top;
  check(top <= c, what, ": label ", top - 1, " is not a class in 0..", c - 1, " (--classes ",
        classes, ")");
  return one_hot_labels(y.cast(DType::i64), c);
}

// The last sixth of the examples, or the file's own test split.
Data split(Dataset all, std::optional<Dataset> test) {
  if (test) return {std::move(all), std::move(*test)};
  const std::int64_t n = all.size(), held = std::max<std::int64_t>(1, n / 6);
  check(n >= 2, "the data holds ", n, " example; at least 2 are needed (one to test)");
  return {{all.x.rows(0, n - held), all.y.rows(0, n - held)},
          {all.x.rows(n - held, n), all.y.rows(n - held, n)}};
}

}  // namespace

Data load_file(const DataFlags& f, const Model& model) {
  check(!f.data.empty(), "--dataset ", f.dataset, " needs --data FILE");
  Dataset all;
  std::optional<Dataset> test;
  if (f.dataset == "csv") {
    all = read_csv(f.data, {.label = f.label, .classes = f.classes});
    if (f.classes == 0) {
      for (float v : all.y.to_vector<float>())
        check(v == std::floor(v), f.data, ": the label column holds ", v,
              ", not a class index (glia train classifies)");
      all.y = targets(all.y.reshape({all.size()}).cast(DType::i64), 0, f.data);
    }
  } else {
    std::map<std::string, Tensor> a = read_npz(f.data);
    auto need = [&](const char* name) {
      auto it = a.find(name);
      if (it == a.end()) {
        std::string known;
        for (const auto& [k, v] : a) known += (known.empty() ? "" : ", ") + k;
        throw Error(cat(f.data, ": no array '", name, "' (arrays: ", known, ")"));
      }
      return it->second;
    };
    all = {need("x"), targets(need("y"), f.classes, f.data + " y")};
    if (a.count("x_test") != 0)
      test = Dataset{need("x_test"), targets(need("y_test"), all.y.shape()[1], f.data + " y_test")};
  }
  check(all.x.shape()[0] == all.y.shape()[0], f.data, ": ", all.x.shape()[0], " examples but ",
        all.y.shape()[0], " labels");
  Data d = split(std::move(all), std::move(test));
  d.train.x = inputs_for(model, d.train.x);
  d.test.x = inputs_for(model, d.test.x);
  return d;
}

Model read_model_json(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  check(static_cast<bool>(in), "--model-json: cannot read '", path, "'");
  std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  try {
    return model_from_json(text);
  } catch (const Error& e) {
    throw Error(cat("--model-json ", path, ": ", e.what()));
  }
}

Data load(const DataFlags& f, const Model& model) {
  const std::vector<std::string>& names = backend_names();
  check(std::find(names.begin(), names.end(), f.backend) != names.end(), "unknown backend '",
        f.backend, "'");
  // A backend this machine cannot run (cuda without a GPU) fails before the data loads.
  const std::string why = backend(f.backend).unavailable();
  check(why.empty(), "--backend ", f.backend, ": ", why);
  cpu::set_threads(f.threads);
  if (f.dataset == "npz" || f.dataset == "csv") return load_file(f, model);
  Mnist m = load_mnist(data_dir(f));
  return {{mnist_inputs_for(model, m.train_images), one_hot_labels(m.train_labels, 10)},
          {mnist_inputs_for(model, m.test_images), one_hot_labels(m.test_labels, 10)}};
}

Expr cross_entropy(const Expr& y_true, const Expr& y_pred) {
  return losses::categorical_cross_entropy(y_true, y_pred);
}
Expr accuracy(const Expr& y_true, const Expr& y_pred) { return metrics::accuracy(y_true, y_pred); }

Transformation optimizer(const std::string& name, double lr) {
  using namespace optimizers;
  if (name == "adam") return adam(lr);
  if (name == "adamw") return adamw(lr);
  if (name == "sgd") return sgd(lr);
  if (name == "momentum") return sgd(lr, 0.9);
  if (name == "nesterov") return sgd(lr, 0.9, true);
  if (name == "rmsprop") return rmsprop(lr);
  if (name == "adagrad") return adagrad(lr);
  if (name == "adabelief") return adabelief(lr);
  if (name == "radam") return radam(lr);
  if (name == "yogi") return yogi(lr);
  if (name == "lamb") return lamb(lr);
  throw Error(cat("unknown optimizer '", name, "'"));
}

namespace {

template <class T>
T parse_setting(const Checkpoint& c, const std::string& key, const std::string& text) {
  if constexpr (std::is_same_v<T, std::string>) {
    return text;
  } else {
    std::optional<T> v;
    if constexpr (std::is_same_v<T, double>)
      v = parse_double(text);
    else if constexpr (std::is_signed_v<T>)
      v = parse_int64(text);
    else
      v = parse_uint64(text);
    if (!v) throw Error(cat(c.path, ": its config entry ", key, "='", text, "' is not a number"));
    return *v;
  }
}

template <class T>
void take(const CLI::App& cmd, const Checkpoint& c, const std::string& flag, const std::string& key,
          T& value) {
  auto it = c.config.find(key);
  if (it == c.config.end()) return;
  T saved = parse_setting<T>(c, key, it->second);
  if (cmd.count(flag) == 0) {
    value = saved;
    return;
  }
  if (value == saved) return;
  check(key != "model", flag, " ", value, ": the checkpoint ", c.path, " holds a ", it->second,
        " model");
  std::cerr << "note: " << flag << " " << value << " differs from the checkpoint's " << it->second
            << "\n";
}

}  // namespace

void take_setting(const CLI::App& cmd, const Checkpoint& c, const std::string& flag,
                  const std::string& key, std::string& value) {
  take(cmd, c, flag, key, value);
}
void take_setting(const CLI::App& cmd, const Checkpoint& c, const std::string& flag,
                  const std::string& key, double& value) {
  take(cmd, c, flag, key, value);
}
void take_setting(const CLI::App& cmd, const Checkpoint& c, const std::string& flag,
                  const std::string& key, std::int64_t& value) {
  take(cmd, c, flag, key, value);
}
void take_setting(const CLI::App& cmd, const Checkpoint& c, const std::string& flag,
                  const std::string& key, std::uint64_t& value) {
  take(cmd, c, flag, key, value);
}

void flags_from_checkpoint(const CLI::App& cmd, const Checkpoint& c, DataFlags& f) {
  take_setting(cmd, c, "--dataset", "dataset", f.dataset);
  take_setting(cmd, c, "--model", "model", f.model);
  take_setting(cmd, c, "--batch-size", "batch_size", f.batch_size);
  take_setting(cmd, c, "--seed", "seed", f.seed);
  take_setting(cmd, c, "--backend", "backend", f.backend);
}

std::map<std::string, double> evaluate(const Model& model, const ModelState& state,
                                       const Data& data, const DataFlags& f) {
  Loop eval = evaluator(model, {.backend = f.backend,
                                .metrics = {{"accuracy", accuracy}},
                                .loss = cross_entropy,
                                .progress = ProgressMode::off});
  TrainState s;
  s.model = state;
  LoopState out = eval.run(Batches(data.test, {.batch_size = 1000}), {.epochs = 1}, s);
  return out.history.back();
}

}  // namespace glia::cli
