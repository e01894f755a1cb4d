// `glia predict` and `glia summary`: a saved model used without its training code.
// predict runs a checkpoint's model on a .npy batch and writes the outputs as .npy;
// summary prints the layer table of a checkpoint (or of a built-in model), with where the
// run stands and a fingerprint of the parameters.
#include <CLI/CLI.hpp>
#include <fstream>
#include <iostream>

#include "commands.hpp"
#include "glia/core/hash.hpp"
#include "glia/glia.hpp"
#include "mnist_models.hpp"
#include "training.hpp"

namespace glia::cli {

namespace {

std::string declared_text(const LayerNode& input) {
  std::string out = std::string(dtype_name(input.input_dtype));
  for (std::int64_t d : input.input_shape) out += "[" + std::to_string(d) + "]";
  return out;
}

// An exported library (glia export) on the batch, NAME_BATCH rows per call.
int run_exported(const std::string& library, const std::string& weights, const std::string& in,
                 const std::string& out) {
  aot::Library lib(library);
  if (lib.has_weights_file()) {
    std::filesystem::path w = weights;
    if (w.empty()) w = std::filesystem::path(library).parent_path() / (lib.name() + ".weights");
    lib.load_weights(w);
  } else {
    check(weights.empty(), "--weights: ", library, " has its weights built in");
  }
  Tensor x = read_npy(in);
  Tensor y = lib.predict(x);
  write_npy(out, y);
  std::cout << "wrote " << out << ": " << y.type().to_string() << " (exported " << lib.name()
            << ", " << lib.batch() << " row(s) a call)\n";
  return 0;
}

// --input/--output values: one FILE where the model has one name to fill, or NAME=FILE
// entries naming them. `names` are the model's inputs (or heads); `all` asks for each.
std::map<std::string, std::string> named_files(const std::vector<std::string>& args,
                                               const std::vector<std::string>& names,
                                               const char* flag, const char* what, bool all) {
  std::string known;
  for (const std::string& n : names) known += (known.empty() ? "" : ", ") + n;
  auto named = [&](const std::string& arg) {
    std::size_t eq = arg.find('=');
    return eq != std::string::npos &&
           std::find(names.begin(), names.end(), arg.substr(0, eq)) != names.end();
  };
  std::map<std::string, std::string> files;
  if (args.size() == 1 && names.size() == 1 && !named(args[0])) return {{names[0], args[0]}};
  for (const std::string& arg : args) {
    if (!named(arg))
      throw Error(cat(flag, " ", arg, ": the model has ", names.size(), " ", what, "s (", known,
                      "); give ", flag, " NAME=FILE for ", all ? "each" : "those to write"));
    std::size_t eq = arg.find('=');
    check(files.emplace(arg.substr(0, eq), arg.substr(eq + 1)).second, flag, ": ", what, " '",
          arg.substr(0, eq), "' is given twice");
  }
  if (all)
    for (const std::string& n : names)
      check(files.count(n) != 0, flag, ": no file for ", what, " '", n, "' (the model's ", what,
            "s: ", known, ")");
  return files;
}

// The batch for one input, checked against its declared dtype and shape.
Tensor read_input(const std::string& path, const std::string& name, const LayerNode& input) {
  Tensor x = read_npy(path);
  bool fits =
      x.dtype() == input.input_dtype && x.rank() == static_cast<int>(input.input_shape.size());
  for (int i = 0; fits && i < x.rank(); ++i)
    fits = input.input_shape[static_cast<std::size_t>(i)] == -1 ||
           input.input_shape[static_cast<std::size_t>(i)] == x.shape()[i];
  check(fits, "--input ", path, " is ", x.type(), "; the model's input '", name, "' takes ",
        declared_text(input), " (-1: any size)");
  return x;
}

int run_predict(const CLI::App& cmd, const std::string& checkpoint,
                const std::vector<std::string>& in, const std::vector<std::string>& out,
                std::string backend) {
  Checkpoint c = load_checkpoint(checkpoint);
  take_setting(cmd, c, "--backend", "backend", backend);  // the training's, unless given
  Model model = c.model();
  check_checkpoint(c, model);
  std::vector<std::string> input_names;
  std::map<std::string, const LayerNode*> inputs;
  for (const ResolvedLayer& l : resolve_layers(model))
    if (!l.node->forward && l.node->output_names.empty()) {
      input_names.push_back(l.name);
      inputs[l.name] = l.node.get();
    }
  std::vector<std::string> heads = output_names(model);
  const bool one_output = heads.empty();
  if (one_output) heads = {"output"};
  std::map<std::string, std::string> out_files =
      named_files(out, heads, "--output", "output", one_output);
  std::map<std::string, Tensor> x;
  for (const auto& [name, path] : named_files(in, input_names, "--input", "input", true))
    x[name] = read_input(path, name, *inputs.at(name));
  std::map<std::string, Tensor> y =
      build(model, {.backend = backend}).predict.outputs(c.loop.train.model, x);
  for (const auto& [head, path] : out_files) {
    Tensor t = y.at(head).to_host();  // a device backend's outputs stay on the device
    write_npy(path, t);
    std::cout << "wrote " << path << ": " << t.type().to_string()
              << (one_output ? "" : " (output '" + head + "')") << "\n";
  }
  return 0;
}

// FNV-1a over every parameter and state entry (names, types and bytes), to tell at a
// glance whether two checkpoints hold the same model.
std::uint64_t fingerprint(const ModelState& state) {
  std::uint64_t h = kFnv1aBasis;
  auto mix = [&h](const void* data, std::size_t n) { h = fnv1a(h, data, n); };
  for (const ParamMap* m : {&state.params, &state.state})
    for (const auto& [layer, entries] : *m)
      for (const auto& [name, t] : entries) {
        std::string head = layer + "/" + name + " " + t.type().to_string();
        mix(head.data(), head.size() + 1);
        mix(t.raw_data(), t.nbytes());
      }
  return h;
}

// The model's architecture (model_to_json) to `path`, for `glia train --model-json`.
void write_architecture(const Model& model, const std::string& path) {
  const std::string text = model_to_json(model);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text << "\n";
  check(static_cast<bool>(out), "--architecture: cannot write '", path, "'");
}

int run_summary(const std::string& checkpoint, const std::string& model_name,
                const std::string& architecture) {
  if (checkpoint.empty()) {
    Model model = mnist_model(model_name);
    std::cout << summary(model);
    if (!architecture.empty()) write_architecture(model, architecture);
    return 0;
  }
  Checkpoint c = load_checkpoint(checkpoint);
  Model model = c.model();
  check_checkpoint(c, model);
  std::cout << summary(model);
  if (!architecture.empty()) write_architecture(model, architecture);
  const LoopState& s = c.loop;
  std::cout << "Checkpoint " << checkpoint << " (format " << c.format_version << ", saved at "
            << c.saved_at << ")\n"
            << "  epochs completed " << s.epoch << ", batches into the next " << s.iteration
            << ", step " << s.train.step << ", seed " << s.train.seed << "\n";
  if (!s.history.empty()) {
    std::cout << "  last epoch:";
    for (const auto& [k, v] : s.history.back()) std::cout << " " << k << " " << v;
    std::cout << "\n";
  }
  if (!c.config.empty()) {
    std::cout << "  config:";
    for (const auto& [k, v] : c.config) std::cout << " " << k << "=" << v;
    std::cout << "\n";
  }
  std::cout << "  parameter fingerprint " << hash_hex(fingerprint(s.train.model)) << "\n";
  return 0;
}

}  // namespace

Command add_predict_command(CLI::App& app) {
  auto checkpoint = std::make_shared<std::string>();
  auto in = std::make_shared<std::vector<std::string>>();
  auto out = std::make_shared<std::vector<std::string>>();
  auto backend = std::make_shared<std::string>(default_backend());
  auto exported = std::make_shared<std::string>();
  auto weights = std::make_shared<std::string>();
  CLI::App* cmd = app.add_subcommand(
      "predict",
      "Run a checkpoint's model (or an exported libNAME.so) on a .npy batch and write its "
      "outputs as .npy");
  auto* ck = cmd->add_option("--checkpoint", *checkpoint, "HDF5 checkpoint written by glia");
  auto* ex = cmd->add_option("--exported", *exported,
                             "libNAME.so written by glia export, instead of a checkpoint");
  ck->excludes(ex);
  cmd->add_option("--weights", *weights,
                  "With --exported: its weights file (default: NAME.weights beside it)")
      ->needs(ex);
  cmd->add_option("--input", *in,
                  ".npy batch of inputs, shaped and typed as the model's input; a model with "
                  "several inputs takes NAME=FILE for each")
      ->required()
      ->take_all();
  cmd->add_option("--output", *out,
                  ".npy file for the outputs (replaced if it exists); a model with several "
                  "outputs takes NAME=FILE for each to write")
      ->required()
      ->take_all();
  cmd->add_option("--backend", *backend,
                  "Backend that runs the model (default: the one the checkpoint was trained on, "
                  "else interp)");
  return {cmd, [=] {
            if (!exported->empty()) {
              check(in->size() == 1 && out->size() == 1,
                    "predict: an exported library takes one --input FILE and one --output FILE");
              return run_exported(*exported, *weights, in->front(), out->front());
            }
            check(!checkpoint->empty(), "predict: give --checkpoint or --exported");
            return run_predict(*cmd, *checkpoint, *in, *out, *backend);
          }};
}

Command add_summary_command(CLI::App& app) {
  auto checkpoint = std::make_shared<std::string>();
  auto model = std::make_shared<std::string>("mlp");
  CLI::App* cmd = app.add_subcommand(
      "summary", "Print the layer table of a checkpoint's model (or of a built-in model)");
  cmd->add_option("--checkpoint", *checkpoint,
                  "HDF5 checkpoint; also prints its position, settings and a parameter "
                  "fingerprint");
  cmd->add_option("--model", *model,
                  "Built-in model when there is no --checkpoint: mlp, cnn or lstm")
      ->check(CLI::IsMember({"mlp", "cnn", "lstm"}))
      ->capture_default_str();
  auto architecture = std::make_shared<std::string>();
  cmd->add_option("--architecture", *architecture,
                  "Also write the model's architecture as JSON to this file (what "
                  "`glia train --model-json` reads)");
  return {cmd, [=] { return run_summary(*checkpoint, *model, *architecture); }};
}

Command add_plot_command(CLI::App& app) {
  auto checkpoint = std::make_shared<std::string>();
  auto output = std::make_shared<std::string>();
  auto csv = std::make_shared<std::string>();
  CLI::App* cmd = app.add_subcommand(
      "plot", "Draw a checkpoint's training curves (loss and each metric per epoch) as an SVG");
  cmd->add_option("--checkpoint", *checkpoint, "HDF5 checkpoint written by glia")->required();
  cmd->add_option("--output", *output, "SVG file to write (replaced if it exists)")->required();
  cmd->add_option("--csv", *csv, "Also write the history as CSV, one row an epoch");
  return {cmd, [=] {
            Checkpoint c = load_checkpoint(*checkpoint);
            const History& h = c.loop.history;
            write_history_svg(*output, h, *checkpoint);
            if (!csv->empty()) write_history_csv(*csv, h);
            std::cout << "wrote " << *output << ": " << h.size() << " epoch"
                      << (h.size() == 1 ? "" : "s") << "\n";
            return 0;
          }};
}

}  // namespace glia::cli
