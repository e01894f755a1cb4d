// Lowering bookkeeping (who claimed which node, who reads which value) and the last
// lowering: every node no other lowering claimed runs its op's reference kernel.
#include "backends/cpu/program.hpp"

#include <algorithm>
#include <iomanip>
#include <numeric>
#include <queue>
#include <sstream>

#include <dnnl.hpp>

#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#endif

#if defined(GLIA_CPU_OPENMP) && DNNL_CPU_THREADING_RUNTIME == DNNL_RUNTIME_OMP
#include <omp.h>
#define GLIA_CPU_SETS_THREADS 1
#endif

namespace glia::detail::cpu {

ThreadScope::ThreadScope([[maybe_unused]] int threads) {
#ifdef GLIA_CPU_SETS_THREADS
  if (threads > 0 && threads != omp_get_max_threads()) {
    previous_ = omp_get_max_threads();
    omp_set_num_threads(threads);
  }
#endif
}

ThreadScope::~ThreadScope() {
#ifdef GLIA_CPU_SETS_THREADS
  if (previous_ > 0) omp_set_num_threads(previous_);
#endif
}

#if defined(__x86_64__) || defined(__i386__)
// The MXCSR is only written when the flags change (a nested run, or a thread that
// already flushes, leaves it alone).
FlushDenormals::FlushDenormals() : saved_(_mm_getcsr()) {
  if ((saved_ & 0x8040u) != 0x8040u) _mm_setcsr(saved_ | 0x8040u);  // FTZ (bit 15), DAZ (bit 6)
}
FlushDenormals::~FlushDenormals() {
  if ((saved_ & 0x8040u) != 0x8040u) _mm_setcsr(saved_);
}
#else
FlushDenormals::FlushDenormals() = default;
FlushDenormals::~FlushDenormals() = default;
#endif

Lowering::Lowering(const Graph& graph, const dnnl::engine& engine)
    : graph_(graph), engine_(engine) {
  const auto n = static_cast<std::size_t>(graph.size());
  claimed_.assign(n, false);
  is_output_.assign(n, false);
  uses_.assign(n, 0);
  readers_.resize(n);
  for (std::size_t i = 0; i < n; ++i)
    for (ValueId in : graph.nodes()[i].inputs) {
      auto& r = readers_[static_cast<std::size_t>(in)];
      if (r.empty() || r.back() != static_cast<ValueId>(i)) {
        r.push_back(static_cast<ValueId>(i));
        ++uses_[static_cast<std::size_t>(in)];
      }
    }
  for (ValueId out : graph.outputs())
    if (!is_output_[static_cast<std::size_t>(out)]) {
      is_output_[static_cast<std::size_t>(out)] = true;
      ++uses_[static_cast<std::size_t>(out)];
    }
  // Parameters and constants are bound, never computed.
  for (std::size_t i = 0; i < n; ++i) {
    Op op = graph.nodes()[i].op;
    claimed_[i] = op == Op::parameter || op == Op::constant;
  }
}

void Lowering::add(std::unique_ptr<Kernel> kernel) {
  for (ValueId id : kernel->covered) {
    check(!claimed_[static_cast<std::size_t>(id)], "cpu backend: node %", id, " (",
          op_name(node(id).op), ") claimed by two kernels");
    claimed_[static_cast<std::size_t>(id)] = true;
  }
  kernels_.push_back(std::move(kernel));
}

namespace {

class ReferenceKernel final : public Kernel {
 public:
  ReferenceKernel(const Graph& graph, ValueId id)
      : node_(graph.nodes()[static_cast<std::size_t>(id)]) {
    for (ValueId in : node_.inputs)
      if (std::find(inputs.begin(), inputs.end(), in) == inputs.end()) inputs.push_back(in);
    outputs = {id};
    covered = {id};
  }
  void run(RunContext& ctx) const override {
    std::vector<Tensor> args;
    args.reserve(node_.inputs.size());
    for (ValueId in : node_.inputs) args.push_back(ctx.values[static_cast<std::size_t>(in)]);
    ctx.values[static_cast<std::size_t>(outputs[0])] =
        op_info(node_.op).kernel(args, node_.attrs, node_.type);
  }
  std::string describe() const override { return cat("reference ", op_name(node_.op)); }
  bool writes_into_outputs() const override { return false; }

 private:
  Node node_;
};

}  // namespace

void lower_reference(Lowering& lowering) {
  for (std::int64_t i = 0; i < lowering.graph().size(); ++i) {
    auto id = static_cast<ValueId>(i);
    if (!lowering.claimed(id))
      lowering.add(std::make_unique<ReferenceKernel>(lowering.graph(), id));
  }
}

// Kernels in an order that runs every producer before its readers (Kahn's algorithm,
// earliest graph node first, so the order follows the graph where it can).
std::vector<std::unique_ptr<Kernel>> schedule(const Graph& graph,
                                              std::vector<std::unique_ptr<Kernel>> kernels) {
  const auto n = static_cast<std::size_t>(graph.size());
  std::vector<int> producer(n, -1);
  for (std::size_t k = 0; k < kernels.size(); ++k)
    for (ValueId out : kernels[k]->outputs) producer[static_cast<std::size_t>(out)] = int(k);
  std::vector<std::vector<int>> readers(kernels.size());
  std::vector<int> waiting(kernels.size(), 0);
  std::vector<ValueId> first(kernels.size());
  for (std::size_t k = 0; k < kernels.size(); ++k) {
    first[k] = *std::min_element(kernels[k]->covered.begin(), kernels[k]->covered.end());
    for (ValueId in : kernels[k]->inputs) {
      Op op = graph.nodes()[static_cast<std::size_t>(in)].op;
      if (op == Op::parameter || op == Op::constant) continue;
      int p = producer[static_cast<std::size_t>(in)];
      check(p >= 0, "cpu backend: kernel '", kernels[k]->describe(), "' reads %", in,
            " which no kernel outputs");
      readers[static_cast<std::size_t>(p)].push_back(int(k));
      ++waiting[k];
    }
  }
  auto later = [&](int a, int b) { return first[std::size_t(a)] > first[std::size_t(b)]; };
  std::priority_queue<int, std::vector<int>, decltype(later)> ready(later);
  for (std::size_t k = 0; k < kernels.size(); ++k)
    if (waiting[k] == 0) ready.push(int(k));
  std::vector<std::unique_ptr<Kernel>> ordered;
  while (!ready.empty()) {
    int k = ready.top();
    ready.pop();
    for (int r : readers[std::size_t(k)])
      if (--waiting[std::size_t(r)] == 0) ready.push(r);
    ordered.push_back(std::move(kernels[std::size_t(k)]));
  }
  if (ordered.size() != kernels.size()) {
    std::string stuck;
    for (std::size_t k = 0; k < kernels.size(); ++k)
      if (kernels[k] && waiting[k] > 0) {
        stuck += cat("\n  ", kernels[k]->describe(), " reads");
        for (ValueId in : kernels[k]->inputs) stuck += cat(" %", in);
        stuck += " writes";
        for (ValueId out : kernels[k]->outputs) stuck += cat(" %", out);
      }
    throw Error(cat("cpu backend: the kernels of graph '", graph.name(),
                    "' depend on each other in a cycle:", stuck, "\n", to_text(graph)));
  }
  return ordered;
}

std::string threads_text(int threads) {
#ifdef GLIA_CPU_SETS_THREADS
  if (threads > 0) return cat(threads, " (OpenMP, shared with oneDNN)");
  return cat("default, ", omp_get_max_threads(), " (OpenMP, shared with oneDNN)");
#else
  return cat("the default of oneDNN's CPU runtime (this build cannot set them; asked for ", threads,
             ")");
#endif
}

std::string profile_text(const std::string& name,
                         const std::vector<std::unique_ptr<Kernel>>& kernels,
                         const std::vector<std::int64_t>& nanoseconds) {
  std::vector<std::size_t> order(kernels.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::sort(order.begin(), order.end(),
            [&](std::size_t a, std::size_t b) { return nanoseconds[a] > nanoseconds[b]; });
  double total = 0;
  for (std::int64_t t : nanoseconds) total += double(t);
  std::ostringstream out;
  out << "glia cpu profile of '" << name << "': " << total / 1e6 << " ms in kernels\n";
  for (std::size_t k : order)
    out << "  " << std::fixed << std::setprecision(1) << std::setw(5)
        << 100.0 * double(nanoseconds[k]) / std::max(total, 1.0) << "%  "
        << kernels[k]->describe().substr(0, 160) << "\n";
  return out.str();
}

}  // namespace glia::detail::cpu
