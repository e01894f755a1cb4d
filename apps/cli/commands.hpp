// The subcommands of the `glia` tool. Each add_*_command registers its flags on the
// CLI11 app and returns the function that runs it once the command line is parsed:
//   glia::cli::Command demo = glia::cli::add_demo_command(app);
#pragma once

#include <functional>

namespace CLI {
class App;
}

namespace glia::cli {

struct Command {
  CLI::App* app;             // the subcommand, to ask whether it was given
  std::function<int()> run;  // its exit code
};

// `glia demo`: traces a numerically stable softmax, prints its graph and runs it on
// the reference interpreter.
Command add_demo_command(CLI::App& app);
// `glia train`: trains the MNIST MLP or CNN (saving and resuming checkpoints), then
// reports test loss and accuracy.
Command add_train_command(CLI::App& app);
// `glia eval`: evaluates a checkpoint (or a freshly initialised model) on the MNIST test
// split.
Command add_eval_command(CLI::App& app);
// `glia bench`: benchmarks of glia's backends against LibTorch (apps/bench).
Command add_bench_command(CLI::App& app);
// `glia predict`: runs a checkpoint's model (or an exported library) on a .npy batch,
// writing the outputs as .npy.
Command add_predict_command(CLI::App& app);
// `glia export`: writes a checkpoint's model as a standalone C predictor and builds it.
Command add_export_command(CLI::App& app);
// `glia summary`: the layer table of a checkpoint's model, with where its run stands.
Command add_summary_command(CLI::App& app);
// `glia plot`: a checkpoint's training curves as an SVG (and its history as CSV).
Command add_plot_command(CLI::App& app);

}  // namespace glia::cli
