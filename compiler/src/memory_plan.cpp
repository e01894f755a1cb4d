// Greedy arena packing of lifetimes, and the plan of a graph's reference program.
#include "glia/compiler/memory_plan.hpp"

#include "glia/compiler/lowering.hpp"
#include "lowering/state.hpp"

#include <algorithm>
#include <map>
#include <numeric>

namespace glia {

namespace {

std::int64_t round_up(std::int64_t n, std::int64_t alignment) {
  return (n + alignment - 1) / alignment * alignment;
}

}  // namespace

std::string MemoryPlan::to_string() const {
  return cat(value_count, " values, peak ", peak_live_bytes, " B live, arena ", arena_bytes, " B");
}

ArenaLayout pack_arena(const std::vector<Lifetime>& lifetimes, std::int64_t alignment) {
  check(alignment > 0, "pack_arena: alignment must be positive, got ", alignment);
  ArenaLayout layout;
  layout.offsets.assign(lifetimes.size(), 0);
  // Peak: bytes born at a step minus bytes whose last step was the one before.
  std::map<std::int64_t, std::int64_t> delta;
  for (const Lifetime& l : lifetimes) {
    check(l.begin <= l.end && l.bytes >= 0, "pack_arena: bad lifetime [", l.begin, ", ", l.end,
          "] of ", l.bytes, " bytes");
    delta[l.begin] += l.bytes;
    delta[l.end + 1] -= l.bytes;
  }
  std::int64_t live = 0;
  for (const auto& [step, d] : delta) {
    live += d;
    layout.peak_live_bytes = std::max(layout.peak_live_bytes, live);
  }

  std::vector<std::size_t> order(lifetimes.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return lifetimes[a].bytes > lifetimes[b].bytes;
  });
  std::vector<std::size_t> placed;
  std::vector<std::size_t> clashes;
  for (std::size_t v : order) {
    const Lifetime& l = lifetimes[v];
    clashes.clear();
    for (std::size_t p : placed)
      if (lifetimes[p].begin <= l.end && l.begin <= lifetimes[p].end && lifetimes[p].bytes > 0)
        clashes.push_back(p);
    std::sort(clashes.begin(), clashes.end(),
              [&](std::size_t a, std::size_t b) { return layout.offsets[a] < layout.offsets[b]; });
    std::int64_t offset = 0;
    if (l.bytes > 0)
      for (std::size_t p : clashes) {
        if (offset + l.bytes <= layout.offsets[p]) break;
        offset = std::max(offset, round_up(layout.offsets[p] + lifetimes[p].bytes, alignment));
      }
    layout.offsets[v] = offset;
    layout.arena_bytes = std::max(layout.arena_bytes, round_up(offset + l.bytes, alignment));
    placed.push_back(v);
  }
  return layout;
}

MemoryPlan plan_memory(const Graph& g, std::int64_t alignment) {
  check(alignment > 0, "plan_memory: alignment must be positive, got ", alignment);
  Program program = lower(g, ReferenceTarget("a plan of reference kernels"));
  lowering::place(program, alignment);
  return program.memory;
}

}  // namespace glia
