// The `cpu` backend: compiling lowers the graph into a Program (glia/compiler/lowering.hpp)
// for a target that realises each spec it accepts — oneDNN primitives with post-ops, glia's
// small matmul, the tile executor, direct kernels — and keeps those realisations. Running
// binds where every value lives (the arena slices of the program's placement, the inputs,
// the output buffers: a donated input's storage, or one of two buffers per output used in
// turn) and runs the kernels over those raw pointers.
// Threads: oneDNN's CPU runtime here is OpenMP (Debian's libdnnl, libgomp), and the fused
// kernels use the same pool; CompileOptions::cpu.threads sets the OpenMP thread count of
// the calling thread while a program is compiled and while it runs (0: as it is).
#include "backends/cpu/cpu_backend.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <mutex>

#include <dnnl.hpp>

#include "backends/cpu/cpu_target.hpp"
#include "backends/cpu/native_module.hpp"
#include "backends/cpu/spin_team.hpp"
#include "src/placed_run.hpp"

namespace glia::detail {

namespace {

using cpu::CpuKernel;
using cpu::ThreadScope;

// Per concurrent run: the arena, the value table, the scratchpad, the output buffers and
// the kernels' states.
struct Workspace {
  Tensor arena, scratchpad;
  std::vector<std::byte*> values;                         // by value id
  RunBinding binding;                                     // this run's inputs and outputs
  std::vector<std::unique_ptr<cpu::KernelState>> states;  // by kernel position
  dnnl::stream stream;  // made once: creating one per run costs more than a tiny kernel
};

class CpuExecutable final : public PlacedExecutable {
 public:
  CpuExecutable(const Graph& graph, const CompileOptions::Cpu& options, const dnnl::engine& engine)
      : engine_(engine), threads_(options.threads) {
    ThreadScope scope(threads_);  // oneDNN picks its kernels for the thread count it sees
    cpu::CpuTarget target(engine_);
    program_ = lower(graph, target);
    for (const Kernel& k : program_.kernels) {
      realised_.push_back(target.take(program_.graph, k));
      scratchpad_bytes_ = std::max(scratchpad_bytes_, realised_.back()->scratchpad_bytes());
    }
    compile_fused(graph.name(), options.fused);
    if (std::none_of(realised_.begin(), realised_.end(),
                     [](const auto& k) { return k->uses_openmp(); }))
      team_ = cpu::SpinTeam::instance();
    // Which collectives' outputs each kernel reads: it waits for them before it runs.
    std::vector<bool> collective(static_cast<std::size_t>(program_.graph.size()), false);
    waits_.resize(program_.kernels.size());
    for (std::size_t k = 0; k < program_.kernels.size(); ++k) {
      const Kernel& kernel = program_.kernels[k];
      for (ValueId in : kernel.inputs)
        if (collective[static_cast<std::size_t>(in)]) waits_[k].push_back(in);
      if (std::holds_alternative<CollectiveSpec>(kernel.spec))
        for (ValueId out : kernel.outputs) collective[static_cast<std::size_t>(out)] = true;
    }
    // A collective whose result the next kernel reads runs blocking: nothing to overlap.
    blocking_.assign(program_.kernels.size(), false);
    for (std::size_t k = 0; k + 1 < program_.kernels.size(); ++k)
      for (ValueId out : program_.kernels[k].outputs)
        blocking_[k] =
            blocking_[k] || (collective[static_cast<std::size_t>(out)] &&
                             std::count(waits_[k + 1].begin(), waits_[k + 1].end(), out));
    if (const char* p = std::getenv("GLIA_CPU_PROFILE"); p != nullptr && *p != '\0' && *p != '0')
      profile_ = std::make_unique<Profile>(realised_.size());
  }

  // With GLIA_CPU_PROFILE=1 in the environment, each kernel's time over every run is
  // printed to stderr when the executable goes away, slowest first.
  ~CpuExecutable() override {
    if (!profile_) return;
    std::vector<std::int64_t> ns;
    for (const auto& t : profile_->nanoseconds) ns.push_back(t.load());
    std::vector<std::string> texts;
    for (const auto& k : realised_) texts.push_back(k->describe());
    std::cerr << cpu::profile_text(program_, texts, ns, profile_->runs.load());
  }

  const Program& program() const override { return program_; }

  std::string describe() const override {
    std::lock_guard lock(tier_mutex_);  // a tier-up changes how the fused kernels run
    return cat("cpu executable; threads: ", cpu::threads_text(threads_),
               team_ != nullptr ? "; parallel loops on glia's spinning team" : "", "\n",
               program_.describe([&](std::size_t k) { return realised_[k]->describe(); }));
  }

 private:
  std::vector<Tensor> execute(std::span<const Tensor* const> inputs,
                              std::vector<Tensor>* donor) const override;
  std::unique_ptr<Workspace> make_workspace() const;
  void compile_fused(const std::string& name, CompileOptions::Cpu::Fused fused);
  void count_run() const;
  void tier_up() const;

  dnnl::engine engine_;
  int threads_ = 0;
  cpu::SpinTeam* team_ = nullptr;  // where no kernel enters OpenMP (spin_team.hpp)
  Program program_;
  std::vector<std::unique_ptr<CpuKernel>> realised_;  // by kernel position
  std::vector<std::vector<ValueId>> waits_;           // collective outputs kernel k reads
  std::vector<bool> blocking_;                        // collectives the next kernel reads
  std::size_t scratchpad_bytes_ = 0;
  struct Profile {
    explicit Profile(std::size_t n) : nanoseconds(n) {}
    std::vector<std::atomic<std::int64_t>> nanoseconds;
    std::atomic<std::int64_t> runs{0};
  };
  std::unique_ptr<Profile> profile_;
  WorkspacePool<Workspace> pool_;
  // Tier-up: in automatic mode, an executable whose sweeps were all too small to pay for a
  // compiler run when it was compiled builds them once it has run kTierUpRuns times (a
  // predict function called in a loop), and its fused kernels take them while other runs
  // go on. The count is approximate under concurrent runs (relaxed, no read-modify-write
  // a run), but reaches kTierUpRuns: each count stored is one more than one stored before.
  mutable std::atomic<bool> tier_up_pending_{false};
  mutable std::atomic<std::int64_t> runs_{0};
  mutable std::mutex tier_mutex_;
};

// Runs after which a small-swept executable compiles its sweeps (~0.1-0.3 s once; the
// library is cached on disk): the tile executor's set-up costs ~50-100 ns a small sweep
// more than the compiled loop, so 1,000 runs of a tiny predict lose about what one
// compiler run costs in a million.
constexpr std::int64_t kTierUpRuns = 1000;

void warn_tile_fallback(const std::string& error) {
  static std::once_flag warned;
  std::call_once(warned, [&] {
    std::cerr << "glia: cpu: fused kernels run on the tile executor (set GLIA_CPU_FUSED=tile to "
                 "silence this): "
              << error << "\n";
  });
}

using Fused = CompileOptions::Cpu::Fused;

Fused fused_mode(Fused option, const std::string& name) {
  if (option != Fused::automatic) return option;
  const char* env = std::getenv("GLIA_CPU_FUSED");
  const std::string v = env != nullptr ? env : "";
  if (v.empty() || v == "auto" || v == "automatic") return Fused::automatic;
  if (v == "compiled") return Fused::compiled;
  if (v == "tile") return Fused::tile;
  throw Error(cat("compile '", name,
                  "' on cpu: GLIA_CPU_FUSED must be auto, compiled or tile, got '", v, "'"));
}

// The fused sweeps worth compiling, as one module for the executable. Where that fails in
// automatic mode the tile executor runs them (said once per process on stderr); asked for
// explicitly, the failure is an error.
void CpuExecutable::compile_fused(const std::string& name, Fused option) {
  const Fused mode = fused_mode(option, name);
  if (mode == Fused::tile) return;
  cpu::NativeModule module;
  using Offer = cpu::CpuKernel::Offer;
  for (const auto& k : realised_)
    k->offer(program_, mode == Fused::compiled ? Offer::every : Offer::large, module);
  if (module.empty()) {
    tier_up_pending_.store(mode == Fused::automatic, std::memory_order_relaxed);
    return;
  }
  // The compiler runs anyway: the small sweeps join the same library at little cost
  // (compiled loops beat the tile executor at every size: softmax over 1,000 f32 runs its
  // max sweep compiled too).
  if (mode != Fused::compiled)
    for (const auto& k : realised_) k->offer(program_, Offer::small, module);
  std::string error;
  if (module.build(error)) {
    for (const auto& k : realised_) k->adopt(module);
    return;
  }
  check(mode != Fused::compiled, "compile '", name,
        "' on cpu: cannot compile its fused kernels: ", error);
  warn_tile_fallback(error);
}

void CpuExecutable::count_run() const {
  const std::int64_t runs = runs_.load(std::memory_order_relaxed) + 1;
  runs_.store(runs, std::memory_order_relaxed);
  if (runs >= kTierUpRuns) tier_up();
}

// The small sweeps compiled into a module of their own, taken by the fused kernels. One
// thread builds it; runs on other threads meanwhile go on with the tile executor.
void CpuExecutable::tier_up() const {
  std::unique_lock lock(tier_mutex_, std::try_to_lock);
  if (!lock.owns_lock() || !tier_up_pending_.load(std::memory_order_relaxed)) return;
  tier_up_pending_.store(false, std::memory_order_relaxed);
  // A run that went well does not fail for this: where the module cannot be made, the
  // tile executor goes on (said once per process, as compile_fused says it).
  try {
    cpu::NativeModule module;
    for (const auto& k : realised_) k->offer(program_, cpu::CpuKernel::Offer::small, module);
    if (module.empty()) return;
    std::string error;
    if (!module.build(error)) return warn_tile_fallback(error);
    for (const auto& k : realised_) k->adopt(module);
  } catch (const std::exception& e) {
    warn_tile_fallback(e.what());
  }
}

std::unique_ptr<Workspace> CpuExecutable::make_workspace() const {
  const Graph& g = program_.graph;
  auto ws = std::make_unique<Workspace>();
  ws->arena = Tensor::uninitialized(DType::u8,
                                    Shape{std::max<std::int64_t>(program_.memory.arena_bytes, 64)});
  auto* base = static_cast<std::byte*>(ws->arena.raw_data());
  if (scratchpad_bytes_ > 0)
    ws->scratchpad = Tensor::uninitialized(DType::u8, Shape{std::int64_t(scratchpad_bytes_)});
  // Arena values and constants are where they are for good; inputs and outputs are bound
  // per run.
  ws->values.assign(static_cast<std::size_t>(g.size()), nullptr);
  for (std::size_t i = 0; i < ws->values.size(); ++i) {
    const Placement& p = program_.placement[i];
    if (p.kind == Placement::Kind::arena) ws->values[i] = base + p.offset;
    if (p.kind == Placement::Kind::constant)
      ws->values[i] = static_cast<std::byte*>(
          const_cast<void*>(std::get<ConstantAttrs>(g.nodes()[i].attrs).value.raw_data()));
  }
  ws->binding = RunBinding(program_, Device::host());
  ws->stream = dnnl::stream(engine_);
  ws->states.reserve(realised_.size());
  for (const auto& k : realised_) ws->states.push_back(k->make_state());
  return ws;
}

std::vector<Tensor> CpuExecutable::execute(std::span<const Tensor* const> inputs,
                                           std::vector<Tensor>* donor) const {
  if (tier_up_pending_.load(std::memory_order_relaxed)) count_run();
  const Graph& g = program_.graph;
  std::unique_ptr<Workspace> ws = pool_.take([&] { return make_workspace(); });
  std::byte** values = ws->values.data();
  RunBinding& bind = ws->binding;
  for (std::size_t i = 0; i < inputs.size(); ++i)
    values[static_cast<std::size_t>(g.parameters()[i])] =
        static_cast<std::byte*>(const_cast<void*>(bind.input(i, inputs, donor).raw_data()));
  for (std::size_t s = 0; s < bind.slots(); ++s)
    values[static_cast<std::size_t>(bind.slot_value(s))] =
        static_cast<std::byte*>(const_cast<void*>(bind.output(s, donor != nullptr).raw_data()));
  auto release = [&] {
    bind.release();
    pool_.give_back(std::move(ws));
  };
  ThreadScope scope(threads_);
  cpu::FlushDenormals flush;
  cpu::RunContext ctx{values, ws->stream,
                      ws->scratchpad.defined() ? ws->scratchpad.raw_data() : nullptr};
  // Collectives started and not yet awaited (their wait counts in their kernel's profile).
  std::vector<cpu::InFlight> in_flight;
  ctx.in_flight = &in_flight;
  ctx.team = team_;
  auto await = [&](std::size_t i) {
    auto t0 = std::chrono::steady_clock::now();
    in_flight[i].request->wait();
    if (profile_)
      profile_->nanoseconds[in_flight[i].kernel] +=
          std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() -
                                                               t0)
              .count();
    in_flight.erase(in_flight.begin() + static_cast<std::ptrdiff_t>(i));
  };
  std::vector<Tensor> outputs;
  try {
    for (std::size_t k = 0; k < realised_.size(); ++k) {
      for (ValueId v : waits_[k])
        for (std::size_t i = 0; i < in_flight.size(); ++i)
          if (in_flight[i].value == v) await(i--);
      ctx.state = ws->states[k].get();
      ctx.in_flight = blocking_[k] ? nullptr : &in_flight;
      const std::size_t started = in_flight.size();
      if (profile_) {
        auto t0 = std::chrono::steady_clock::now();
        realised_[k]->run(ctx);
        profile_->nanoseconds[k] += std::chrono::duration_cast<std::chrono::nanoseconds>(
                                        std::chrono::steady_clock::now() - t0)
                                        .count();
      } else {
        realised_[k]->run(ctx);
      }
      for (std::size_t i = started; i < in_flight.size(); ++i) in_flight[i].kernel = k;
      // MPI moves a non-blocking collective on only inside its calls.
      for (std::size_t i = 0; i < in_flight.size(); ++i)
        if (in_flight[i].kernel != k && in_flight[i].request->test()) await(i--);
    }
    while (!in_flight.empty()) await(0);
    if (profile_) ++profile_->runs;
    outputs = bind.outputs(inputs, donor != nullptr, [&](ValueId c) {
      return std::get<ConstantAttrs>(g.node(c).attrs).value;
    });
  } catch (...) {
    // No collective may still write into the workspace once it goes back to the pool.
    for (cpu::InFlight& f : in_flight) try {
        f.request->wait();
      } catch (...) {
      }
    release();
    throw;
  }
  release();
  return outputs;
}

class CpuBackend final : public Backend {
 public:
  std::string_view name() const override { return "cpu"; }
  // Every op runs: on oneDNN or a fused kernel where it can, else its reference kernel.
  bool supports(Op) const override { return true; }
  std::unique_ptr<Executable> compile(const Graph& graph,
                                      const CompileOptions& options) const override {
    check(options.cpu.threads >= 0, "compile '", graph.name(),
          "' on cpu: threads must be >= 0, got ", options.cpu.threads);
    if (options.verify) verify(graph);
    return std::make_unique<CpuExecutable>(graph, options.cpu, engine_);
  }

 private:
  dnnl::engine engine_{dnnl::engine::kind::cpu, 0};  // one for every executable
};

}  // namespace

std::unique_ptr<Backend> make_cpu_backend() { return std::make_unique<CpuBackend>(); }

}  // namespace glia::detail
