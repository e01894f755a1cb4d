// `glia train` and `glia eval`: MNIST-style training and evaluation from the command
// line. train prints the progress bar (plain lines without a terminal), then the test
// loss and accuracy; --json adds one final JSON line with the figures.
#include <CLI/CLI.hpp>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "glia/glia.hpp"
#include "mnist_models.hpp"

namespace glia::cli {

namespace {

struct DataFlags {
  std::string dataset = "mnist";
  std::string data_dir;  // empty: $GLIA_DATA_DIR, else ./data/<dataset>
  std::string model = "mlp";
  std::int64_t batch_size = 32;
  std::uint64_t seed = 0;
  std::string backend = "interp";
  int threads = 2;
  bool json = false;
};

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

std::string data_dir(const DataFlags& f) {
  if (!f.data_dir.empty()) return f.data_dir;
  if (const char* env = std::getenv("GLIA_DATA_DIR"); env != nullptr && f.dataset == "mnist")
    return env;
  return "data/" + f.dataset;
}

struct Data {
  Dataset train, test;
};

Data load(const DataFlags& f) {
  check(
      std::find(backend_names().begin(), backend_names().end(), f.backend) != backend_names().end(),
      "unknown backend '", f.backend, "'");
  Mnist m = load_mnist(data_dir(f));
  return {{mnist_inputs(f.model, m.train_images), one_hot_labels(m.train_labels, 10)},
          {mnist_inputs(f.model, m.test_images), one_hot_labels(m.test_labels, 10)}};
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

// Test loss and accuracy of `state` over the test split.
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

int run_train(const DataFlags& f, std::int64_t epochs, const std::string& opt, double lr) {
  Data data = load(f);
  Model model = mnist_model(f.model);
  Loop loop = trainer(model, cross_entropy, optimizer(opt, lr),
                      {.backend = f.backend, .seed = f.seed, .metrics = {{"accuracy", accuracy}}});
  Batches train(data.train, {.batch_size = f.batch_size, .shuffle = true, .seed = f.seed});
  LoopState s = loop.run(train, {.epochs = epochs});
  std::map<std::string, double> test = evaluate(model, s.train.model, data, f);
  std::cout << "test loss " << test.at("loss") << ", test accuracy " << test.at("accuracy") << "\n";
  if (f.json) {
    nlohmann::json j{{"dataset", f.dataset},
                     {"model", f.model},
                     {"optimizer", opt},
                     {"learning_rate", lr},
                     {"batch_size", f.batch_size},
                     {"seed", f.seed},
                     {"backend", f.backend},
                     {"epochs", s.epoch},
                     {"epoch_seconds", s.epoch_seconds},
                     {"samples_per_second", s.samples_per_second},
                     {"train_loss", s.history.back().at("loss")},
                     {"train_accuracy", s.history.back().at("accuracy")},
                     {"test_loss", test.at("loss")},
                     {"test_accuracy", test.at("accuracy")}};
    std::cout << j.dump() << "\n";
  }
  return 0;
}

}  // namespace

Command add_train_command(CLI::App& app) {
  auto flags = std::make_shared<DataFlags>();
  auto epochs = std::make_shared<std::int64_t>(5);
  auto opt = std::make_shared<std::string>("adam");
  auto lr = std::make_shared<double>(1e-3);
  CLI::App* cmd =
      app.add_subcommand("train", "Train a model on MNIST, then report test loss and accuracy");
  add_data_flags(cmd, *flags);
  cmd->add_option("--epochs", *epochs, "Passes over the training set")
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{1000000}))
      ->capture_default_str();
  cmd->add_option(
         "--optimizer", *opt,
         "adam, adamw, sgd, momentum, nesterov, rmsprop, adagrad, adabelief, radam, yogi or lamb")
      ->check(CLI::IsMember({"adam", "adamw", "sgd", "momentum", "nesterov", "rmsprop", "adagrad",
                             "adabelief", "radam", "yogi", "lamb"}))
      ->capture_default_str();
  cmd->add_option("--learning-rate", *lr, "Learning rate (positive)")
      ->check(CLI::Validator(
          [](std::string& v) {
            double x = 0;
            try {
              x = std::stod(v);
            } catch (const std::exception&) {
              return std::string("not a number: ") + v;
            }
            return x > 0 ? std::string() : "must be positive, got " + v;
          },
          "POSITIVE"))
      ->capture_default_str();
  return {cmd, [=] { return run_train(*flags, *epochs, *opt, *lr); }};
}

Command add_eval_command(CLI::App& app) {
  auto flags = std::make_shared<DataFlags>();
  CLI::App* cmd = app.add_subcommand(
      "eval",
      "Evaluate a model initialised from --seed on the MNIST test split (loss and accuracy)");
  add_data_flags(cmd, *flags);
  return {cmd, [flags] {
            Data data = load(*flags);
            Model model = mnist_model(flags->model);
            ModelState state = build(model, {.backend = flags->backend}).init(flags->seed);
            std::map<std::string, double> test = evaluate(model, state, data, *flags);
            std::cout << "test loss " << test.at("loss") << ", test accuracy "
                      << test.at("accuracy") << "\n";
            if (flags->json)
              std::cout << nlohmann::json{{"model", flags->model},
                                          {"seed", flags->seed},
                                          {"test_loss", test.at("loss")},
                                          {"test_accuracy", test.at("accuracy")}}
                               .dump()
                        << "\n";
            return 0;
          }};
}

}  // namespace glia::cli
