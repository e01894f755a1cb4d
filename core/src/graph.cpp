#include "glia/core/graph.hpp"

#include <algorithm>
#include <sstream>

#include "kernels/kernel_util.hpp"

namespace glia {

namespace {

// Arity, attribute kind and input ids of a would-be node; `where` names it in errors.
void check_node_shape(const Graph& g, const Node& n, std::int64_t position,
                      std::string_view where) {
  const OpInfo& info = op_info(n.op);
  auto count = static_cast<int>(n.inputs.size());
  if (info.arity >= 0)
    check(count == info.arity, where, info.name, " takes ", info.arity, " input(s), got ", count);
  else
    check(count >= 1, where, info.name, " takes one or more inputs, got none");
  check(attr_kind(n.attrs) == info.attr_kind, where, info.name, " expects ",
        attr_kind_name(info.attr_kind), " attributes, got ", attr_kind_name(attr_kind(n.attrs)));
  for (ValueId in : n.inputs)
    check(in >= 0 && in < position, where, info.name, ": input %", in,
          " is not defined before use (graph '", g.name(), "' has ", position, " values here)");
}

TensorType infer(const Graph& g, const Node& n) {
  std::vector<TensorType> types;
  types.reserve(n.inputs.size());
  for (ValueId in : n.inputs) types.push_back(g.type(in));
  const OpInfo& info = op_info(n.op);
  check(info.infer != nullptr, info.name, ": the op table has no inference rule for this op");
  return info.infer(types, n.attrs);
}

// The loop bodies a graph's nodes hold, each once, in order of first use.
std::vector<const Graph*> bodies_of(const Graph& g) {
  std::vector<const Graph*> found;
  for (const Node& n : g.nodes())
    if (const auto* s = std::get_if<ScanAttrs>(&n.attrs))
      if (std::find(found.begin(), found.end(), s->body.graph.get()) == found.end())
        found.push_back(s->body.graph.get());
  return found;
}

std::uint64_t mix(std::uint64_t h, std::uint64_t v) {
  // splitmix-style combine: stable and well spread.
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  return h;
}

}  // namespace

ValueId Graph::add_parameter(TensorType type, std::string name) {
  Node n;
  n.op = Op::parameter;
  n.attrs = ParameterAttrs{static_cast<std::int64_t>(parameters_.size()), type, std::move(name)};
  n.type = std::move(type);
  ValueId id = append(std::move(n));
  parameters_.push_back(id);
  return id;
}

ValueId Graph::add(Op op, std::vector<ValueId> inputs, Attrs attrs) {
  check(op != Op::parameter, "Graph::add: use add_parameter for graph inputs");
  Node n{op, std::move(inputs), std::move(attrs), {}};
  check_node_shape(*this, n, size(), "");
  n.type = infer(*this, n);
  return append(std::move(n));
}

ValueId Graph::append(Node node) {
  nodes_.push_back(std::move(node));
  return static_cast<ValueId>(nodes_.size() - 1);
}

const Node& Graph::node(ValueId id) const {
  check(id >= 0 && id < size(), "Graph '", name_, "': no value %", id, " (", size(), " values)");
  return nodes_[static_cast<std::size_t>(id)];
}

void Graph::set_outputs(std::vector<ValueId> outputs) {
  for (ValueId id : outputs)
    check(id >= 0 && id < size(), "Graph '", name_, "': output %", id, " is not a value");
  outputs_ = std::move(outputs);
}

void Graph::annotate(ValueId id, std::shared_ptr<const Annotation> annotation) {
  node(id);  // checks the id
  annotations_[id] = std::move(annotation);
}

const Annotation* Graph::annotation(ValueId id) const {
  auto it = annotations_.find(id);
  return it == annotations_.end() ? nullptr : it->second.get();
}

Graph prune(const Graph& g) {
  std::vector<bool> live(static_cast<std::size_t>(g.size()), false);
  for (ValueId id : g.outputs()) live[static_cast<std::size_t>(id)] = true;
  for (ValueId id : g.parameters()) live[static_cast<std::size_t>(id)] = true;
  for (std::int64_t i = g.size() - 1; i >= 0; --i) {
    if (!live[static_cast<std::size_t>(i)]) continue;
    for (ValueId in : g.nodes()[static_cast<std::size_t>(i)].inputs)
      live[static_cast<std::size_t>(in)] = true;
    if (const Annotation* a = g.annotation(static_cast<ValueId>(i)))
      for (ValueId in : a->reads()) live[static_cast<std::size_t>(in)] = true;
  }
  Graph out(g.name());
  std::vector<ValueId> remap(static_cast<std::size_t>(g.size()), -1);
  for (std::int64_t i = 0; i < g.size(); ++i) {
    if (!live[static_cast<std::size_t>(i)]) continue;
    Node n = g.nodes()[static_cast<std::size_t>(i)];
    for (ValueId& in : n.inputs) in = remap[static_cast<std::size_t>(in)];
    ValueId id;
    if (n.op == Op::parameter) {
      const auto& p = std::get<ParameterAttrs>(n.attrs);
      id = out.add_parameter(p.type, p.name);
    } else {
      id = out.append(std::move(n));
    }
    remap[static_cast<std::size_t>(i)] = id;
  }
  for (const auto& [id, annotation] : g.annotations())
    if (remap[static_cast<std::size_t>(id)] >= 0)
      if (std::shared_ptr<const Annotation> a = annotation->moved(remap))
        out.annotate(remap[static_cast<std::size_t>(id)], std::move(a));
  std::vector<ValueId> outputs;
  for (ValueId id : g.outputs()) outputs.push_back(remap[static_cast<std::size_t>(id)]);
  out.set_outputs(std::move(outputs));
  return out;
}

void verify(const Graph& g) {
  std::int64_t next_parameter = 0;
  for (std::int64_t i = 0; i < g.size(); ++i) {
    const Node& n = g.nodes()[static_cast<std::size_t>(i)];
    std::string where = cat("verify: graph '", g.name(), "' node %", i, ": ");
    check_node_shape(g, n, i, where);
    if (n.op == Op::parameter) {
      const auto& p = std::get<ParameterAttrs>(n.attrs);
      check(p.index == next_parameter, where, "parameter index ", p.index, ", expected ",
            next_parameter);
      check(next_parameter < static_cast<std::int64_t>(g.parameters().size()) &&
                g.parameters()[static_cast<std::size_t>(next_parameter)] == i,
            where, "parameter is not listed among the graph's parameters");
      ++next_parameter;
    }
    TensorType expected;
    try {
      expected = infer(g, n);
    } catch (const Error& e) {
      throw Error(where + e.what());
    }
    check(expected == n.type, where, op_name(n.op), " has type ", n.type.to_string(),
          " but its inputs give ", expected.to_string());
  }
  for (const Graph* body : bodies_of(g)) verify(*body);
  check(next_parameter == static_cast<std::int64_t>(g.parameters().size()), "verify: graph '",
        g.name(), "' lists ", g.parameters().size(), " parameters but has ", next_parameter,
        " parameter nodes");
  check(!g.outputs().empty(), "verify: graph '", g.name(), "' has no outputs");
  for (ValueId id : g.outputs())
    check(id >= 0 && id < g.size(), "verify: graph '", g.name(), "' output %", id,
          " is not a value");
}

bool same_structure(const Graph& a, const Graph& b) {
  if (a.size() != b.size() || a.outputs() != b.outputs() || a.parameters() != b.parameters())
    return false;
  for (std::int64_t i = 0; i < a.size(); ++i) {
    const Node& x = a.nodes()[static_cast<std::size_t>(i)];
    const Node& y = b.nodes()[static_cast<std::size_t>(i)];
    if (x.op != y.op || x.inputs != y.inputs || !(x.type == y.type) ||
        !attrs_equal(x.attrs, y.attrs))
      return false;
  }
  return true;
}

namespace {

void write_text(std::ostream& out, const Graph& g, const std::string& indent) {
  out << indent << "graph " << g.name() << "(";
  for (std::size_t i = 0; i < g.parameters().size(); ++i) {
    const Node& p = g.node(g.parameters()[i]);
    const auto& name = std::get<ParameterAttrs>(p.attrs).name;
    out << (i ? ", " : "") << "%" << g.parameters()[i] << ": " << p.type;
    if (!name.empty()) out << " " << name;
  }
  out << ") -> (";
  for (std::size_t i = 0; i < g.outputs().size(); ++i)
    out << (i ? ", " : "") << g.type(g.outputs()[i]);
  out << ")\n";
  for (std::int64_t i = 0; i < g.size(); ++i) {
    const Node& n = g.nodes()[static_cast<std::size_t>(i)];
    if (n.op == Op::parameter) continue;
    out << indent << "  %" << i << " = " << op_name(n.op);
    for (std::size_t k = 0; k < n.inputs.size(); ++k) out << (k ? ", %" : " %") << n.inputs[k];
    std::string attrs = attrs_to_string(n.attrs);
    if (!attrs.empty()) out << " [" << attrs << "]";
    out << " : " << n.type << "\n";
  }
  out << indent << "  return";
  for (std::size_t i = 0; i < g.outputs().size(); ++i) out << (i ? ", %" : " %") << g.outputs()[i];
  out << "\n";
  // Loop bodies follow, indented, each once.
  for (const Graph* body : bodies_of(g)) write_text(out, *body, indent + "    ");
}

}  // namespace

std::string to_text(const Graph& g) {
  std::ostringstream out;
  write_text(out, g, "");
  return out.str();
}

std::uint64_t fingerprint(const Graph& g) {
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (const Node& n : g.nodes()) {
    h = mix(h, static_cast<std::uint64_t>(n.op));
    h = mix(h, n.inputs.size());
    for (ValueId in : n.inputs) h = mix(h, static_cast<std::uint64_t>(in));
    h = hash_attrs(n.attrs, h);
    h = hash_attrs(Attrs{ParameterAttrs{0, n.type, ""}}, h);
  }
  h = mix(h, g.outputs().size());
  for (ValueId id : g.outputs()) h = mix(h, static_cast<std::uint64_t>(id));
  return h;
}

}  // namespace glia
