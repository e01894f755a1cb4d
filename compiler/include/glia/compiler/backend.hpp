// The Backend interface: a backend compiles a whole verified Graph into an Executable
// (so it can fuse across nodes) by realising the graph's lowered Program (lowering.hpp),
// and the Executable runs it on tensors.
//   auto exe = glia::backend("interp").compile(graph, {});
//   std::vector<glia::Tensor> outs = exe->run(inputs);
#pragma once

#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "glia/compiler/program.hpp"

namespace glia {

struct CompileOptions {
  bool verify = true;    // run glia::verify on the graph before compiling and after every pass
  bool optimize = true;  // run glia::optimize (passes.hpp) before the backend compiles
  // The cpu backend's settings (cpu_backend.hpp); other backends ignore them.
  struct Cpu {
    // Worker threads (OpenMP's pool, shared with oneDNN) while the executable is compiled
    // and run; 0: glia::cpu::set_threads's setting, or the calling thread's OpenMP count
    // where it was never called.
    int threads = 0;
    // How fused groups run: as C that the system's C compiler builds at compile time
    // (cached on disk, see cpu_backend.hpp), or on glia's tile executor. automatic:
    // compiled where a sweep has enough work to gain from it (and the tile executor where
    // no C compiler runs, with a warning); GLIA_CPU_FUSED=compiled|tile in the environment
    // overrides automatic.
    enum class Fused { automatic, compiled, tile } fused = Fused::automatic;
  } cpu;
  // The cuda backend's settings; other backends ignore them.
  struct Cuda {
    int device = 0;  // runs on Device::cuda(device)
    // Capture each run's kernels as a CUDA graph once its addresses repeat, and replay it
    // (GLIA_CUDA_GRAPHS=0 in the environment turns it off too).
    bool graphs = true;
  } cuda;
};

// A compiled graph. run() may be called from several threads at once: a backend that
// keeps scratch state (an arena) guards it itself.
class Executable {
 public:
  virtual ~Executable() = default;
  // Checks the inputs against the graph's parameters (count, dtype, shape) and returns
  // the graph's outputs as new tensors (or the inputs themselves, for outputs that are
  // parameters). Throws glia::Error on a mismatch.
  virtual std::vector<Tensor> run(std::span<const Tensor> inputs) const = 0;
  // run() over tensors held elsewhere, by address: the leaves of a jitted call's argument
  // trees, not copies of them (a copy costs an atomic count and a shape). The default
  // copies them and calls run().
  virtual std::vector<Tensor> run_refs(std::span<const Tensor* const> inputs) const;
  // Buffer donation: like run(), but the caller gives the inputs up. An input whose
  // storage nobody else holds (Tensor::unique_storage) may be overwritten and come back
  // as an output of the same type — a training step updates its parameters in place.
  // Inputs someone else still holds are never written. The default just runs.
  virtual std::vector<Tensor> run_donated(std::vector<Tensor>&& inputs) const {
    std::vector<Tensor> given = std::move(inputs);
    return run(given);
  }
  // What runs: the lowered program (kernel specs and placement) this executable realises.
  virtual const Program& program() const = 0;
  const MemoryPlan& memory_plan() const { return program().memory; }
  // Readable text: the backend, how it realises each kernel of the program, the memory
  // plan and the graph.
  virtual std::string describe() const = 0;
};

// glia::Error unless `inputs` match the graph's parameters in count, dtype and shape (the
// check every Executable::run makes; its message is built only on a mismatch).
void check_run_inputs(const Graph& graph, std::span<const Tensor> inputs);
void check_run_inputs(const Graph& graph, std::span<const Tensor* const> inputs);

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string_view name() const = 0;
  virtual bool supports(Op op) const = 0;
  // Why this backend cannot compile on this machine ("no CUDA device: ..."), or empty when
  // it can. compile() throws glia::Error with the same words; suites that run every
  // registered backend skip it with them.
  virtual std::string unavailable() const { return ""; }
  // The graph is not kept by reference: an Executable owns what it needs.
  virtual std::unique_ptr<Executable> compile(const Graph& graph,
                                              const CompileOptions& options) const = 0;
};

}  // namespace glia
