// Placement: every value of a scheduled program gets a home — the caller's tensor, the
// graph's constant, a slice of the one arena (packed from lifetimes over kernel
// positions), or an output buffer that may take a donated input's storage.
#include <algorithm>

#include "lowering/state.hpp"

namespace glia::lowering {

namespace {

std::int64_t value_bytes(const TensorType& t) {
  return t.shape.numel() * static_cast<std::int64_t>(dtype_size(t.dtype));
}

bool reads_in_place(const Kernel& k, ValueId input, ValueId output) {
  return std::find(k.in_place.begin(), k.in_place.end(), std::pair{input, output}) !=
         k.in_place.end();
}

}  // namespace

void place(Program& p, std::int64_t alignment) {
  const Graph& g = p.graph;
  const auto n = static_cast<std::size_t>(g.size());
  const auto count = static_cast<std::int64_t>(p.kernels.size());
  p.placement.assign(n, {});
  std::vector<std::int64_t> last_read(n, -1), produced_at(n, -1);
  std::vector<bool> is_output(n, false);
  for (ValueId out : g.outputs()) is_output[static_cast<std::size_t>(out)] = true;
  for (std::size_t i = 0; i < g.parameters().size(); ++i) {
    Placement& pl = p.placement[static_cast<std::size_t>(g.parameters()[i])];
    pl.kind = Placement::Kind::input;
    pl.index = int(i);
  }
  for (std::size_t i = 0; i < n; ++i)
    if (g.nodes()[i].op == Op::constant) p.placement[i].kind = Placement::Kind::constant;
  for (std::int64_t k = 0; k < count; ++k) {
    const Kernel& kernel = p.kernels[std::size_t(k)];
    for (ValueId in : kernel.inputs) last_read[static_cast<std::size_t>(in)] = k;
    for (ValueId out : kernel.outputs) produced_at[static_cast<std::size_t>(out)] = k;
    for (ValueId t : kernel.temporaries) produced_at[static_cast<std::size_t>(t)] = k;
  }

  std::vector<Lifetime> lifetimes;
  std::vector<ValueId> arena_ids;
  std::vector<bool> donor_taken(g.parameters().size(), false);
  auto in_arena = [&](ValueId v, std::int64_t begin, std::int64_t end) {
    Placement& pl = p.placement[static_cast<std::size_t>(v)];
    pl.kind = Placement::Kind::arena;
    lifetimes.push_back({begin, end, value_bytes(g.type(v))});
    arena_ids.push_back(v);
  };
  for (std::int64_t k = 0; k < count; ++k) {
    const Kernel& kernel = p.kernels[std::size_t(k)];
    for (ValueId out : kernel.outputs) {
      auto o = static_cast<std::size_t>(out);
      if (!is_output[o]) {
        in_arena(out, k, std::max(last_read[o], k));
        continue;
      }
      Placement& pl = p.placement[o];
      pl.kind = Placement::Kind::output;
      pl.index = p.output_slots++;
      // A donor: an input of the same type that no kernel reads after this one (or this
      // one, where it reads it element for element in place), not itself an output.
      const auto& params = g.parameters();
      for (std::size_t i = 0; i < params.size(); ++i) {
        auto pid = static_cast<std::size_t>(params[i]);
        if (donor_taken[i] || is_output[pid] || g.type(params[i]) != g.type(out)) continue;
        std::int64_t last = last_read[pid];
        if (last < k || (last == k && reads_in_place(kernel, params[i], out))) {
          pl.donor = int(i);
          donor_taken[i] = true;
          break;
        }
      }
    }
    for (ValueId t : kernel.temporaries) in_arena(t, k, k);
  }
  ArenaLayout layout = pack_arena(lifetimes, alignment);
  MemoryPlan& plan = p.memory;
  plan.offsets.assign(n, -1);
  for (std::size_t a = 0; a < arena_ids.size(); ++a) {
    auto v = static_cast<std::size_t>(arena_ids[a]);
    p.placement[v].offset = layout.offsets[a];
    plan.offsets[v] = layout.offsets[a];
  }
  plan.last_use.assign(n, -1);
  for (std::size_t v = 0; v < n; ++v)
    plan.last_use[v] = is_output[v] ? count : std::max(last_read[v], produced_at[v]);
  plan.value_count = std::int64_t(arena_ids.size());
  plan.arena_bytes = layout.arena_bytes;
  plan.peak_live_bytes = layout.peak_live_bytes;
}

}  // namespace glia::lowering
