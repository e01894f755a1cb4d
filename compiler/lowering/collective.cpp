// The collectives' stage: each all_reduce node becomes a CollectiveSpec kernel, offered to
// the target (which may take it or leave it to the reference kernel), its output allowed to
// take its input's storage.
#include "lowering/state.hpp"

namespace glia::lowering {

void lower_collectives(LoweringState& state) {
  const Graph& g = state.graph();
  for (std::int64_t i = 0; i < g.size(); ++i) {
    auto id = static_cast<ValueId>(i);
    const Node& n = state.node(id);
    if (n.op != Op::all_reduce || state.claimed(id)) continue;
    const auto& a = std::get<CollectiveAttrs>(n.attrs);
    Kernel k;
    k.spec = CollectiveSpec{id, a.communicator, a.bucket, n.type.dtype, n.type.shape.numel()};
    k.inputs = {n.inputs[0]};
    k.outputs = {id};
    k.covered = {id};
    k.in_place = {{n.inputs[0], id}};
    state.offer(std::move(k));
  }
}

}  // namespace glia::lowering
