// Internal: the pieces of a compiled `cpu` program. Lowerings claim nodes of the graph
// and turn them into kernels (a oneDNN primitive with its epilogue, a fused element-wise
// group, a reference kernel); the executable orders the kernels, plans one arena for the
// values they pass each other, and runs them.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "glia/core/graph.hpp"

namespace dnnl {
struct engine;
struct stream;
}  // namespace dnnl

namespace glia::detail::cpu {

// What a kernel keeps from run to run in one workspace (runs on different workspaces
// may be concurrent): e.g. oneDNN memory objects whose data handles it repoints.
struct KernelState {
  virtual ~KernelState() = default;
};

// What a kernel sees while it runs: every value of the graph by id — the inputs it reads
// are bound, and, for a kernel that writes into its outputs, each output already holds
// a tensor of the value's type (arena memory, a donated input or a reused output buffer;
// its contents are garbage, so the kernel writes every element).
struct RunContext {
  std::vector<Tensor>& values;
  dnnl::stream& stream;
  void* scratchpad;              // 64-byte aligned, at least the largest Kernel::scratchpad_bytes()
  KernelState* state = nullptr;  // this kernel's make_state() in this workspace
};

class Kernel {
 public:
  virtual ~Kernel() = default;
  virtual void run(RunContext& ctx) const = 0;
  // One line for describe(): "onednn matmul [128x784]·[784x128] + bias, relu".
  virtual std::string describe() const = 0;
  virtual std::size_t scratchpad_bytes() const { return 0; }
  // State made once per workspace and handed to run() in RunContext::state; null: none.
  virtual std::unique_ptr<KernelState> make_state() const { return nullptr; }
  // False: the kernel makes its outputs itself (ctx.values[out] = new tensor); such
  // values live outside the arena.
  virtual bool writes_into_outputs() const { return true; }
  // Whether `output` may occupy the storage of `input` (which this kernel reads and no
  // later kernel does): true only where every element of the input is read before the
  // same element of the output is written, as in element-wise code.
  virtual bool in_place_ok(ValueId /*input*/, ValueId /*output*/) const { return false; }

  std::vector<ValueId> inputs;   // values of the graph it reads (computed elsewhere)
  std::vector<ValueId> outputs;  // values it writes that something outside it reads
  std::vector<ValueId> covered;  // every node it computes, outputs included
};

// Sets the calling thread's OpenMP thread count (oneDNN's runtime and the fused kernels'
// pool) for the scope's lifetime; 0 leaves it. Small primitives run on one thread: a
// parallel region costs more than they do.
class ThreadScope {
 public:
  explicit ThreadScope(int threads);
  ~ThreadScope();
  ThreadScope(const ThreadScope&) = delete;
  ThreadScope& operator=(const ThreadScope&) = delete;

 private:
  int previous_ = 0;
};
// Flushes denormal floats to zero (FTZ and DAZ in the MXCSR) on the calling thread for
// the scope's lifetime, as TensorFlow's CPU runtime does: an optimizer's moments decay
// into the denormal range, where every multiply takes a ~100-cycle microcode assist.
// Results differ from the interpreter's only below 1.2e-38 (f32).
class FlushDenormals {
 public:
  FlushDenormals();
  ~FlushDenormals();
  FlushDenormals(const FlushDenormals&) = delete;
  FlushDenormals& operator=(const FlushDenormals&) = delete;

 private:
  unsigned saved_ = 0;
};

// Below this many floating-point operations a primitive runs on one thread.
inline constexpr double kSingleThreadFlops = 1 << 18;

// The state of lowering one graph: which node each kernel claimed, and how many readers
// each value has (a graph output counts as one more).
class Lowering {
 public:
  Lowering(const Graph& graph, const dnnl::engine& engine);
  const Graph& graph() const { return graph_; }
  const dnnl::engine& engine() const { return engine_; }
  const Node& node(ValueId id) const { return graph_.nodes()[static_cast<std::size_t>(id)]; }
  bool claimed(ValueId id) const { return claimed_[static_cast<std::size_t>(id)]; }
  // Readers of a value, each reading node counted once, plus one if it is a graph output.
  int uses(ValueId id) const { return uses_[static_cast<std::size_t>(id)]; }
  // The nodes that read `id`, in graph order (each once).
  const std::vector<ValueId>& readers(ValueId id) const {
    return readers_[static_cast<std::size_t>(id)];
  }
  bool is_output(ValueId id) const { return is_output_[static_cast<std::size_t>(id)]; }
  // Takes the kernel and claims its covered nodes (glia::Error if one is claimed twice).
  void add(std::unique_ptr<Kernel> kernel);
  std::vector<std::unique_ptr<Kernel>> take_kernels() { return std::move(kernels_); }

 private:
  const Graph& graph_;
  const dnnl::engine& engine_;
  std::vector<bool> claimed_, is_output_;
  std::vector<int> uses_;
  std::vector<std::vector<ValueId>> readers_;
  std::vector<std::unique_ptr<Kernel>> kernels_;
};

// The lowerings, run in this order; each claims only unclaimed nodes.
void lower_onednn(Lowering& lowering);  // conv, pooling, matmul (onednn_lowering.cpp)
void lower_fused(Lowering& lowering);   // fused element-wise/reduction groups (fused_kernel.cpp)
void lower_direct(Lowering& lowering);  // window_sum, gather, scatter_add, argmax/min, pad, concat
// pad and concatenate (direct_layout.cpp), called by lower_direct.
void lower_direct_layout(Lowering& lowering);
void lower_reference(Lowering& lowering);  // every node left but parameters and constants

// The kernels in an order that runs every producer before its readers (earliest graph
// node first); glia::Error naming the kernels when they wait on each other in a cycle.
std::vector<std::unique_ptr<Kernel>> schedule(const Graph& graph,
                                              std::vector<std::unique_ptr<Kernel>> kernels);
// "2 (OpenMP, shared with oneDNN)": the threads a program runs on, for describe().
std::string threads_text(int threads);
// GLIA_CPU_PROFILE's report: each kernel's share of the time, slowest first.
std::string profile_text(const std::string& name,
                         const std::vector<std::unique_ptr<Kernel>>& kernels,
                         const std::vector<std::int64_t>& nanoseconds);

}  // namespace glia::detail::cpu
