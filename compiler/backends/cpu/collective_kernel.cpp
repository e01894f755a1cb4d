// all_reduce on the cpu backend: the input copied to the output (unless placed in one
// buffer), the sum started there in place through the node's communicator and left in
// flight; the executable waits before the first kernel that reads the output. Where that
// kernel comes next, nothing would overlap: the sum runs blocking instead.
#include <cstring>

#include "backends/cpu/realise.hpp"

namespace glia::detail::cpu {

namespace {

class CollectiveKernel final : public CpuKernel {
 public:
  CollectiveKernel(const CollectiveSpec& spec, ValueId input) : spec_(spec), input_(input) {}
  void run(RunContext& ctx) const override {
    std::byte* out = ctx.at(spec_.node);
    const std::byte* in = ctx.at(input_);
    const auto bytes = static_cast<std::size_t>(spec_.count) * dtype_size(spec_.dtype);
    if (in != out && bytes > 0) std::memcpy(out, in, bytes);
    std::shared_ptr<Communicator> comm = registered_communicator(spec_.communicator);
    // Awaited at once: the blocking call (MPI's tuned algorithms beat its non-blocking ones).
    if (ctx.in_flight == nullptr) return comm->all_reduce_sum(out, spec_.count, spec_.dtype);
    std::unique_ptr<CollectiveRequest> request =
        comm->start_all_reduce_sum(out, spec_.count, spec_.dtype);
    if (request) ctx.in_flight->push_back({std::move(request), spec_.node});
  }
  std::string describe() const override {
    return "host collective in place (started; blocking where the next kernel reads it)";
  }

 private:
  CollectiveSpec spec_;
  ValueId input_;
};

}  // namespace

std::unique_ptr<CpuKernel> realise_collective(const Kernel& kernel) {
  const auto& spec = std::get<CollectiveSpec>(kernel.spec);
  return std::make_unique<CollectiveKernel>(spec, kernel.inputs.front());
}

}  // namespace glia::detail::cpu
