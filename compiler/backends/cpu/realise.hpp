// Internal: the `cpu` backend's realisation of a Program (glia/compiler/program.hpp). Each
// kernel spec becomes a CpuKernel — a oneDNN primitive with post-ops for its epilogue,
// glia's small matmul, the tile executor for a fused group, a direct or reference kernel —
// that runs over raw pointers from the placement.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "glia/compiler/program.hpp"
#include "glia/core/collective.hpp"

namespace dnnl {
struct engine;
struct stream;
}  // namespace dnnl

namespace glia::detail::cpu {

class NativeModule;
class SpinTeam;

// What a kernel keeps from run to run in one workspace (runs on different workspaces may
// be concurrent): e.g. oneDNN memory objects whose data handles it repoints.
struct KernelState {
  virtual ~KernelState() = default;
};

// What a kernel sees while it runs: where every value lives (by value id: arena slices, the
// run's inputs, output buffers, constants). Its outputs' storage is garbage: it writes
// every element.
// A collective a kernel started and the value it writes: kernels reading that value wait.
struct InFlight {
  std::unique_ptr<CollectiveRequest> request;
  ValueId value;
  std::size_t kernel = 0;  // the executable's index of the kernel that started it
};

struct RunContext {
  std::byte* const* values;
  dnnl::stream& stream;
  void* scratchpad;              // 64-byte aligned, at least the largest scratchpad_bytes()
  KernelState* state = nullptr;  // this kernel's make_state() in this workspace
  // Where a collective kernel leaves its request; null: the kernel waits for it itself.
  std::vector<InFlight>* in_flight = nullptr;
  // glia's helper threads, where the executable's kernels all stay off OpenMP; null: the
  // kernels' parallel loops run in OpenMP regions (spin_team.hpp).
  SpinTeam* team = nullptr;

  template <class T = std::byte>
  T* at(ValueId id) const {
    return reinterpret_cast<T*>(values[static_cast<std::size_t>(id)]);
  }
};

class CpuKernel {
 public:
  virtual ~CpuKernel() = default;
  virtual void run(RunContext& ctx) const = 0;
  // How it runs, for describe(): "onednn (brg:avx512_core)", "glia small matmul".
  virtual std::string describe() const = 0;
  virtual std::size_t scratchpad_bytes() const { return 0; }
  // State made once per workspace and handed to run() in RunContext::state; null: none.
  virtual std::unique_ptr<KernelState> make_state() const { return nullptr; }
  // Fused kernels: add the C functions of the sweeps worth compiling to the executable's
  // module, and take them once it is built. `large`: those with enough work to pay for a
  // compiler run; `small`: then the rest, once the compiler runs anyway; `every`: every
  // sweep with a C form, in one go.
  enum class Offer { large, small, every };
  virtual void offer(const Program& /*program*/, Offer /*which*/, NativeModule& /*module*/) {}
  virtual void adopt(const NativeModule& /*module*/) {}
  // False where its parallel loops all take RunContext::team (run_parts) and it never
  // enters OpenMP otherwise (oneDNN's primitives do).
  virtual bool uses_openmp() const { return true; }
};

// Each realisation: the kernel for the spec, or null where this backend has none for it
// (a layout or post-op oneDNN does not take, a dtype it does not run): the target then
// declines the spec and the lowering moves on.
std::unique_ptr<CpuKernel> realise_matmul(const Graph& graph, const Kernel& kernel,
                                          const dnnl::engine& engine);
std::unique_ptr<CpuKernel> realise_convolution(const Kernel& kernel, const dnnl::engine& engine);
// glia's Winograd F(2x2, 3x3) (winograd_conv.cpp), where it fits: AVX2 machines, 3x3
// unit-stride kernels, channels-last activations; null elsewhere. realise_convolution
// tries it first.
std::unique_ptr<CpuKernel> realise_winograd(const ConvSpec& spec);
std::unique_ptr<CpuKernel> realise_pooling(const Kernel& kernel, const dnnl::engine& engine);
// A convolution fused with its max pooling (conv_pool.cpp), where its loops take it: a
// few taps a window, output channels in whole vectors; GLIA_CPU_CONV_POOL=0 in the
// environment at compile time declines every one (the unfused kernels run).
std::unique_ptr<CpuKernel> realise_conv_pool(const Kernel& kernel);

// The widest vector instructions glia's own loops use (the tile executor's, pooling's
// adjoint): what the CPU has, capped by GLIA_CPU_ISA=avx2 or baseline in the environment,
// so that the narrower loops can be run and tested on a wider machine.
enum class VectorIsa { baseline, avx2, avx512 };
VectorIsa vector_isa();
// The one of three per-ISA variants that vector_isa() picks.
template <class T>
T by_vector_isa(T avx512, T avx2, T baseline) {
  switch (vector_isa()) {
    case VectorIsa::avx512:
      return avx512;
    case VectorIsa::avx2:
      return avx2;
    default:
      return baseline;
  }
}
std::unique_ptr<CpuKernel> realise_direct(const Graph& graph, const Kernel& kernel);
// pad and concatenate (direct_layout.cpp), called by realise_direct.
std::unique_ptr<CpuKernel> realise_direct_layout(const Graph& graph, const Kernel& kernel);
std::unique_ptr<CpuKernel> realise_fused(const Kernel& kernel);
// A fused group that is exactly softmax over short rows (softmax_rows.cpp), or null.
std::unique_ptr<CpuKernel> realise_softmax_rows(const Kernel& kernel);
std::unique_ptr<CpuKernel> realise_reference(const Graph& graph, const Kernel& kernel);
std::unique_ptr<CpuKernel> realise_scan(const Graph& graph, const Kernel& kernel);
std::unique_ptr<CpuKernel> realise_collective(const Kernel& kernel);

// The kernel for any spec.
std::unique_ptr<CpuKernel> realise(const Graph& graph, const Kernel& kernel,
                                   const dnnl::engine& engine);

// Sets the calling thread's OpenMP thread count (oneDNN's runtime and the fused kernels'
// pool) for the scope's lifetime; 0: glia::cpu::set_threads's, or where it was never
// called, leaves it. Small primitives run on one thread: a parallel region costs more
// than they do.
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

// "2 (OpenMP, shared with oneDNN)": the threads a program runs on, for describe().
std::string threads_text(int threads);
// GLIA_CPU_PROFILE's report: each kernel's share of the time and its microseconds a run
// (over `runs` runs), slowest first.
std::string profile_text(const Program& program, const std::vector<std::string>& realised,
                         const std::vector<std::int64_t>& nanoseconds, std::int64_t runs);

}  // namespace glia::detail::cpu
