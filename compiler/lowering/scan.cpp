// The loop stage: the nodes of one scan (its results) become one ScanSpec kernel.
#include "glia/core/scan.hpp"
#include "lowering/state.hpp"

namespace glia::lowering {

void lower_scans(LoweringState& state) {
  const Graph& g = state.graph();
  for (std::int64_t i = 0; i < g.size(); ++i) {
    auto id = static_cast<ValueId>(i);
    const Node& n = state.node(id);
    if (n.op != Op::scan || state.claimed(id)) continue;
    ScanSpec spec{id, n.inputs, {}};
    Kernel k;
    for (std::int64_t j = i; j < g.size(); ++j) {
      auto other = static_cast<ValueId>(j);
      if (state.claimed(other) || !same_loop(n, state.node(other))) continue;
      spec.results.emplace_back(std::get<ScanAttrs>(state.node(other).attrs).result, other);
      k.outputs.push_back(other);
      k.covered.push_back(other);
    }
    for (ValueId in : n.inputs) add_unique(k.inputs, in);
    k.spec = std::move(spec);
    state.offer(std::move(k));
  }
}

}  // namespace glia::lowering
