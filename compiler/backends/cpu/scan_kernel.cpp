// The cpu backend's loops: a ScanSpec's body compiled as a cpu executable of its own and
// run once per step over views of the sequences' rows; carries pass from step to step as
// the body's output tensors, step outputs are copied into their rows.
#include <cstring>

#include "backends/cpu/realise.hpp"
#include "glia/compiler/registry.hpp"

namespace glia::detail::cpu {

namespace {

class ScanKernel final : public CpuKernel {
 public:
  ScanKernel(const Graph& graph, const ScanSpec& spec)
      : spec_(spec), attrs_(std::get<ScanAttrs>(graph.node(spec.node).attrs)) {
    const Graph& body = *attrs_.body;
    body_ = compile_graph(body, "cpu");
    for (ValueId in : spec.operands) types_.push_back(graph.type(in));
    for (ValueId p : body.parameters()) steps_.push_back(body.type(p));
    for (const auto& [r, v] : spec.results)
      result_bytes_.push_back(static_cast<std::size_t>(graph.type(v).shape.numel()) *
                              dtype_size(graph.type(v).dtype));
  }

  void run(RunContext& ctx) const override {
    const auto k = static_cast<std::size_t>(attrs_.carries),
               m = static_cast<std::size_t>(attrs_.sequences), n = types_.size();
    const std::size_t q = attrs_.body->outputs().size() - k;
    std::vector<Tensor> args(n);
    for (std::size_t i = 0; i < n; ++i)
      if (i < k || i >= k + m)
        args[i] = Tensor::borrow(types_[i].dtype, types_[i].shape, ctx.at(spec_.operands[i]));
    // Where each result goes (null: not computed), by result index.
    std::vector<std::byte*> to(2 * k + q, nullptr);
    // Equal result nodes (not merged by CSE) get copies of the first one's value.
    std::vector<std::pair<std::byte*, std::size_t>> copies;  // (destination, result index)
    for (const auto& [r, v] : spec_.results) {
      std::byte*& dst = to[static_cast<std::size_t>(r)];
      if (dst == nullptr)
        dst = ctx.at(v);
      else if (dst != ctx.at(v))
        copies.emplace_back(ctx.at(v), static_cast<std::size_t>(r));
    }
    for (std::int64_t s = 0; s < attrs_.length; ++s) {
      const std::int64_t t = attrs_.reverse ? attrs_.length - 1 - s : s;
      for (std::size_t j = k; j < k + m; ++j) {
        const std::size_t row = steps_[j].shape.numel() * dtype_size(steps_[j].dtype);
        args[j] = Tensor::borrow(steps_[j].dtype, steps_[j].shape,
                                 ctx.at(spec_.operands[j]) + static_cast<std::size_t>(t) * row);
      }
      for (std::size_t j = 0; j < k; ++j)
        if (std::byte* dst = to[k + q + j])
          std::memcpy(dst + static_cast<std::size_t>(t) * args[j].nbytes(), args[j].raw_data(),
                      args[j].nbytes());
      std::vector<Tensor> outs = body_->run(args);
      for (std::size_t j = 0; j < q; ++j)
        if (std::byte* dst = to[k + j])
          std::memcpy(dst + static_cast<std::size_t>(t) * outs[k + j].nbytes(),
                      outs[k + j].raw_data(), outs[k + j].nbytes());
      for (std::size_t j = 0; j < k; ++j) args[j] = std::move(outs[j]);
    }
    for (std::size_t j = 0; j < k; ++j)
      if (to[j] != nullptr && to[j] != args[j].raw_data())
        std::memcpy(to[j], args[j].raw_data(), args[j].nbytes());
    for (const auto& [dst, r] : copies) {
      std::size_t i = 0;  // the result's size, from its first entry
      while (static_cast<std::size_t>(spec_.results[i].first) != r) ++i;
      std::memcpy(dst, to[r], result_bytes_[i]);
    }
  }

  std::string describe() const override {
    return cat("loop over a cpu executable of ", attrs_.body->name(), " (",
               body_->program().kernels.size(), " kernels)");
  }

 private:
  ScanSpec spec_;
  ScanAttrs attrs_;
  std::unique_ptr<Executable> body_;
  std::vector<TensorType> types_;          // the loop's inputs
  std::vector<TensorType> steps_;          // the body's parameters
  std::vector<std::size_t> result_bytes_;  // by entry of spec_.results
};

}  // namespace

std::unique_ptr<CpuKernel> realise_scan(const Graph& graph, const Kernel& kernel) {
  return std::make_unique<ScanKernel>(graph, std::get<ScanSpec>(kernel.spec));
}

}  // namespace glia::detail::cpu
