// Graph: the one IR of glia. A list of nodes in topological (SSA) order; each node
// has an op, its input value ids, its attributes and its result type. Parameters are
// the graph's inputs; a graph has one or more outputs.
//   glia::Graph g("double");
//   auto x = g.add_parameter({glia::f32, {3}}, "x");
//   g.set_outputs({g.add(glia::Op::add, {x, x})});
//   std::cout << glia::to_text(g);
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "glia/core/op.hpp"

namespace glia {

using ValueId = std::int32_t;

struct Node {
  Op op = Op::constant;
  std::vector<ValueId> inputs;
  Attrs attrs;
  TensorType type;
};

// Information a transform attaches to a value while tracing (autograd's custom
// gradients). It does not enter verification, the text dump or the fingerprint.
struct Annotation {
  virtual ~Annotation() = default;
  // The values it refers to (a custom gradient's inputs): prune keeps them.
  virtual std::vector<ValueId> reads() const { return {}; }
  // The annotation for a copy of its value in another graph (prune, or call() inlining a
  // graph), where value v of this graph is map[v]; null: it does not carry over.
  virtual std::shared_ptr<const Annotation> moved(const std::vector<ValueId>& /*map*/) const {
    return nullptr;
  }
};

class Graph {
 public:
  explicit Graph(std::string name = "fn") : name_(std::move(name)) {}

  // Appends a graph input; returns its value id.
  ValueId add_parameter(TensorType type, std::string name = "");
  // Appends a node after checking arity, attribute kind and input ids, inferring its
  // type with the op's inference rule. Throws glia::Error on bad input.
  ValueId add(Op op, std::vector<ValueId> inputs, Attrs attrs = NoAttrs{});
  // Appends a node as given (for passes that know the type); verify() checks it later.
  ValueId append(Node node);

  const Node& node(ValueId id) const;
  const TensorType& type(ValueId id) const { return node(id).type; }
  // A deque: appending never moves existing nodes, so references to them stay valid.
  const std::deque<Node>& nodes() const { return nodes_; }
  std::int64_t size() const { return static_cast<std::int64_t>(nodes_.size()); }
  const std::vector<ValueId>& parameters() const { return parameters_; }
  const std::vector<ValueId>& outputs() const { return outputs_; }
  void set_outputs(std::vector<ValueId> outputs);
  const std::string& name() const { return name_; }

  void annotate(ValueId id, std::shared_ptr<const Annotation> annotation);
  const Annotation* annotation(ValueId id) const;  // nullptr when none
  const std::map<ValueId, std::shared_ptr<const Annotation>>& annotations() const {
    return annotations_;
  }

 private:
  std::string name_;
  std::deque<Node> nodes_;
  std::vector<ValueId> parameters_;
  std::vector<ValueId> outputs_;
  std::map<ValueId, std::shared_ptr<const Annotation>> annotations_;
};

// Checks the structural invariants: inputs defined before use, arity, attribute kinds,
// parameters numbered in order, outputs valid, and every node's type equal to what its
// op infers. Throws glia::Error naming the node.
void verify(const Graph& graph);

// Dead-code elimination: a copy of the graph without the nodes its outputs do not
// depend on (parameters always stay, so the signature is unchanged). Annotations carry
// over, with the values they read (a loop's body keeps its custom gradients); the
// compiler's passes drop them.
Graph prune(const Graph& graph);

// One node a line, like Nx's expression dump:
//   graph softmax(%0: f32[2][3] x) -> (f32[2][3])
//     %1 = reduce_max %0 [axes=[1], keep_axes=true] : f32[2][1]
//     ...
//     return %9
std::string to_text(const Graph& graph);

// Equal nodes (ops, inputs, attributes, types) and outputs; names aside.
bool same_structure(const Graph& a, const Graph& b);

// A stable 64-bit hash of the graph's structure, attributes, types and outputs
// (not its name): equal graphs have equal fingerprints across runs and machines.
std::uint64_t fingerprint(const Graph& graph);

}  // namespace glia
