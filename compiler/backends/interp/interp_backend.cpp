// The `interp` backend: compiling is verifying and planning memory; running is
// glia::interpret, node by node with each op's reference kernel. Single-threaded.
#include "backends/interp/interp_backend.hpp"

#include <map>
#include <sstream>

#include "glia/core/interpreter.hpp"

namespace glia::detail {

namespace {

class InterpExecutable final : public Executable {
 public:
  explicit InterpExecutable(const Graph& graph) : graph_(graph), plan_(plan_memory(graph_)) {}

  std::vector<Tensor> run(std::span<const Tensor> inputs) const override {
    return interpret(graph_, inputs);
  }
  const MemoryPlan& memory_plan() const override { return plan_; }

  std::string describe() const override {
    std::map<std::string_view, int> counts;
    for (const Node& n : graph_.nodes())
      if (n.op != Op::parameter) ++counts[op_name(n.op)];
    std::ostringstream out;
    out << "interp executable '" << graph_.name() << "': " << graph_.size() << " values, "
        << graph_.parameters().size() << " input(s), " << graph_.outputs().size()
        << " output(s), one reference kernel per node\n  ops:";
    const char* separator = " ";
    for (const auto& [name, count] : counts) {
      out << separator << name << " x" << count;
      separator = ", ";
    }
    out << "\n  memory: " << plan_.to_string() << "\n" << to_text(graph_);
    return out.str();
  }

 private:
  Graph graph_;
  MemoryPlan plan_;
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
