// The `interp` backend: its program is one reference kernel per node (the lowering with a
// target that realises no other spec), run in order with each op's reference kernel —
// glia::interpret's plain loops, the oracle of every other backend. Each value lives in a
// tensor of its own, dropped after its last use; the arena placement is not used.
// Single-threaded.
#include "backends/interp/interp_backend.hpp"

#include <algorithm>

#include "glia/compiler/lowering.hpp"

namespace glia::detail {

namespace {

constexpr const char* kReason = "interp runs every node on its reference kernel";

class InterpExecutable final : public Executable {
 public:
  explicit InterpExecutable(const Graph& graph) : program_(lower(graph, ReferenceTarget(kReason))) {
    const auto n = static_cast<std::size_t>(program_.graph.size());
    for (std::size_t i = 0; i < n; ++i) {
      std::int64_t last = program_.memory.last_use[i];
      if (last >= 0 && last < std::int64_t(program_.kernels.size()))
        release_after_.emplace_back(last, static_cast<ValueId>(i));
    }
    std::sort(release_after_.begin(), release_after_.end());
  }

  std::vector<Tensor> run(std::span<const Tensor> inputs) const override {
    const Graph& g = program_.graph;
    check_run_inputs(g, inputs);
    std::vector<Tensor> values(static_cast<std::size_t>(g.size()));
    for (std::size_t i = 0; i < inputs.size(); ++i)
      values[static_cast<std::size_t>(g.parameters()[i])] = inputs[i];
    for (std::size_t i = 0; i < values.size(); ++i) {
      const Node& node = g.nodes()[i];
      if (node.op == Op::constant) values[i] = std::get<ConstantAttrs>(node.attrs).value;
    }
    std::vector<Tensor> args;
    std::size_t released = 0;
    for (std::size_t k = 0; k < program_.kernels.size(); ++k) {
      const auto& spec = std::get<ReferenceSpec>(program_.kernels[k].spec);
      const Node& node = g.node(spec.node);
      args.clear();
      for (ValueId in : node.inputs) args.push_back(values[static_cast<std::size_t>(in)]);
      values[static_cast<std::size_t>(spec.node)] =
          op_info(node.op).kernel(args, node.attrs, node.type);
      for (; released < release_after_.size() && release_after_[released].first == std::int64_t(k);
           ++released)
        values[static_cast<std::size_t>(release_after_[released].second)] = Tensor();
    }
    std::vector<Tensor> outputs;
    outputs.reserve(g.outputs().size());
    for (ValueId out : g.outputs()) outputs.push_back(values[static_cast<std::size_t>(out)]);
    return outputs;
  }

  const Program& program() const override { return program_; }

  std::string describe() const override {
    return cat("interp executable: each value in a tensor of its own (the arena is not used)\n",
               program_.describe());
  }

 private:
  Program program_;
  std::vector<std::pair<std::int64_t, ValueId>> release_after_;  // (kernel, value), sorted
};

class InterpBackend final : public Backend {
 public:
  std::string_view name() const override { return "interp"; }
  bool supports(Op) const override { return true; }
  // Verifies whatever options.verify says: the reference kernels trust their inputs.
  std::unique_ptr<Executable> compile(const Graph& graph, const CompileOptions&) const override {
    verify(graph);
    return std::make_unique<InterpExecutable>(graph);
  }
};

}  // namespace

std::unique_ptr<Backend> make_interp_backend() { return std::make_unique<InterpBackend>(); }

}  // namespace glia::detail
