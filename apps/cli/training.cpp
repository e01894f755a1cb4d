// The data flags and helpers shared by the training, evaluation and checkpoint commands.
#include "training.hpp"

#include <fstream>
#include <iterator>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdlib>
#include <iostream>

#include "glia/compiler/cpu_backend.hpp"
#include "glia/compiler/registry.hpp"
#include "mnist_models.hpp"

namespace glia::cli {

void add_data_flags(CLI::App* cmd, DataFlags& f) {
  cmd->add_option("--dataset", f.dataset, "Dataset: mnist or fashion-mnist (IDX files)")
      ->check(CLI::IsMember({"mnist", "fashion-mnist"}))
      ->capture_default_str();
  cmd->add_option(
      "--data-dir", f.data_dir,
      "Folder with the four IDX files (default: $GLIA_DATA_DIR, else ./data/<dataset>)");
  cmd->add_option("--model", f.model, "Model: mlp (784-128-10) or cnn (two conv layers)")
      ->check(CLI::IsMember({"mlp", "cnn"}))
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
    try {
      std::size_t used = 0;
      T v{};
      if constexpr (std::is_same_v<T, double>)
        v = std::stod(text, &used);
      else if constexpr (std::is_signed_v<T>)
        v = static_cast<T>(std::stoll(text, &used));
      else
        v = static_cast<T>(std::stoull(text, &used));
      if (used == text.size()) return v;
    } catch (const std::exception&) {
    }
    throw Error(cat(c.path, ": its config entry ", key, "='", text, "' is not a number"));
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
