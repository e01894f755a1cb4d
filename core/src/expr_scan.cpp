// scan (the loop node's tracing API) and call (inlining one graph into a trace).
#include <memory>

#include "glia/core/scan.hpp"
#include "kernels/kernel_util.hpp"

namespace glia {

namespace {

Graph& graph_of_all(const std::vector<Expr>& xs, std::string_view what) {
  Graph* g = nullptr;
  for (std::size_t i = 0; i < xs.size(); ++i) {
    check(xs[i].defined(), what, ": input ", i, " is an undefined Expr");
    check(g == nullptr || xs[i].graph() == g, what, ": input ", i,
          " belongs to another trace than input 0");
    g = xs[i].graph();
  }
  return g ? *g : current_graph();
}

}  // namespace

std::vector<Expr> call(const Graph& fn, const std::vector<Expr>& args,
                       const CallSubstitute& substitute) {
  check(args.size() == fn.parameters().size(), "call: graph '", fn.name(), "' takes ",
        fn.parameters().size(), " inputs, got ", args.size());
  Graph& g = graph_of_all(args, "call");
  check(&g != &fn, "call: graph '", fn.name(), "' cannot be inlined into itself");
  for (std::size_t i = 0; i < args.size(); ++i)
    check(args[i].type() == fn.type(fn.parameters()[i]), "call: graph '", fn.name(), "' input ", i,
          " is ", fn.type(fn.parameters()[i]).to_string(), ", got ", args[i].type());
  std::vector<ValueId> map(static_cast<std::size_t>(fn.size()), -1);
  for (std::int64_t i = 0; i < fn.size(); ++i) {
    const Node& n = fn.nodes()[static_cast<std::size_t>(i)];
    if (n.op == Op::parameter) {
      map[static_cast<std::size_t>(i)] =
          args[static_cast<std::size_t>(std::get<ParameterAttrs>(n.attrs).index)].id();
      continue;
    }
    Node copy = n;
    for (ValueId& in : copy.inputs) in = map[static_cast<std::size_t>(in)];
    ValueId v = g.append(std::move(copy));
    if (substitute) {
      Expr used = substitute(static_cast<ValueId>(i), Expr(&g, v));
      check(used.defined() && used.graph() == &g && used.type() == g.type(v),
            "call: the substitute of %", i, " must be a value of the same trace and type");
      v = used.id();
    }
    map[static_cast<std::size_t>(i)] = v;
  }
  // Trace-time annotations (custom gradients) follow their values into the copy.
  for (const auto& [id, annotation] : fn.annotations())
    if (fn.node(id).op != Op::parameter)
      if (std::shared_ptr<const Annotation> a = annotation->moved(map))
        g.annotate(map[static_cast<std::size_t>(id)], std::move(a));
  std::vector<Expr> out;
  for (ValueId id : fn.outputs()) out.emplace_back(&g, map[static_cast<std::size_t>(id)]);
  return out;
}

bool same_loop(const Node& a, const Node& b) {
  if (a.op != Op::scan || b.op != Op::scan || a.inputs != b.inputs) return false;
  const auto& x = std::get<ScanAttrs>(a.attrs);
  const auto& y = std::get<ScanAttrs>(b.attrs);
  return x.carries == y.carries && x.sequences == y.sequences && x.length == y.length &&
         x.reverse == y.reverse && x.body == y.body;
}

Expr scan_result(const std::vector<Expr>& inputs, ScanAttrs attrs, std::int64_t result) {
  Graph& g = graph_of_all(inputs, "scan");
  std::vector<ValueId> ids;
  for (const Expr& x : inputs) ids.push_back(x.id());
  attrs.result = result;
  return Expr(&g, g.add(Op::scan, std::move(ids), std::move(attrs)));
}

ScanResult scan(const ScanBody& body, const std::vector<Expr>& init,
                const std::vector<Expr>& sequences, const std::vector<Expr>& constants,
                const ScanOptions& options) {
  check(static_cast<bool>(body), "scan: the body function is empty");
  std::vector<Expr> inputs = init;
  inputs.insert(inputs.end(), sequences.begin(), sequences.end());
  inputs.insert(inputs.end(), constants.begin(), constants.end());
  check(!inputs.empty(), "scan: a loop needs at least one carry, sequence or constant");
  graph_of_all(inputs, "scan");
  std::int64_t length = options.length;
  for (std::size_t j = 0; j < sequences.size(); ++j) {
    check(sequences[j].rank() >= 1, "scan: sequence ", j, " is a scalar (", sequences[j].type(),
          "); sequences are stepped along their first axis");
    check(length < 0 || sequences[j].dim(0) == length, "scan: sequence ", j, " is ",
          sequences[j].type(), ", expected ", length, " rows",
          options.length >= 0 ? " (options.length)" : " (as sequence 0)");
    length = sequences[j].dim(0);
  }
  check(length >= 0, "scan: without sequences, options.length must give the number of steps");

  std::vector<TensorType> types;
  for (const Expr& c : init) types.push_back(c.type());
  for (const Expr& s : sequences) {
    Shape step(std::vector<std::int64_t>(s.shape().begin() + 1, s.shape().end()));
    types.push_back({s.dtype(), step});
  }
  for (const Expr& c : constants) types.push_back(c.type());
  const std::size_t k = init.size(), m = sequences.size();
  std::size_t outputs = 0;
  auto traced = [&](const std::vector<Expr>& p) {
    std::vector<Expr> carries(p.begin(), p.begin() + std::ptrdiff_t(k));
    std::vector<Expr> rows(p.begin() + std::ptrdiff_t(k), p.begin() + std::ptrdiff_t(k + m));
    std::vector<Expr> consts(p.begin() + std::ptrdiff_t(k + m), p.end());
    ScanResult r = body(carries, rows, consts);
    check(r.carries.size() == k, "scan: the body returned ", r.carries.size(),
          " carries, expected ", k);
    for (std::size_t j = 0; j < k; ++j)
      check(r.carries[j].defined() && r.carries[j].type() == carries[j].type(),
            "scan: the body returned carry ", j, " as ",
            r.carries[j].defined() ? r.carries[j].type().to_string() : "undefined",
            ", expected it as it came in: ", carries[j].type());
    outputs = r.outputs.size();
    std::vector<Expr> out = r.carries;
    out.insert(out.end(), r.outputs.begin(), r.outputs.end());
    return out;
  };
  auto graph = std::make_shared<Graph>(trace(traced, types, options.name));
  ScanAttrs attrs{Subgraph(std::move(graph)),
                  static_cast<std::int64_t>(k),
                  static_cast<std::int64_t>(m),
                  length,
                  0,
                  options.reverse};
  ScanResult result;
  for (std::size_t r = 0; r < k; ++r)
    result.carries.push_back(scan_result(inputs, attrs, static_cast<std::int64_t>(r)));
  for (std::size_t r = 0; r < outputs; ++r)
    result.outputs.push_back(scan_result(inputs, attrs, static_cast<std::int64_t>(k + r)));
  return result;
}

}  // namespace glia
