// `glia train` and `glia eval`: MNIST-style training and evaluation from the command
// line. train prints the progress bar (plain lines without a terminal), then the test
// loss and accuracy; --json adds one final JSON line with the figures. --checkpoint saves
// the run after every epoch (and every N iterations); --resume continues it. A non-finite
// loss halts the run with the step named and exit status 1 (--keep-on-nan trains on).
// Under mpirun, --distributed trains data-parallel: each process a shard of every batch,
// rank 0 alone printing and writing files; an error on one process ends them all.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "args.hpp"
#include "commands.hpp"
#include "glia/glia.hpp"
#include "mnist_models.hpp"
#include "training.hpp"

namespace glia::cli {

namespace {

struct TrainFlags {
  std::string plot;     // an SVG of the curves, rewritten after every epoch
  std::string log_csv;  // the history as CSV, likewise
  std::int64_t epochs = 5;
  std::string optimizer = "adam";
  double learning_rate = 1e-3;
  std::string checkpoint;
  std::int64_t checkpoint_every = 0;  // iterations; 0: at the end of each epoch only
  bool resume = false;
  bool keep_on_nan = false;  // train on through a non-finite loss
  bool distributed = false;  // data parallel over the processes mpirun started
};

std::string exact(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

// Stored in every checkpoint, so --resume (and eval, predict) can take the settings back.
std::map<std::string, std::string> run_config(const DataFlags& f, const TrainFlags& t,
                                              int processes) {
  return {{"command", "glia train"},
          {"dataset", f.dataset},
          {"model", f.model_json.empty() ? f.model : "json"},
          {"optimizer", t.optimizer},
          {"learning_rate", exact(t.learning_rate)},
          {"batch_size", std::to_string(f.batch_size)},
          {"seed", std::to_string(f.seed)},
          {"backend", f.backend},
          {"processes", std::to_string(processes)}};
}

void print_json(const DataFlags& f, const TrainFlags& t, const LoopState& s,
                const std::map<std::string, double>& test) {
  nlohmann::json j{{"dataset", f.dataset},
                   {"model", f.model_json.empty() ? f.model : f.model_json},
                   {"optimizer", t.optimizer},
                   {"learning_rate", t.learning_rate},
                   {"batch_size", f.batch_size},
                   {"seed", f.seed},
                   {"backend", f.backend},
                   {"processes", s.world_size},
                   {"epochs", s.epoch},
                   {"epoch_seconds", s.epoch_seconds},
                   {"samples_per_second", s.samples_per_second},
                   {"test_loss", test.at("loss")},
                   {"test_accuracy", test.at("accuracy")}};
  if (!s.history.empty() && s.history.back().count("loss") != 0) {
    j["train_loss"] = s.history.back().at("loss");
    j["train_accuracy"] = s.history.back().at("accuracy");
  }
  std::cout << j.dump() << "\n";
}

int train_on(const CLI::App& cmd, DataFlags f, TrainFlags t,
             const std::shared_ptr<Communicator>& comm) {
  const int rank = comm ? comm->rank() : 0, processes = comm ? comm->size() : 1;
  // Data parallel: rank 0 alone prints; the others' output goes nowhere.
  std::ostringstream quiet;
  std::ostream& out = rank == 0 ? std::cout : quiet;
  std::optional<Checkpoint> from;
  if (t.resume) {
    check(!t.checkpoint.empty(), "--resume needs --checkpoint FILE, the run to continue");
    check(f.model_json.empty(),
          "--resume takes the model from the checkpoint; leave out --model-json");
    from = load_checkpoint(t.checkpoint);
    flags_from_checkpoint(cmd, *from, f);
    take_setting(cmd, *from, "--optimizer", "optimizer", t.optimizer);
    take_setting(cmd, *from, "--learning-rate", "learning_rate", t.learning_rate);
    const LoopState& at = from->loop;
    check(at.world_size == processes, t.checkpoint, " was saved by a run on ", at.world_size,
          " process(es) and this one has ", processes, "; resume it with mpirun -np ",
          at.world_size,
          at.world_size > 1 ? " ... glia train --distributed" : " (no --distributed)");
    check(at.epoch < t.epochs || (at.epoch == t.epochs && at.iteration == 0), "--epochs ", t.epochs,
          " counts the epochs from the run's start, and ", t.checkpoint, " has completed ",
          at.epoch, " already; ask for more");
  } else if (rank == 0 && !t.checkpoint.empty() && std::filesystem::exists(t.checkpoint)) {
    std::cerr << "note: " << t.checkpoint
              << " exists and will be replaced (--resume continues it instead)\n";
  }
  Model model = from                    ? from->model()
                : !f.model_json.empty() ? read_model_json(f.model_json)
                                        : mnist_model(f.model);
  if (from) check_checkpoint(*from, model);
  Data data = load(f, model);
  Loop loop = trainer(model, cross_entropy, optimizer(t.optimizer, t.learning_rate),
                      {.backend = f.backend,
                       .seed = f.seed,
                       .metrics = {{"accuracy", accuracy}},
                       .output = &out,
                       .communicator = comm});
  // Before the checkpoints: the iteration that went non-finite is never saved.
  if (!t.keep_on_nan) loop.terminate_on_nan();
  if (!t.checkpoint.empty()) {
    std::map<std::string, std::string> config = run_config(f, t, processes);
    loop.checkpoint({.path = t.checkpoint, .config = config});
    if (t.checkpoint_every > 0)
      loop.checkpoint({.path = t.checkpoint,
                       .event = Event::iteration_completed,
                       .filter = Filter::every(t.checkpoint_every),
                       .config = config});
  }
  // The next batch is gathered while a GPU step runs; on the cpu backend the step has
  // every core.
  if (rank == 0 && (!t.plot.empty() || !t.log_csv.empty()))
    loop.handle(Event::epoch_completed, [t](LoopState& s) {
      // The loop records the epoch after its handlers: this one's figures are s.metrics.
      History h = s.history;
      if (static_cast<std::int64_t>(h.size()) == s.epoch) h.push_back(s.metrics);
      if (!t.plot.empty()) write_history_svg(t.plot, h, "glia train");
      if (!t.log_csv.empty()) write_history_csv(t.log_csv, h);
      return HandlerResult::continue_;
    });
  Batches train(data.train, {.batch_size = f.batch_size,
                             .shuffle = true,
                             .seed = f.seed,
                             .prefetch = f.backend == "cuda",
                             .shard = rank,
                             .shards = processes});
  LoopState s;
  if (from) {
    out << "resuming " << t.checkpoint << ": " << from->loop.epoch << " epochs and "
        << from->loop.iteration << " batches done (step " << from->loop.train.step << ")\n";
    s = loop.resume(train, {.epochs = t.epochs}, std::move(from->loop));
  } else {
    s = loop.run(train, {.epochs = t.epochs});
  }
  if (s.halted && !s.halt_reason.empty()) {
    if (rank == 0)
      std::cerr << "error: training halted: " << s.halt_reason
                << " (a lower --learning-rate may help; --keep-on-nan trains on)\n";
    return 1;
  }
  // Every process holds the same parameters: rank 0 tests them.
  if (rank != 0) return 0;
  std::map<std::string, double> test = evaluate(model, s.train.model, data, f);
  std::cout << "test loss " << test.at("loss") << ", test accuracy " << test.at("accuracy") << "\n";
  if (f.json) print_json(f, t, s, test);
  return 0;
}

int run_train(const CLI::App& cmd, const DataFlags& f, const TrainFlags& t) {
  if (!t.distributed) {
    if (mpi::launched_size() > 1 && mpi::launched_rank() == 0)
      std::cerr << "note: mpirun started " << mpi::launched_size()
                << " processes and each trains alone; add --distributed to train one model "
                   "data-parallel\n";
    return train_on(cmd, f, t, nullptr);
  }
  mpi::Session session;  // glia::Error in a build without MPI
  std::shared_ptr<Communicator> world = session.world();
  try {
    return train_on(cmd, f, t, world);
  } catch (const std::exception& e) {
    // The other processes would wait in a collective for this one: end them all.
    std::cerr << "glia: error (rank " << world->rank() << " of " << world->size()
              << "): " << e.what() << "\n";
    mpi::abort(1);
  }
}

// The class of each row: the index of its largest output.
std::vector<std::int64_t> classes(const Tensor& y) {
  const std::int64_t rows = y.shape()[0], cols = y.numel() / std::max<std::int64_t>(rows, 1);
  std::vector<std::int64_t> c(std::size_t(rows), 0);
  const float* p = y.data<float>();
  for (std::int64_t r = 0; r < rows; ++r)
    c[std::size_t(r)] = std::max_element(p + r * cols, p + (r + 1) * cols) - (p + r * cols);
  return c;
}

// An exported library (glia export) against the JIT on the test split: both accuracies,
// the largest output difference and the images whose class differs.
int compare_exported(const Model& model, const ModelState& state, const Data& data,
                     const DataFlags& f, const std::string& library) {
  aot::Library lib(library);
  if (lib.has_weights_file())
    lib.load_weights(std::filesystem::path(library).parent_path() / (lib.name() + ".weights"));
  Tensor x = data.test.x;
  Tensor jit = build(model, {.backend = f.backend}).predict(state, x).to_host();
  Tensor aot = lib.predict(x);
  check(jit.type() == aot.type(), "eval --exported: the library gives ", aot.type(),
        ", the checkpoint's model ", jit.type());
  double diff = 0;
  for (std::int64_t i = 0; i < jit.numel(); ++i)
    diff = std::max(diff, std::abs(double(jit.data<float>()[i]) - double(aot.data<float>()[i])));
  std::vector<std::int64_t> a = classes(jit), b = classes(aot);
  // The labels are one-hot rows (one_hot_labels).
  std::vector<std::int64_t> truth = classes(data.test.y);
  std::int64_t differ = 0, right_jit = 0, right_aot = 0;
  const std::int64_t n = x.shape()[0];
  for (std::int64_t i = 0; i < n; ++i) {
    const std::int64_t t = truth[std::size_t(i)];
    differ += a[std::size_t(i)] != b[std::size_t(i)];
    right_jit += a[std::size_t(i)] == t;
    right_aot += b[std::size_t(i)] == t;
  }
  std::cout << "exported " << lib.name() << " vs the JIT on " << n << " test images: max |diff| "
            << diff << ", classes differ on " << differ << ", accuracy " << double(right_aot) / n
            << " (JIT " << double(right_jit) / n << ")\n";
  if (f.json)
    std::cout << nlohmann::json{{"exported", library},
                                {"images", n},
                                {"max_abs_diff", diff},
                                {"classes_differ", differ},
                                {"exported_accuracy", double(right_aot) / n},
                                {"jit_accuracy", double(right_jit) / n}}
                     .dump()
              << "\n";
  return differ == 0 ? 0 : 1;
}

int run_eval(const CLI::App& cmd, DataFlags f, const std::string& checkpoint,
             const std::string& exported) {
  Model model;
  ModelState state;
  if (!checkpoint.empty()) {
    Checkpoint c = load_checkpoint(checkpoint);
    flags_from_checkpoint(cmd, c, f);
    model = c.model();
    check_checkpoint(c, model);
    state = c.loop.train.model;
  } else {
    model = mnist_model(f.model);
  }
  Data data = load(f, model);
  if (checkpoint.empty()) state = build(model, {.backend = f.backend}).init(f.seed);
  if (!exported.empty()) return compare_exported(model, state, data, f, exported);
  std::map<std::string, double> test = evaluate(model, state, data, f);
  std::cout << "test loss " << test.at("loss") << ", test accuracy " << test.at("accuracy") << "\n";
  if (f.json)
    std::cout << nlohmann::json{{"model", f.model},
                                {"seed", f.seed},
                                {"checkpoint", checkpoint},
                                {"test_loss", test.at("loss")},
                                {"test_accuracy", test.at("accuracy")}}
                     .dump()
              << "\n";
  return 0;
}

}  // namespace

Command add_train_command(CLI::App& app) {
  auto flags = std::make_shared<DataFlags>();
  auto t = std::make_shared<TrainFlags>();
  CLI::App* cmd =
      app.add_subcommand("train", "Train a model on MNIST, then report test loss and accuracy");
  add_data_flags(cmd, *flags);
  cmd->add_option("--model-json", flags->model_json,
                  "Train the architecture in this file (model_to_json's text, e.g. a "
                  "checkpoint's /architecture) instead of --model; the images are shaped for "
                  "its input")
      ->excludes(cmd->get_option("--model"));
  cmd->add_option("--plot", t->plot,
                  "Draw the loss and each metric per epoch as an SVG in this file (rewritten "
                  "after every epoch)");
  cmd->add_option("--log-csv", t->log_csv,
                  "Write the loss and each metric per epoch as CSV to this file (one row an "
                  "epoch, rewritten after every epoch)");
  cmd->add_option("--epochs", t->epochs,
                  "Passes over the training set, counted from the run's start (also with "
                  "--resume)")
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{1000000}))
      ->capture_default_str();
  cmd->add_option(
         "--optimizer", t->optimizer,
         "adam, adamw, sgd, momentum, nesterov, rmsprop, adagrad, adabelief, radam, yogi or lamb")
      ->check(CLI::IsMember({"adam", "adamw", "sgd", "momentum", "nesterov", "rmsprop", "adagrad",
                             "adabelief", "radam", "yogi", "lamb"}))
      ->capture_default_str();
  cmd->add_option("--learning-rate", t->learning_rate, "Learning rate (positive)")
      ->check(CLI::Validator([](std::string& v) { return check_positive(v); }, "POSITIVE"))
      ->capture_default_str();
  cmd->add_option("--checkpoint", t->checkpoint,
                  "HDF5 checkpoint file, saved after every epoch (see the README for its layout)");
  cmd->add_option("--checkpoint-every", t->checkpoint_every,
                  "Also save the checkpoint every N iterations")
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 40));
  cmd->add_flag("--resume", t->resume,
                "Continue the run saved in --checkpoint; flags not given take its values");
  cmd->add_flag("--distributed", t->distributed,
                "Data-parallel training over the processes of mpirun -np N (MPI): each trains "
                "on its share of every --batch-size batch, rank 0 prints and writes the "
                "checkpoint; --threads counts per process");
  cmd->add_flag("--keep-on-nan", t->keep_on_nan,
                "Train on when a batch's loss is NaN or infinite (by default the run halts "
                "there, naming the step, and exits with status 1)");
  return {cmd, [=] { return run_train(*cmd, *flags, *t); }};
}

Command add_eval_command(CLI::App& app) {
  auto flags = std::make_shared<DataFlags>();
  auto checkpoint = std::make_shared<std::string>();
  CLI::App* cmd = app.add_subcommand(
      "eval", "Evaluate a checkpoint, or a model initialised from --seed, on the MNIST test split");
  add_data_flags(cmd, *flags);
  cmd->add_option("--checkpoint", *checkpoint,
                  "HDF5 checkpoint to evaluate (its model and settings; flags given override)");
  auto exported = std::make_shared<std::string>();
  cmd->add_option("--exported", *exported,
                  "libNAME.so exported from the checkpoint (glia export): compare its outputs "
                  "and classes with the JIT's on the test split (exit 1 if a class differs)")
      ->needs(cmd->get_option("--checkpoint"));
  return {cmd, [=] { return run_eval(*cmd, *flags, *checkpoint, *exported); }};
}

}  // namespace glia::cli
