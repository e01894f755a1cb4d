// Lowering bookkeeping (who claimed which node, who reads which value) and the last
// lowering: every node no other lowering claimed runs its op's reference kernel.
#include "backends/cpu/program.hpp"

#include <algorithm>

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

}  // namespace glia::detail::cpu
