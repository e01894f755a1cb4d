// The `cpu` backend: compiling turns a graph into a program of steps, one per node,
// made once: dot_general nodes that are f32 (batched) matmuls become oneDNN matmul
// primitives, every other node runs its op's reference kernel. Threads: oneDNN's CPU
// runtime here is OpenMP (Debian's libdnnl is built with DNNL_CPU_RUNTIME=OMP, libgomp);
// CompileOptions::threads sets the OpenMP thread count of the calling thread while a
// program is compiled and while it runs (0 leaves OpenMP's default, OMP_NUM_THREADS).
#include "backends/cpu/cpu_backend.hpp"

#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <sstream>

#include <dnnl.hpp>

#include "backends/cpu/onednn_matmul.hpp"

#if defined(GLIA_CPU_OPENMP) && DNNL_CPU_THREADING_RUNTIME == DNNL_RUNTIME_OMP
#include <omp.h>
#define GLIA_CPU_SETS_THREADS 1
#endif

namespace glia::detail {

namespace {

// Sets the calling thread's OpenMP thread count for its lifetime (nothing for 0).
class ThreadScope {
 public:
  explicit ThreadScope([[maybe_unused]] int threads) {
#ifdef GLIA_CPU_SETS_THREADS
    if (threads > 0) {
      previous_ = omp_get_max_threads();
      omp_set_num_threads(threads);
    }
#endif
  }
  ~ThreadScope() {
#ifdef GLIA_CPU_SETS_THREADS
    if (previous_ > 0) omp_set_num_threads(previous_);
#endif
  }
  ThreadScope(const ThreadScope&) = delete;
  ThreadScope& operator=(const ThreadScope&) = delete;

 private:
  [[maybe_unused]] int previous_ = 0;
};

std::string threads_text(int threads) {
#ifdef GLIA_CPU_SETS_THREADS
  if (threads > 0) return cat(threads, " (OpenMP, oneDNN's CPU runtime)");
  return cat("default, ", omp_get_max_threads(), " (OpenMP, oneDNN's CPU runtime)");
#else
  return cat("the default of oneDNN's CPU runtime (this build cannot set them; asked for ", threads,
             ")");
#endif
}

// One node of the program. Parameters only bind an input.
struct Step {
  ValueId id = 0;
  std::optional<cpu::MatmulStep> matmul;  // empty: the reference kernel
  std::vector<ValueId> release;           // values no later step reads
};

class CpuExecutable final : public Executable {
 public:
  CpuExecutable(const Graph& graph, int threads, const dnnl::engine& engine)
      : graph_(graph), plan_(plan_memory(graph_)), engine_(engine), threads_(threads) {
    ThreadScope scope(threads_);  // oneDNN picks its kernels for the thread count it sees
    std::vector<std::int64_t> last_use(static_cast<std::size_t>(graph_.size()), -1);
    for (std::int64_t i = 0; i < graph_.size(); ++i)
      for (ValueId in : graph_.nodes()[static_cast<std::size_t>(i)].inputs)
        last_use[static_cast<std::size_t>(in)] = i;
    for (ValueId out : graph_.outputs()) last_use[static_cast<std::size_t>(out)] = graph_.size();
    steps_.resize(static_cast<std::size_t>(graph_.size()));
    for (std::int64_t i = 0; i < graph_.size(); ++i) {
      const Node& n = graph_.nodes()[static_cast<std::size_t>(i)];
      Step& step = steps_[static_cast<std::size_t>(i)];
      step.id = static_cast<ValueId>(i);
      step.matmul = cpu::MatmulStep::create(graph_, n, engine_);
      if (step.matmul)
        scratchpad_bytes_ = std::max(scratchpad_bytes_, step.matmul->scratchpad_bytes());
      for (ValueId in : n.inputs)
        if (last_use[static_cast<std::size_t>(in)] == i &&
            std::find(step.release.begin(), step.release.end(), in) == step.release.end())
          step.release.push_back(in);
    }
  }

  std::vector<Tensor> run(std::span<const Tensor> inputs) const override {
    check_inputs(inputs);
    ThreadScope scope(threads_);
    dnnl::stream stream(engine_);
    // One scratchpad per run, big enough for every primitive, 64-byte aligned.
    std::vector<std::byte> scratch(scratchpad_bytes_ > 0 ? scratchpad_bytes_ + 64 : 0);
    void* scratchpad = scratch.data();
    std::size_t space = scratch.size();
    if (scratchpad_bytes_ > 0) std::align(64, scratchpad_bytes_, scratchpad, space);

    std::vector<Tensor> values(static_cast<std::size_t>(graph_.size()));
    std::vector<Tensor> args;
    for (const Step& step : steps_) {
      const Node& n = graph_.nodes()[static_cast<std::size_t>(step.id)];
      Tensor& result = values[static_cast<std::size_t>(step.id)];
      if (n.op == Op::parameter) {
        result = inputs[static_cast<std::size_t>(std::get<ParameterAttrs>(n.attrs).index)];
      } else if (step.matmul) {
        result = Tensor(n.type.dtype, n.type.shape);
        step.matmul->execute(stream, values[static_cast<std::size_t>(n.inputs[0])],
                             values[static_cast<std::size_t>(n.inputs[1])], result, scratchpad);
        stream.wait();
      } else {
        args.clear();
        for (ValueId in : n.inputs) args.push_back(values[static_cast<std::size_t>(in)]);
        result = op_info(n.op).kernel(args, n.attrs, n.type);
      }
      for (ValueId in : step.release) values[static_cast<std::size_t>(in)] = Tensor();
    }
    std::vector<Tensor> outputs;
    for (ValueId out : graph_.outputs()) outputs.push_back(values[static_cast<std::size_t>(out)]);
    return outputs;
  }

  const MemoryPlan& memory_plan() const override { return plan_; }

  std::string describe() const override {
    int matmuls = 0, references = 0;
    std::ostringstream lines;
    for (const Step& step : steps_) {
      const Node& n = graph_.nodes()[static_cast<std::size_t>(step.id)];
      lines << "    %" << step.id << " = ";
      if (n.op == Op::parameter) {
        lines << "input " << std::get<ParameterAttrs>(n.attrs).index;
      } else if (step.matmul) {
        ++matmuls;
        lines << step.matmul->describe();
      } else {
        ++references;
        lines << "reference " << op_name(n.op);
      }
      lines << " : " << n.type.to_string() << "\n";
    }
    std::ostringstream out;
    out << "cpu executable '" << graph_.name() << "': " << graph_.size() << " values, "
        << graph_.parameters().size() << " input(s), " << graph_.outputs().size() << " output(s); "
        << matmuls << " onednn matmul step(s), " << references << " reference step(s)\n"
        << "  threads: " << threads_text(threads_) << "\n  steps:\n"
        << lines.str() << "  memory: " << plan_.to_string() << "\n"
        << to_text(graph_);
    return out.str();
  }

 private:
  void check_inputs(std::span<const Tensor> inputs) const {
    check(inputs.size() == graph_.parameters().size(), "run: graph '", graph_.name(), "' takes ",
          graph_.parameters().size(), " input(s), got ", inputs.size());
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      const TensorType& want = graph_.type(graph_.parameters()[i]);
      check(inputs[i].defined(), "run: graph '", graph_.name(), "' input ", i, " is undefined");
      check(inputs[i].type() == want, "run: graph '", graph_.name(), "' input ", i, " expected ",
            want.to_string(), ", got ", inputs[i].type().to_string());
    }
  }

  Graph graph_;
  MemoryPlan plan_;
  dnnl::engine engine_;
  int threads_ = 0;
  std::vector<Step> steps_;
  std::size_t scratchpad_bytes_ = 0;
};

class CpuBackend final : public Backend {
 public:
  std::string_view name() const override { return "cpu"; }
  // Every op runs: on oneDNN where it has a primitive, else on its reference kernel.
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
