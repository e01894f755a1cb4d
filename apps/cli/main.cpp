// The `glia` command-line tool: parses the command line with CLI11 and runs the
// chosen subcommand. glia::Error from the library becomes a message and exit code 1.
#include <CLI/CLI.hpp>
#include <exception>
#include <iostream>
#include <vector>

#include "commands.hpp"
#include "glia/glia.hpp"

int main(int argc, char** argv) {
  CLI::App app{
      "glia: a C++20 neural-network framework (traced tensor graphs, autodiff,\n"
      "compiled backends). Run `glia <command> --help` for a command's flags.",
      "glia"};
  app.set_version_flag("--version", GLIA_VERSION);
  app.require_subcommand(0, 1);

  std::vector<glia::cli::Command> commands{
      glia::cli::add_demo_command(app),    glia::cli::add_train_command(app),
      glia::cli::add_eval_command(app),    glia::cli::add_predict_command(app),
      glia::cli::add_summary_command(app), glia::cli::add_bench_command(app),
      glia::cli::add_export_command(app),  glia::cli::add_plot_command(app)};

  CLI11_PARSE(app, argc, argv);
  try {
    for (const glia::cli::Command& c : commands)
      if (c.app->parsed()) return c.run();
  } catch (const glia::Error& e) {
    std::cerr << "glia: error: " << e.what() << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "glia: unexpected error: " << e.what() << "\n";
    return 1;
  }
  // No command: say what there is, and fail like any other incomplete command line.
  std::cerr << app.help();
  return 1;
}
