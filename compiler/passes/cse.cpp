// Common-subexpression elimination: one pass in topological order, so a node's inputs
// are already merged when it is looked up, and whole duplicated subtrees collapse.
#include <algorithm>
#include <unordered_map>
#include <vector>

#include "glia/compiler/passes.hpp"

namespace glia {

namespace {

bool is_commutative(Op op) {
  return op == Op::add || op == Op::multiply || op == Op::eq || op == Op::ne || op == Op::and_ ||
         op == Op::or_;
}

// The inputs as compared: sorted for a commutative op, so a + b meets b + a. (max and
// min are left out: which NaN they return may depend on the order.)
std::vector<ValueId> key_inputs(const Node& n) {
  std::vector<ValueId> inputs = n.inputs;
  if (is_commutative(n.op)) std::sort(inputs.begin(), inputs.end());
  return inputs;
}

std::uint64_t mix(std::uint64_t h, std::uint64_t v) {
  constexpr std::uint64_t kPrime = 1099511628211ULL;
  for (int i = 0; i < 8; ++i) h = (h ^ ((v >> (8 * i)) & 0xff)) * kPrime;
  return h;
}

std::uint64_t node_hash(const Node& n, const std::vector<ValueId>& inputs) {
  std::uint64_t h = mix(14695981039346656037ULL, static_cast<std::uint64_t>(n.op));
  for (ValueId in : inputs) h = mix(h, static_cast<std::uint64_t>(in));
  return hash_attrs(n.attrs, h);
}

}  // namespace

Graph eliminate_common_subexpressions(const Graph& graph) {
  Graph out(graph.name());
  std::vector<ValueId> remap(static_cast<std::size_t>(graph.size()), -1);
  std::unordered_map<std::uint64_t, std::vector<ValueId>> seen;
  for (std::int64_t i = 0; i < graph.size(); ++i) {
    const Node& src = graph.nodes()[static_cast<std::size_t>(i)];
    if (src.op == Op::parameter) {
      const auto& p = std::get<ParameterAttrs>(src.attrs);
      remap[static_cast<std::size_t>(i)] = out.add_parameter(p.type, p.name);
      continue;
    }
    Node n = src;
    for (ValueId& in : n.inputs) in = remap[static_cast<std::size_t>(in)];
    std::vector<ValueId> key = key_inputs(n);
    std::vector<ValueId>& bucket = seen[node_hash(n, key)];
    ValueId found = -1;
    for (ValueId c : bucket) {
      const Node& other = out.node(c);
      if (other.op == n.op && other.type == n.type && key_inputs(other) == key &&
          attrs_equal(other.attrs, n.attrs)) {
        found = c;
        break;
      }
    }
    if (found < 0) {
      found = out.append(std::move(n));
      bucket.push_back(found);
    }
    remap[static_cast<std::size_t>(i)] = found;
  }
  std::vector<ValueId> outputs;
  for (ValueId id : graph.outputs()) outputs.push_back(remap[static_cast<std::size_t>(id)]);
  out.set_outputs(std::move(outputs));
  return out;
}

}  // namespace glia
