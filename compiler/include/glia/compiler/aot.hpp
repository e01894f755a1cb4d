// Ahead-of-time export: a lowered Program (program.hpp) written as one standalone C11
// file with a C ABI (NAME.h, NAME.c, optionally NAME.weights), built with the system's C
// compiler into libNAME.so, and loaded back into glia to run and compare with the JIT.
// layers' export_predict() drives it for a model; this level knows graphs only.
//   glia::Program p = glia::lower(graph, glia::aot::CTarget{});
//   glia::aot::CSource c = glia::aot::emit_c(p, {.name = "mnist"});
//   glia::aot::write_files(c, "out/");
//   glia::aot::Built b = glia::aot::build_library("out/", "mnist");
//   glia::aot::Library lib(b.library);
//   glia::Tensor y = lib.predict(x);
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "glia/compiler/lowering.hpp"

namespace glia::aot {

// The lowering target of exported C: which kernel specs the emitter writes. It declines
// random bits (predict never draws them), f16/bf16 values and the gradient-only forms
// (the kernel-gradient convolution, max-pool adjoints, scatter_add), which then stay on the
// reference kernel and make emit_c fail naming the op. (The input-gradient convolution is
// accepted: a transposed convolution layer computes it.)
class CTarget final : public LoweringTarget {
 public:
  std::string_view name() const override { return "c"; }
  bool accepts(const Graph& graph, const Kernel& kernel) const override;
  std::string fallback_reason(const Graph& graph, ValueId node) const override;
};

// The first kernel of `program` emit_c cannot write: a reference kernel other than a general
// f32 convolution or an f32/f64 dot_general (which it writes as plain loops); null if none.
const ReferenceSpec* unwritable(const Program& program);

struct CSourceOptions {
  std::string name;           // the C prefix: [A-Za-z_][A-Za-z0-9_]*
  bool weights_file = false;  // weights in NAME.weights, read by NAME_load_weights
  std::string model;          // what NAME_info() says the model is
  std::int64_t batch = 1;     // NAME_BATCH: the input's leading dimension
  // Constants of at least this many bytes are weights (in the file, when weights_file);
  // smaller ones stay in the source.
  std::int64_t weight_bytes = 64;
};

struct CSource {
  std::string name;
  std::string header, source;   // NAME.h, NAME.c
  std::string weights;          // NAME.weights' bytes (weights_file), else empty
  std::string makefile, cmake;  // Makefile and CMakeLists.txt building libNAME.so
  TensorType input, output;
  std::int64_t workspace_bytes = 0;  // NAME_WORKSPACE_SIZE
  std::int64_t weights_bytes = 0;    // the weights' bytes (file or source)
  std::uint64_t weights_hash = 0;    // FNV-1a 64 of those bytes
  std::string info;                  // NAME_info()'s text
};

// C for `program`, whose graph takes one f32 parameter and returns one f32 value (the
// ABI's input and output). glia::Error when a kernel is on the reference kernel (an op
// the exporter cannot write) or the signature does not fit the ABI.
CSource emit_c(const Program& program, const CSourceOptions& options);

// Writes NAME.h, NAME.c, the weights file (if any), Makefile and CMakeLists.txt into
// `dir` (created); returns the paths written.
std::vector<std::filesystem::path> write_files(const CSource& source,
                                               const std::filesystem::path& dir);

// The C compiler to build with: $CC, else cc, gcc or clang on PATH; empty when none.
std::string find_c_compiler();

struct BuildOptions {
  std::string compiler;  // empty: find_c_compiler()
  // Flags besides -shared -fPIC; -march=native tunes for (and ties to) this CPU's ISA.
  std::string flags = "-O3 -march=native -std=c11";
  std::string libraries = "-lm";  // after the source file
};
struct Built {
  std::filesystem::path library;  // dir/libNAME.so
  std::string command;            // the command that built it
};
// Compiles dir/NAME.c into dir/libNAME.so; glia::Error with the compiler's output when
// no compiler is found or it fails.
Built build_library(const std::filesystem::path& dir, const std::string& name,
                    const BuildOptions& options = {});

// An exported library loaded back (dlopen): runs it on tensors. Its name is taken from
// the file name (libNAME.so), its shapes from NAME_info().
class Library {
 public:
  explicit Library(const std::filesystem::path& path);
  ~Library();
  Library(const Library&) = delete;
  Library& operator=(const Library&) = delete;

  const std::string& name() const { return name_; }
  const std::string& info() const { return info_; }
  const TensorType& input() const { return input_; }    // of one call (NAME_BATCH rows)
  const TensorType& output() const { return output_; }  // of one call
  std::int64_t batch() const { return batch_; }
  std::int64_t workspace_bytes() const { return workspace_bytes_; }
  bool has_weights_file() const { return load_weights_ != nullptr; }

  // NAME_load_weights: glia::Error when it returns non-zero.
  void load_weights(const std::filesystem::path& path) const;
  // Runs NAME_predict over x, whose shape is the input's with any number of rows (a
  // multiple of NAME_BATCH or not: the last call's rows are padded with zeros and its
  // padding dropped); returns the outputs with that many rows. `workspace`: use
  // NAME_predict_ws with a workspace of this object's own (thread-safe across objects).
  Tensor predict(const Tensor& x) const;
  // One NAME_predict_ws call on raw buffers (benchmarks).
  int call(const float* input, float* output, void* workspace) const;
  int call(const float* input, float* output) const;

 private:
  void* handle_ = nullptr;
  std::string name_, info_;
  TensorType input_, output_;
  std::int64_t batch_ = 1, workspace_bytes_ = 0;
  int (*predict_)(const float*, float*) = nullptr;
  int (*predict_ws_)(const float*, float*, void*) = nullptr;
  int (*load_weights_)(const char*) = nullptr;
};

// The C text of the runtime pasted into exported sources (compiler/aot/runtime.h).
std::string_view runtime_source();

}  // namespace glia::aot
