// Liveness analysis and greedy arena packing over a graph's computed values.
#include "glia/compiler/memory_plan.hpp"

#include <algorithm>
#include <numeric>

namespace glia {

namespace {

bool planned(const Node& n) { return n.op != Op::parameter && n.op != Op::constant; }

std::int64_t value_bytes(const TensorType& t) {
  return t.shape.numel() * static_cast<std::int64_t>(dtype_size(t.dtype));
}

std::int64_t round_up(std::int64_t n, std::int64_t alignment) {
  return (n + alignment - 1) / alignment * alignment;
}

}  // namespace

std::string MemoryPlan::to_string() const {
  return cat(value_count, " values, peak ", peak_live_bytes, " B live, arena ", arena_bytes, " B");
}

MemoryPlan plan_memory(const Graph& g, std::int64_t alignment) {
  check(alignment > 0, "plan_memory: alignment must be positive, got ", alignment);
  const auto n = static_cast<std::size_t>(g.size());
  MemoryPlan plan;
  plan.offsets.assign(n, -1);
  // A value dies at its last reader; one nobody reads dies where it is born.
  plan.last_use.resize(n);
  std::iota(plan.last_use.begin(), plan.last_use.end(), std::int64_t{0});
  for (std::size_t i = 0; i < n; ++i)
    for (ValueId in : g.nodes()[i].inputs)
      plan.last_use[static_cast<std::size_t>(in)] = static_cast<std::int64_t>(i);
  for (ValueId out : g.outputs()) plan.last_use[static_cast<std::size_t>(out)] = g.size();

  // Peak: while node i runs, its result and every value still to be read are alive.
  std::vector<std::int64_t> freed_after(n + 1, 0);
  std::int64_t live = 0;
  std::vector<std::size_t> order;
  for (std::size_t i = 0; i < n; ++i) {
    const Node& node = g.nodes()[i];
    if (planned(node)) {
      std::int64_t bytes = value_bytes(node.type);
      live += bytes;
      freed_after[static_cast<std::size_t>(std::min<std::int64_t>(plan.last_use[i], g.size()))] +=
          bytes;
      order.push_back(i);
      ++plan.value_count;
    }
    plan.peak_live_bytes = std::max(plan.peak_live_bytes, live);
    live -= freed_after[i];
  }

  // Largest first; each takes the lowest aligned offset clear of every placed value
  // whose lifetime overlaps its own.
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return value_bytes(g.nodes()[a].type) > value_bytes(g.nodes()[b].type);
  });
  struct Placed {
    std::int64_t begin, end, offset, bytes;
  };
  std::vector<Placed> placed;
  for (std::size_t v : order) {
    std::int64_t bytes = value_bytes(g.nodes()[v].type);
    auto begin = static_cast<std::int64_t>(v), end = plan.last_use[v];
    std::vector<Placed> clashes;
    for (const Placed& p : placed)
      if (p.begin <= end && begin <= p.end && p.bytes > 0) clashes.push_back(p);
    std::sort(clashes.begin(), clashes.end(),
              [](const Placed& a, const Placed& b) { return a.offset < b.offset; });
    std::int64_t offset = 0;
    if (bytes > 0)
      for (const Placed& p : clashes) {
        if (offset + bytes <= p.offset) break;
        offset = std::max(offset, round_up(p.offset + p.bytes, alignment));
      }
    plan.offsets[v] = offset;
    plan.arena_bytes = std::max(plan.arena_bytes, round_up(offset + bytes, alignment));
    placed.push_back({begin, end, offset, bytes});
  }
  return plan;
}

}  // namespace glia
