// The `cpu` backend: compiling lowers the graph into kernels — oneDNN primitives, fused
// element-wise groups, reference kernels for the rest (program.hpp) — orders them, and
// plans one arena for the values they pass each other. Running binds the inputs, gives
// each kernel its output buffers (arena slices; a donated input for an output of its
// type; last run's output buffer when the caller let go of it) and runs the kernels.
// Threads: oneDNN's CPU runtime here is OpenMP (Debian's libdnnl, libgomp), and the fused
// kernels use the same pool; CompileOptions::threads sets the OpenMP thread count of the
// calling thread while a program is compiled and while it runs (0: OMP_NUM_THREADS).
#include "backends/cpu/cpu_backend.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <mutex>
#include <sstream>

#include <dnnl.hpp>

#include "backends/cpu/program.hpp"

namespace glia::detail {

namespace {

using cpu::Kernel;
using cpu::ThreadScope;

std::int64_t value_bytes(const TensorType& t) {
  return t.shape.numel() * static_cast<std::int64_t>(dtype_size(t.dtype));
}

// Where an output of a kernel lives while the program runs.
struct Placement {
  enum Kind { none, arena, escaping, self } kind = none;
  std::int64_t offset = 0;  // arena
  int output_slot = -1;     // escaping: the index of its reusable output buffer
  int donor = -1;           // escaping: the input whose storage it may take
};

// Per concurrent run: the arena (with a tensor per arena value, made once), the
// scratchpad, the value table and last run's output buffers.
struct Workspace {
  std::shared_ptr<Tensor> arena;
  std::vector<Tensor> arena_values;  // by value id (undefined where not in the arena)
  Tensor scratchpad;
  std::vector<Tensor> values;
  // By value id: a tensor of the value's type over arena bytes, bound where a run leaves
  // an input or a kernel's own output, so the run drops its reference while the slot
  // keeps its shape's buffer (binding the next run's tensor then allocates nothing).
  std::vector<Tensor> idle;
  std::vector<Tensor> output_buffers;                     // two per output slot
  std::vector<unsigned char> output_turn;                 // which of the two to replace next
  std::vector<unsigned char> donated;                     // by input: this run may write over it
  std::vector<std::unique_ptr<cpu::KernelState>> states;  // by kernel position
  dnnl::stream stream;  // made once: creating one per run costs more than a tiny kernel
};

class CpuExecutable final : public Executable {
 public:
  CpuExecutable(const Graph& graph, int threads, const dnnl::engine& engine)
      : graph_(graph), engine_(engine), threads_(threads) {
    ThreadScope scope(threads_);  // oneDNN picks its kernels for the thread count it sees
    cpu::Lowering lowering(graph_, engine_);
    cpu::lower_onednn(lowering);
    cpu::lower_fused(lowering);
    cpu::lower_direct(lowering);
    cpu::lower_reference(lowering);
    kernels_ = cpu::schedule(graph_, lowering.take_kernels());
    if (const char* p = std::getenv("GLIA_CPU_PROFILE"); p != nullptr && *p != '\0' && *p != '0')
      profile_ = std::make_unique<Profile>(kernels_.size());
    for (const auto& k : kernels_)
      scratchpad_bytes_ = std::max(scratchpad_bytes_, k->scratchpad_bytes());
    plan();
  }

  // With GLIA_CPU_PROFILE=1 in the environment, each kernel's time over every run is
  // printed to stderr when the executable goes away, slowest first.
  ~CpuExecutable() override {
    if (!profile_) return;
    std::vector<std::int64_t> ns;
    for (const auto& t : profile_->nanoseconds) ns.push_back(t.load());
    std::cerr << cpu::profile_text(graph_.name(), kernels_, ns);
  }

  std::vector<Tensor> run(std::span<const Tensor> inputs) const override {
    check_inputs(inputs);
    return execute(inputs, nullptr);
  }

  std::vector<Tensor> run_donated(std::vector<Tensor>&& inputs) const override {
    check_inputs(inputs);
    std::vector<Tensor> bound = std::move(inputs);
    return execute(bound, &bound);
  }

  const MemoryPlan& memory_plan() const override { return plan_; }

  std::string describe() const override;

 private:
  void plan();
  // Binds `inputs` (moved from `donated`'s tensors when it is given: the donating run)
  // and runs the kernels.
  std::vector<Tensor> execute(std::span<const Tensor> inputs, std::vector<Tensor>* donated) const;
  std::unique_ptr<Workspace> make_workspace() const;
  static const Tensor& output_buffer(Workspace& ws, int slot, const TensorType& type);

  void check_inputs(std::span<const Tensor> inputs) const {
    check(inputs.size() == graph_.parameters().size(), "run: graph '", graph_.name(), "' takes ",
          graph_.parameters().size(), " input(s), got ", inputs.size());
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      const TensorType& want = graph_.type(graph_.parameters()[i]);
      check(inputs[i].defined(), "run: graph '", graph_.name(), "' input ", i, " is undefined");
      // The message's text only on a mismatch: building it costs more than a tiny run.
      if (!(inputs[i].type() == want))
        throw Error(cat("run: graph '", graph_.name(), "' input ", i, " expected ",
                        want.to_string(), ", got ", inputs[i].type().to_string()));
    }
  }

  Graph graph_;
  dnnl::engine engine_;
  int threads_ = 0;
  std::vector<std::unique_ptr<Kernel>> kernels_;
  std::vector<Placement> placement_;                 // by value id
  std::vector<std::vector<ValueId>> release_after_;  // by kernel position
  std::vector<ValueId> transient_;  // values bound per run: inputs and non-arena outputs
  std::vector<std::pair<ValueId, Tensor>> constants_;
  int output_slots_ = 0;
  std::size_t scratchpad_bytes_ = 0;
  MemoryPlan plan_;
  struct Profile {
    explicit Profile(std::size_t n) : nanoseconds(n) {}
    std::vector<std::atomic<std::int64_t>> nanoseconds;
  };
  std::unique_ptr<Profile> profile_;
  mutable std::mutex pool_mutex_;
  mutable std::vector<std::unique_ptr<Workspace>> pool_;
};

void CpuExecutable::plan() {
  const auto n = static_cast<std::size_t>(graph_.size());
  placement_.assign(n, {});
  std::vector<std::int64_t> last_read(n, -1), produced_at(n, -1);
  std::vector<bool> is_output(n, false);
  for (ValueId out : graph_.outputs()) is_output[static_cast<std::size_t>(out)] = true;
  for (std::size_t k = 0; k < kernels_.size(); ++k) {
    for (ValueId in : kernels_[k]->inputs)
      last_read[static_cast<std::size_t>(in)] = std::int64_t(k);
    for (ValueId out : kernels_[k]->outputs)
      produced_at[static_cast<std::size_t>(out)] = std::int64_t(k);
  }
  for (std::size_t i = 0; i < n; ++i) {
    const Node& node = graph_.nodes()[i];
    if (node.op == Op::constant)
      constants_.emplace_back(static_cast<ValueId>(i), std::get<ConstantAttrs>(node.attrs).value);
  }

  std::vector<Lifetime> lifetimes;
  std::vector<ValueId> arena_ids;
  release_after_.assign(kernels_.size(), {});
  std::vector<bool> donor_taken(graph_.parameters().size(), false);
  for (std::size_t k = 0; k < kernels_.size(); ++k) {
    const Kernel& kernel = *kernels_[k];
    for (ValueId out : kernel.outputs) {
      auto o = static_cast<std::size_t>(out);
      Placement& p = placement_[o];
      if (!kernel.writes_into_outputs()) {
        p.kind = Placement::self;
      } else if (is_output[o]) {
        p.kind = Placement::escaping;
        p.output_slot = output_slots_++;
        // A donor: an input of the same type that no kernel reads after this one (or
        // this one, where it writes element for element in place), not itself an output.
        const auto& params = graph_.parameters();
        for (std::size_t i = 0; i < params.size(); ++i) {
          auto pid = static_cast<std::size_t>(params[i]);
          if (donor_taken[i] || is_output[pid] ||
              graph_.nodes()[pid].type != graph_.nodes()[o].type)
            continue;
          std::int64_t last = last_read[pid];
          if (last < std::int64_t(k) ||
              (last == std::int64_t(k) && kernel.in_place_ok(params[i], out))) {
            p.donor = int(i);
            donor_taken[i] = true;
            break;
          }
        }
      } else {
        p.kind = Placement::arena;
        std::int64_t end = std::max<std::int64_t>(last_read[o], std::int64_t(k));
        lifetimes.push_back({std::int64_t(k), end, value_bytes(graph_.nodes()[o].type)});
        arena_ids.push_back(out);
      }
    }
    for (ValueId in : kernel.inputs) {
      auto i = static_cast<std::size_t>(in);
      if (last_read[i] == std::int64_t(k) && !is_output[i] && produced_at[i] >= 0 &&
          placement_[i].kind != Placement::arena)  // arena values stay bound
        release_after_[k].push_back(in);
    }
  }
  transient_.assign(graph_.parameters().begin(), graph_.parameters().end());
  for (std::size_t i = 0; i < n; ++i)
    if (placement_[i].kind != Placement::none && placement_[i].kind != Placement::arena)
      transient_.push_back(static_cast<ValueId>(i));
  ArenaLayout layout = pack_arena(lifetimes);
  plan_.offsets.assign(n, -1);
  plan_.last_use = last_read;
  for (std::size_t a = 0; a < arena_ids.size(); ++a) {
    placement_[static_cast<std::size_t>(arena_ids[a])].offset = layout.offsets[a];
    plan_.offsets[static_cast<std::size_t>(arena_ids[a])] = layout.offsets[a];
  }
  plan_.value_count = std::int64_t(arena_ids.size());
  plan_.arena_bytes = layout.arena_bytes;
  plan_.peak_live_bytes = layout.peak_live_bytes;
}

std::unique_ptr<Workspace> CpuExecutable::make_workspace() const {
  auto ws = std::make_unique<Workspace>();
  ws->arena = std::make_shared<Tensor>(
      Tensor::uninitialized(DType::u8, Shape{std::max<std::int64_t>(plan_.arena_bytes, 64)}));
  auto* base = static_cast<std::byte*>(ws->arena->raw_data());
  const auto n = static_cast<std::size_t>(graph_.size());
  ws->arena_values.resize(n);
  for (std::size_t i = 0; i < n; ++i)
    if (placement_[i].kind == Placement::arena) {
      const TensorType& t = graph_.nodes()[i].type;
      ws->arena_values[i] = Tensor::wrap(
          t.dtype, t.shape, std::shared_ptr<std::byte>(ws->arena, base + placement_[i].offset));
    }
  if (scratchpad_bytes_ > 0)
    ws->scratchpad = Tensor::uninitialized(DType::u8, Shape{std::int64_t(scratchpad_bytes_)});
  // Arena values and constants stay bound from run to run; the rest idle between runs.
  ws->values.resize(n);
  ws->idle.resize(n);
  for (std::size_t i = 0; i < n; ++i) ws->values[i] = ws->arena_values[i];
  for (ValueId id : transient_) {
    const TensorType& t = graph_.nodes()[static_cast<std::size_t>(id)].type;
    ws->idle[static_cast<std::size_t>(id)] =
        Tensor::wrap(t.dtype, t.shape, std::shared_ptr<std::byte>(ws->arena, base));
    ws->values[static_cast<std::size_t>(id)] = ws->idle[static_cast<std::size_t>(id)];
  }
  for (const auto& [id, t] : constants_) ws->values[static_cast<std::size_t>(id)] = t;
  ws->stream = dnnl::stream(engine_);
  ws->states.reserve(kernels_.size());
  for (const auto& k : kernels_) ws->states.push_back(k->make_state());
  ws->output_buffers.resize(static_cast<std::size_t>(output_slots_) * 2);
  ws->output_turn.resize(static_cast<std::size_t>(output_slots_), 0);
  return ws;
}

// Two buffers per output that no input can take in place, used in turn: when a training
// step's state comes back as the next step's donated input, the buffer the step before
// wrote is free again, so a step allocates nothing once warm.
// Returned by reference: copying it into the value table reuses the slot's shape buffer.
const Tensor& CpuExecutable::output_buffer(Workspace& ws, int slot, const TensorType& type) {
  Tensor* pair = &ws.output_buffers[static_cast<std::size_t>(slot) * 2];
  for (int j = 0; j < 2; ++j)
    if (pair[j].unique_storage()) return pair[j];
  Tensor& replaced = pair[ws.output_turn[static_cast<std::size_t>(slot)] ^= 1];
  replaced = Tensor::uninitialized(type.dtype, type.shape);
  return replaced;
}

std::vector<Tensor> CpuExecutable::execute(std::span<const Tensor> inputs,
                                           std::vector<Tensor>* donor_inputs) const {
  std::unique_ptr<Workspace> ws;
  {
    std::lock_guard lock(pool_mutex_);
    if (!pool_.empty()) {
      ws = std::move(pool_.back());
      pool_.pop_back();
    }
  }
  if (!ws) ws = make_workspace();
  std::vector<Tensor>& values = ws->values;
  std::vector<unsigned char>& donated = ws->donated;
  donated.assign(inputs.size(), 0);
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    Tensor& slot = values[static_cast<std::size_t>(graph_.parameters()[i])];
    if (donor_inputs) {
      donated[i] = (*donor_inputs)[i].unique_storage();
      slot = std::move((*donor_inputs)[i]);
    } else {
      slot = inputs[i];
    }
  }
  ThreadScope scope(threads_);
  cpu::FlushDenormals flush;
  cpu::RunContext ctx{values, ws->stream,
                      ws->scratchpad.defined() ? ws->scratchpad.raw_data() : nullptr};
  try {
    for (std::size_t k = 0; k < kernels_.size(); ++k) {
      const Kernel& kernel = *kernels_[k];
      if (kernel.writes_into_outputs())
        for (ValueId out : kernel.outputs) {
          auto o = static_cast<std::size_t>(out);
          const Placement& p = placement_[o];
          if (p.kind == Placement::arena) {
            values[o] = ws->arena_values[o];
          } else if (p.donor >= 0 && donated[static_cast<std::size_t>(p.donor)]) {
            values[o] = values[static_cast<std::size_t>(graph_.parameters()[std::size_t(p.donor)])];
          } else {
            values[o] = output_buffer(*ws, p.output_slot, graph_.nodes()[o].type);
          }
        }
      ctx.state = ws->states[k].get();
      if (profile_) {
        auto t0 = std::chrono::steady_clock::now();
        kernel.run(ctx);
        profile_->nanoseconds[k] += std::chrono::duration_cast<std::chrono::nanoseconds>(
                                        std::chrono::steady_clock::now() - t0)
                                        .count();
      } else {
        kernel.run(ctx);
      }
      for (ValueId v : release_after_[k])
        values[static_cast<std::size_t>(v)] = ws->idle[static_cast<std::size_t>(v)];
    }
  } catch (...) {
    for (ValueId v : transient_)
      values[static_cast<std::size_t>(v)] = ws->idle[static_cast<std::size_t>(v)];
    std::lock_guard lock(pool_mutex_);
    pool_.push_back(std::move(ws));
    throw;
  }
  std::vector<Tensor> outputs;
  outputs.reserve(graph_.outputs().size());
  for (ValueId out : graph_.outputs()) outputs.push_back(values[static_cast<std::size_t>(out)]);
  for (ValueId v : transient_)
    values[static_cast<std::size_t>(v)] = ws->idle[static_cast<std::size_t>(v)];
  std::lock_guard lock(pool_mutex_);
  pool_.push_back(std::move(ws));
  return outputs;
}

std::string CpuExecutable::describe() const {
  std::ostringstream lines;
  std::map<std::string, int> counts;
  int donations = 0;
  for (std::size_t i = 0; i < graph_.parameters().size(); ++i)
    lines << "    %" << graph_.parameters()[i] << " = input " << i << " : "
          << graph_.type(graph_.parameters()[i]).to_string() << "\n";
  for (const auto& kernel : kernels_) {
    std::string text = kernel->describe();
    counts[text.substr(0, text.find(' '))] += 1;
    lines << "    ";
    for (std::size_t i = 0; i < kernel->outputs.size(); ++i)
      lines << (i > 0 ? ", %" : "%") << kernel->outputs[i];
    lines << " = " << text << " :";
    for (ValueId out : kernel->outputs) {
      const Placement& p = placement_[static_cast<std::size_t>(out)];
      lines << " " << graph_.type(out).to_string();
      if (p.kind == Placement::arena) lines << " @arena+" << p.offset;
      if (p.kind == Placement::escaping && p.donor >= 0) {
        lines << " (in place of input " << p.donor << " when donated)";
        ++donations;
      }
    }
    if (kernel->covered.size() > kernel->outputs.size())
      lines << " [" << kernel->covered.size() << " nodes]";
    lines << "\n";
  }
  std::ostringstream out;
  out << "cpu executable '" << graph_.name() << "': " << graph_.size() << " values, "
      << graph_.parameters().size() << " input(s), " << graph_.outputs().size() << " output(s); "
      << kernels_.size() << " kernel(s):";
  for (const auto& [kind, count] : counts) out << " " << count << " " << kind;
  out << "\n  threads: " << cpu::threads_text(threads_) << "\n  arena: " << plan_.arena_bytes
      << " B for " << plan_.value_count << " values (peak " << plan_.peak_live_bytes << " B live); "
      << donations << " output(s) can update a donated input in place\n"
      << "  kernels:\n"
      << lines.str() << to_text(graph_);
  return out.str();
}

class CpuBackend final : public Backend {
 public:
  std::string_view name() const override { return "cpu"; }
  // Every op runs: on oneDNN or a fused kernel where it can, else its reference kernel.
  bool supports(Op) const override { return true; }
  std::unique_ptr<Executable> compile(const Graph& graph,
                                      const CompileOptions& options) const override {
    check(options.threads >= 0, "compile '", graph.name(), "' on cpu: threads must be >= 0, got ",
          options.threads);
    if (options.verify) verify(graph);
    return std::make_unique<CpuExecutable>(graph, options.threads, engine_);
  }

 private:
  dnnl::engine engine_{dnnl::engine::kind::cpu, 0};  // one for every executable
};

}  // namespace

std::unique_ptr<Backend> make_cpu_backend() { return std::make_unique<CpuBackend>(); }

}  // namespace glia::detail
