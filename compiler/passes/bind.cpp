// bind_parameters: graph parameters replaced by constants holding given values.
#include "glia/compiler/passes.hpp"
#include "glia/core/attrs.hpp"
#include "glia/core/error.hpp"

namespace glia {

Graph bind_parameters(const Graph& graph, const std::vector<std::optional<Tensor>>& values) {
  const auto& params = graph.parameters();
  check(values.size() == params.size(), "bind_parameters: ", values.size(),
        " value(s) for a graph with ", params.size(), " parameter(s)");
  Graph out(graph.name());
  std::vector<ValueId> map(static_cast<std::size_t>(graph.size()), -1);
  for (ValueId id = 0; id < graph.size(); ++id) {
    const Node& n = graph.node(id);
    if (n.op == Op::parameter) {
      const auto& a = std::get<ParameterAttrs>(n.attrs);
      const auto& value = values[static_cast<std::size_t>(a.index)];
      if (!value) {
        map[std::size_t(id)] = out.add_parameter(n.type, a.name);
        continue;
      }
      check(value->type() == n.type, "bind_parameters: parameter ", a.index, " (",
            a.name.empty() ? std::string("unnamed") : a.name, ") is ", n.type.to_string(),
            ", given ", value->type().to_string());
      map[std::size_t(id)] = out.append({Op::constant, {}, ConstantAttrs{*value}, n.type});
      continue;
    }
    Node copy = n;
    for (ValueId& in : copy.inputs) in = map[std::size_t(in)];
    map[std::size_t(id)] = out.append(std::move(copy));
  }
  std::vector<ValueId> outputs;
  for (ValueId o : graph.outputs()) outputs.push_back(map[std::size_t(o)]);
  out.set_outputs(std::move(outputs));
  return out;
}

}  // namespace glia
