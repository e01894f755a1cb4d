// The cpu backend's run-time pieces: thread and denormal scopes, the reference kernel,
// the dispatch from a spec to its realisation, and the texts of describe() and the profile.
#include <algorithm>
#include <cstring>
#include <iomanip>
#include <numeric>
#include <sstream>

#include <dnnl.hpp>

#include "backends/cpu/realise.hpp"
#include "src/cpu_threads.hpp"

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
  if (threads == 0) threads = cpu_threads_setting();
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

namespace {

// The node's op on its reference kernel, its result copied into the placed output.
class ReferenceKernel final : public CpuKernel {
 public:
  ReferenceKernel(const Graph& graph, ValueId id) : node_(graph.node(id)), id_(id) {
    for (ValueId in : node_.inputs) types_.push_back(graph.type(in));
  }
  void run(RunContext& ctx) const override {
    std::vector<Tensor> args;
    args.reserve(node_.inputs.size());
    for (std::size_t i = 0; i < node_.inputs.size(); ++i)
      args.push_back(Tensor::borrow(types_[i].dtype, types_[i].shape, ctx.at(node_.inputs[i])));
    Tensor result = op_info(node_.op).kernel(args, node_.attrs, node_.type);
    std::memcpy(ctx.at(id_), result.raw_data(), result.nbytes());
  }
  std::string describe() const override { return "reference kernel"; }

 private:
  Node node_;
  ValueId id_;
  std::vector<TensorType> types_;
};

}  // namespace

std::unique_ptr<CpuKernel> realise_reference(const Graph& graph, const Kernel& kernel) {
  return std::make_unique<ReferenceKernel>(graph, std::get<ReferenceSpec>(kernel.spec).node);
}

std::unique_ptr<CpuKernel> realise(const Graph& graph, const Kernel& kernel,
                                   const dnnl::engine& engine) {
  switch (kernel.spec.index()) {
    case 0:
      return realise_matmul(graph, kernel, engine);
    case 1:
      return realise_convolution(kernel, engine);
    case 2:
      return realise_pooling(kernel, engine);
    case 3:
      return realise_direct(graph, kernel);
    case 4:
      return realise_fused(kernel);
    case 6:
      return realise_scan(graph, kernel);
    case 7:
      return realise_collective(kernel);
    case 8:
      return realise_conv_pool(kernel);
    default:
      return realise_reference(graph, kernel);
  }
}

std::string threads_text(int threads) {
#ifdef GLIA_CPU_SETS_THREADS
  if (threads > 0) return cat(threads, " (OpenMP, shared with oneDNN)");
  if (cpu_threads_setting() > 0)
    return cat(cpu_threads_setting(), " (glia::cpu::set_threads; OpenMP, shared with oneDNN)");
  return cat("default, ", omp_get_max_threads(), " (OpenMP, shared with oneDNN)");
#else
  return cat("the default of oneDNN's CPU runtime (this build cannot set them; asked for ", threads,
             ")");
#endif
}

std::string profile_text(const Program& program, const std::vector<std::string>& realised,
                         const std::vector<std::int64_t>& nanoseconds, std::int64_t runs) {
  std::vector<std::size_t> order(nanoseconds.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::sort(order.begin(), order.end(),
            [&](std::size_t a, std::size_t b) { return nanoseconds[a] > nanoseconds[b]; });
  double total = 0;
  for (std::int64_t t : nanoseconds) total += double(t);
  std::ostringstream out;
  const double per_run = 1e3 * double(std::max<std::int64_t>(runs, 1));  // ns -> us a run
  out << "glia cpu profile of '" << program.graph.name() << "': " << total / 1e6
      << " ms in kernels over " << runs << " runs, " << total / per_run << " us a run\n";
  for (std::size_t k : order)
    out << "  " << std::fixed << std::setprecision(1) << std::setw(5)
        << 100.0 * double(nanoseconds[k]) / std::max(total, 1.0) << "% " << std::setw(9)
        << double(nanoseconds[k]) / per_run << " us  "
        << (program.kernels[k].describe(program.graph) + " -> " + realised[k]).substr(0, 400)
        << "\n";
  return out.str();
}

}  // namespace glia::detail::cpu
