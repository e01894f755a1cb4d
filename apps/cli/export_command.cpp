// `glia export`: a checkpoint's model as a standalone C predictor (NAME.h, NAME.c, the
// weights file if asked, a Makefile and CMakeLists.txt), built into libNAME.so with the
// system's C compiler when there is one.
#include <CLI/CLI.hpp>
#include <iostream>

#include "commands.hpp"
#include "glia/glia.hpp"
#include "training.hpp"

namespace glia::cli {

namespace {

struct ExportFlags {
  std::string checkpoint, name, output;
  std::int64_t batch = 1;
  bool weights_file = false, no_build = false;
  std::string cc, cflags = "-O3 -march=native -std=c11";
};

int run_export(const ExportFlags& f) {
  Checkpoint c = load_checkpoint(f.checkpoint);
  Model model = c.model();
  check_checkpoint(c, model);
  InputTypes types = default_input_types(model, f.batch);
  ExportOptions o;
  o.name = f.name;
  o.weights_file = f.weights_file;
  o.output = f.output;
  o.build = !f.no_build;
  o.build_options.compiler = f.cc;
  o.build_options.flags = f.cflags;
  std::string layers;
  for (const ResolvedLayer& r : resolve_layers(model))
    layers += (layers.empty() ? "" : " -> ") + r.name + " (" + r.node->type + ")";
  o.model = layers + ", from " + std::filesystem::path(f.checkpoint).filename().string();
  ExportResult r = export_predict(model, c.loop.train.model, types, o);
  std::cout << "exported " << f.name << ": " << r.source.input.to_string() << " -> "
            << r.source.output.to_string() << ", " << r.program.kernels.size() << " kernels, "
            << r.source.weights_bytes << " bytes of weights"
            << (f.weights_file ? " in " + f.name + ".weights" : std::string(" in the source"))
            << ", workspace " << r.source.workspace_bytes << " bytes\n";
  for (const auto& p : r.files) std::cout << "  wrote " << p.string() << "\n";
  if (r.library) {
    std::cout << "  built " << r.library->string() << " (" << r.build_note << ")\n";
  } else {
    std::cout << "  " << r.build_note << "; build it with make -C " << f.output << "\n";
  }
  return 0;
}

}  // namespace

Command add_export_command(CLI::App& app) {
  auto f = std::make_shared<ExportFlags>();
  CLI::App* cmd = app.add_subcommand(
      "export", "Write a checkpoint's model as a standalone C predictor and build libNAME.so");
  cmd->add_option("--checkpoint", f->checkpoint, "HDF5 checkpoint written by glia")->required();
  cmd->add_option("--name", f->name, "C prefix of the ABI (NAME_predict, ...): a C identifier")
      ->required();
  cmd->add_option("--batch", f->batch, "Rows of one NAME_predict call")
      ->check(CLI::Range(std::int64_t(1), std::int64_t(1) << 20))
      ->capture_default_str();
  cmd->add_option("--output", f->output, "Folder for the generated files (created)")->required();
  cmd->add_flag("--weights-file", f->weights_file,
                "Weights in NAME.weights (loaded and hash-checked by NAME_load_weights) "
                "instead of the source");
  cmd->add_flag("--no-build", f->no_build, "Write the files only; do not build libNAME.so");
  cmd->add_option("--cc", f->cc, "C compiler (default: $CC, else cc, gcc or clang)");
  cmd->add_option("--cflags", f->cflags, "Compiler flags besides -shared -fPIC")
      ->capture_default_str();
  return {cmd, [=] { return run_export(*f); }};
}

}  // namespace glia::cli
