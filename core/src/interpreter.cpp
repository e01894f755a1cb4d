#include "glia/core/interpreter.hpp"

#include "glia/core/scan.hpp"
#include "kernels/kernel_util.hpp"

namespace glia {

namespace {

// Runs the loop of scan node `first` once, for every result its nodes (from `first` on)
// ask for, and stores each node's value.
void run_loop(const Graph& g, std::int64_t first, const std::vector<Tensor>& args,
              std::vector<Tensor>& values) {
  const Node& n = g.nodes()[static_cast<std::size_t>(first)];
  const auto& a = std::get<ScanAttrs>(n.attrs);
  auto result_of = [&](std::int64_t j) {
    return static_cast<std::size_t>(
        std::get<ScanAttrs>(g.nodes()[static_cast<std::size_t>(j)].attrs).result);
  };
  std::vector<std::int64_t> nodes;
  std::vector<bool> wanted(static_cast<std::size_t>(a.carries) + a.body->outputs().size(), false);
  for (std::int64_t j = first; j < g.size(); ++j)
    if (same_loop(n, g.nodes()[static_cast<std::size_t>(j)])) {
      nodes.push_back(j);
      wanted[result_of(j)] = true;
    }
  std::vector<Tensor> results = run_scan(args, a, wanted);
  for (std::int64_t j : nodes) values[static_cast<std::size_t>(j)] = results[result_of(j)];
}

}  // namespace

std::vector<Tensor> interpret(const Graph& g, std::span<const Tensor> inputs) {
  check(inputs.size() == g.parameters().size(), "interpret: graph '", g.name(), "' takes ",
        g.parameters().size(), " input(s), got ", inputs.size());
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const TensorType& want = g.type(g.parameters()[i]);
    check(inputs[i].defined(), "interpret: graph '", g.name(), "' input ", i, " is undefined");
    check(inputs[i].type() == want, "interpret: graph '", g.name(), "' input ", i, " expected ",
          want.to_string(), ", got ", inputs[i].type());
  }
  // Values die after their last use, so peak memory follows the graph's live set.
  std::vector<std::int64_t> last_use(static_cast<std::size_t>(g.size()), -1);
  for (std::int64_t i = 0; i < g.size(); ++i)
    for (ValueId in : g.nodes()[static_cast<std::size_t>(i)].inputs)
      last_use[static_cast<std::size_t>(in)] = i;
  for (ValueId out : g.outputs()) last_use[static_cast<std::size_t>(out)] = g.size();

  std::vector<Tensor> values(static_cast<std::size_t>(g.size()));
  std::vector<Tensor> args;
  for (std::int64_t i = 0; i < g.size(); ++i) {
    const Node& n = g.nodes()[static_cast<std::size_t>(i)];
    args.clear();
    if (n.op == Op::parameter) {
      args.push_back(inputs[static_cast<std::size_t>(std::get<ParameterAttrs>(n.attrs).index)]);
    } else {
      for (ValueId in : n.inputs) args.push_back(values[static_cast<std::size_t>(in)]);
    }
    const OpInfo& info = op_info(n.op);
    check(info.kernel != nullptr, "interpret: the op table has no reference kernel for ",
          info.name);
    if (n.op == Op::scan && !values[static_cast<std::size_t>(i)].defined())
      run_loop(g, i, args, values);
    Tensor result =
        n.op == Op::scan ? values[static_cast<std::size_t>(i)] : info.kernel(args, n.attrs, n.type);
    check(result.type() == n.type, "interpret: kernel of ", op_name(n.op), " at %", i, " returned ",
          result.type(), ", expected ", n.type.to_string());
    values[static_cast<std::size_t>(i)] = std::move(result);
    for (ValueId in : n.inputs)
      if (last_use[static_cast<std::size_t>(in)] == i)
        values[static_cast<std::size_t>(in)] = Tensor();
  }
  std::vector<Tensor> outputs;
  for (ValueId out : g.outputs()) outputs.push_back(values[static_cast<std::size_t>(out)]);
  return outputs;
}

}  // namespace glia
