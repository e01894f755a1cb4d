// export_predict: a model's inference-mode predict function, specialised to fixed input
// shapes with its trained parameters bound as constants, lowered and written as one
// standalone C file with a C ABI (glia/compiler/aot.hpp), optionally built into
// libNAME.so with the system's C compiler.
//   glia::ExportResult r = glia::export_predict(model, state, {{"pixels", {glia::f32, {1, 784}}}},
//                                               {.name = "mnist", .output = "out"});
//   // out/mnist.h, out/mnist.c, out/Makefile, out/CMakeLists.txt, out/libmnist.so
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "glia/compiler/aot.hpp"
#include "glia/layers/build.hpp"

namespace glia {

struct ExportOptions {
  std::string name = "model";    // the C prefix (NAME_predict, ...), a C identifier
  bool weights_file = false;     // weights in NAME.weights, loaded by NAME_load_weights
  std::filesystem::path output;  // the folder to write; empty: write nothing
  bool build = true;             // build libNAME.so when output is set and a C compiler is found
  aot::BuildOptions build_options;
  std::string model;  // what NAME_info() calls the model; empty: its layers
};

struct ExportResult {
  aot::CSource source;
  Program program;  // what the C was written from
  std::vector<std::filesystem::path> files;
  std::optional<std::filesystem::path> library;  // libNAME.so, when built
  std::string build_note;                        // the build command, or why no library was built
};

// The model must have one input and give one f32 output (the ABI: one f32 array in, one
// out); `inputs` gives the input's type with its batch dimension fixed (an f32 input).
// glia::Error naming the layer for anything that cannot be exported (a layer computing
// in f16, a stochastic layer outside inference mode, a custom layer's op with no C kernel).
ExportResult export_predict(const Model& model, const ModelState& state, const InputTypes& inputs,
                            const ExportOptions& options = {});

}  // namespace glia
