// The reverse-mode transform: walks the graph backwards from the output, calling
// each node's vector-Jacobian rule and summing cotangents of values used several
// times. Only nodes on a path from a requested input to the output are visited.
#include "glia/autograd/grad.hpp"

#include <algorithm>
#include <string>

#include "glia/autograd/vjp.hpp"
#include "scan_vjp.hpp"

namespace glia {

namespace {

// A custom gradient: the marked value's cotangent goes through `vjp` to `inputs`.
struct CustomGradAnnotation : Annotation {
  std::vector<ValueId> inputs;
  CustomVjp vjp;
  // Inlined (a loop's body in its reverse loop): the same vjp over the copied inputs. A
  // vjp reading values of the body's own trace then fails with a clear error.
  std::vector<ValueId> reads() const override { return inputs; }
  std::shared_ptr<const Annotation> moved(const std::vector<ValueId>& map) const override {
    auto copy = std::make_shared<CustomGradAnnotation>(*this);
    for (ValueId& in : copy->inputs) in = map[static_cast<std::size_t>(in)];
    return copy;
  }
};

const CustomGradAnnotation* custom_of(const Graph& g, ValueId id) {
  return dynamic_cast<const CustomGradAnnotation*>(g.annotation(id));
}

// The values a node's gradient flows into: a custom gradient's declared inputs,
// otherwise the node's own inputs.
std::vector<ValueId> flow_inputs(const Graph& g, ValueId id) {
  if (const auto* c = custom_of(g, id)) return c->inputs;
  return g.node(id).inputs;
}

void check_input(const Graph& g, const Expr& x, std::size_t i) {
  check(x.defined(), "grad: input ", i, " is an undefined Expr");
  check(x.graph() == &g, "grad: input ", i, " belongs to another trace than the output");
  check(x.node().op != Op::constant, "grad: input ", i, " (%", x.id(), ", ", x.type().to_string(),
        ") is a constant, not a traced input; differentiate with respect to a function's "
        "arguments");
  check(is_float(x.dtype()), "grad: input ", i, " is ", x.type().to_string(),
        ": gradients exist only for floating-point inputs");
}

}  // namespace

std::vector<Expr> gradients(const Expr& y, const std::vector<Expr>& xs) {
  check(y.defined(), "grad: the output is an undefined Expr");
  Graph& g = *y.graph();
  check(y.rank() == 0, "grad: the output must be a scalar, got ", y.type().to_string(),
        " (reduce it first, e.g. with glia::sum)");
  check(is_float(y.dtype()), "grad: the output must be floating point, got ", y.type().to_string());
  for (std::size_t i = 0; i < xs.size(); ++i) check_input(g, xs[i], i);
  TraceScope scope(g);
  return detail::vjp({y}, {scalar(1, y.dtype())}, xs);
}

namespace detail {

std::vector<Expr> vjp(const std::vector<Expr>& ys, const std::vector<Expr>& seeds,
                      const std::vector<Expr>& xs) {
  check(!ys.empty() && ys.size() == seeds.size(), "vjp: ", ys.size(), " outputs and ", seeds.size(),
        " cotangents");
  Graph& g = *ys[0].graph();
  TraceScope scope(g);
  std::size_t end = 0;
  for (const Expr& y : ys) end = std::max(end, static_cast<std::size_t>(y.id()) + 1);
  // An input made after the outputs cannot influence them: its slot stays empty (zeros).
  std::size_t slots = end;
  for (const Expr& x : xs) slots = std::max(slots, static_cast<std::size_t>(x.id()) + 1);
  // Forward: which values depend on an input; backward: which ones the outputs use.
  std::vector<bool> depends(slots, false), needed(slots, false);
  for (const Expr& x : xs) depends[static_cast<std::size_t>(x.id())] = true;
  for (std::size_t i = 0; i < end; ++i)
    for (ValueId in : flow_inputs(g, static_cast<ValueId>(i)))
      if (depends[static_cast<std::size_t>(in)]) depends[i] = true;
  for (std::size_t j = 0; j < ys.size(); ++j)
    if (seeds[j].defined()) needed[static_cast<std::size_t>(ys[j].id())] = true;
  for (std::size_t i = end; i-- > 0;)
    if (needed[i])
      for (ValueId in : flow_inputs(g, static_cast<ValueId>(i)))
        needed[static_cast<std::size_t>(in)] = true;

  std::vector<Expr> cotangent(slots);
  auto accumulate = [&](ValueId id, const Expr& ct) {
    auto k = static_cast<std::size_t>(id);
    // Integer and boolean values carry no gradient.
    if (!ct.defined() || !depends[k] || !needed[k] || !is_float(g.type(id).dtype)) return;
    check(ct.type() == g.type(id), "grad: internal error: the cotangent of %", id, " (",
          op_name(g.node(id).op), ") is ", ct.type().to_string(), ", expected ",
          g.type(id).to_string());
    cotangent[k] = cotangent[k].defined() ? add(cotangent[k], ct) : ct;
  };
  for (std::size_t j = 0; j < ys.size(); ++j) accumulate(ys[j].id(), seeds[j]);
  const ScanGroups loops(g, end);

  for (std::size_t i = end; i-- > 0;) {
    auto id = static_cast<ValueId>(i);
    if (!depends[i]) continue;
    if (g.node(id).op == Op::scan) {
      // A loop's nodes are differentiated together at its first one, where every
      // result's cotangent is complete.
      const std::vector<ValueId>* members = loops.at_first(id);
      if (members == nullptr) continue;
      std::vector<std::pair<ValueId, Expr>> cts;
      for (ValueId v : *members)
        if (cotangent[static_cast<std::size_t>(v)].defined())
          cts.emplace_back(v, cotangent[static_cast<std::size_t>(v)]);
      if (cts.empty()) continue;
      std::vector<bool> wanted;
      for (ValueId in : g.node(id).inputs) wanted.push_back(depends[static_cast<std::size_t>(in)]);
      std::vector<Expr> in_cts = scan_vjp(g, id, cts, wanted);
      for (std::size_t k = 0; k < in_cts.size(); ++k) accumulate(g.node(id).inputs[k], in_cts[k]);
      continue;
    }
    if (!needed[i] || !cotangent[i].defined()) continue;
    if (const auto* custom = custom_of(g, id)) {
      std::vector<Expr> cts = custom->vjp(cotangent[i]);
      check(cts.size() == custom->inputs.size(), "custom_grad: the vjp returned ", cts.size(),
            " cotangents for ", custom->inputs.size(), " inputs");
      for (std::size_t k = 0; k < cts.size(); ++k) {
        const TensorType& want = g.type(custom->inputs[k]);
        check(!cts[k].defined() || cts[k].graph() == &g, "custom_grad: cotangent ", k,
              " is a value of another trace");
        check(!cts[k].defined() || cts[k].type() == want, "custom_grad: cotangent ", k, " is ",
              cts[k].defined() ? cts[k].type().to_string() : "", ", expected ", want.to_string());
        accumulate(custom->inputs[k], cts[k]);
      }
      continue;
    }
    const Node& node = g.node(id);
    const VjpRule& rule = vjp_rule(node.op);
    // A float value the output depends on, with no rule: dropping its cotangent would give
    // a silently wrong gradient (integer results carry none and never get here).
    check(rule.kind != GradKind::non_differentiable, "grad: cannot differentiate through %", id,
          " = ", op_name(node.op), " (", node.type.to_string(), "): ", rule.why);
    if (rule.kind != GradKind::differentiable) continue;
    VjpArgs args{node, {}, Expr(&g, id), cotangent[i]};
    for (ValueId in : node.inputs) args.inputs.emplace_back(&g, in);
    std::vector<Expr> cts = rule.vjp(args);
    for (std::size_t k = 0; k < cts.size(); ++k) accumulate(node.inputs[k], cts[k]);
  }

  std::vector<Expr> out;
  for (const Expr& x : xs) {
    const Expr& ct = cotangent[static_cast<std::size_t>(x.id())];
    out.push_back(ct.defined() ? ct : zeros(x.shape(), x.dtype()));
  }
  return out;
}

}  // namespace detail

namespace detail {
void check_grad_leaves(std::size_t arg, const std::string& structure,
                       const std::vector<Expr>& leaves) {
  std::vector<std::string> paths = tree_leaf_paths(structure);
  check(paths.size() == leaves.size(), "grad: internal error: ", leaves.size(), " leaves for ",
        structure);
  auto where = [&](std::size_t i) {
    return "grad: argument " + std::to_string(arg) + (structure == "T" ? "" : " leaf " + paths[i]);
  };
  for (std::size_t i = 0; i < leaves.size(); ++i) {
    const Expr& x = leaves[i];
    check(x.defined(), where(i), " is an undefined Expr");
    check(is_float(x.dtype()), where(i), " is ", x.type().to_string(),
          ": gradients exist only for floating-point values");
    check(x.graph() == leaves[0].graph(), where(i), " belongs to another trace than leaf ",
          paths[0]);
  }
}

Expr differentiable_copy(const Expr& x) {
  check(x.defined(), "grad: an argument leaf is an undefined Expr");
  // A same-shape reshape: the identity, with an identity gradient rule.
  return Expr(x.graph(), x.graph()->add(Op::reshape, {x.id()}, ReshapeAttrs{x.shape()}));
}
}  // namespace detail

Expr stop_grad(const Expr& x) {
  check(x.defined(), "stop_grad: the operand is an undefined Expr");
  return Expr(x.graph(), x.graph()->add(Op::stop_gradient, {x.id()}));
}

Expr custom_grad(const Expr& x, const std::vector<Expr>& inputs, CustomVjp vjp) {
  check(x.defined(), "custom_grad: the value is an undefined Expr");
  check(static_cast<bool>(vjp), "custom_grad: the vjp function is empty");
  auto annotation = std::make_shared<CustomGradAnnotation>();
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    check(inputs[i].defined() && inputs[i].graph() == x.graph(), "custom_grad: input ", i,
          " is not a value of the same trace");
    annotation->inputs.push_back(inputs[i].id());
  }
  annotation->vjp = std::move(vjp);
  Expr marked = stop_grad(x);
  x.graph()->annotate(marked.id(), std::move(annotation));
  return marked;
}

}  // namespace glia
