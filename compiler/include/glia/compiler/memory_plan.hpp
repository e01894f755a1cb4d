// A liveness-based memory plan: when each computed value of a graph is born and dies,
// the peak of bytes alive at once, and offsets that pack every value into one arena.
//   glia::MemoryPlan plan = glia::plan_memory(graph);  // plan.peak_live_bytes, plan.arena_bytes
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "glia/core/graph.hpp"

namespace glia {

inline constexpr std::int64_t kArenaAlignment = 64;

// Only values a kernel computes are planned: parameters belong to the caller and
// constants to the graph. Outputs stay alive to the end of the graph.
struct MemoryPlan {
  std::int64_t value_count = 0;       // planned values
  std::int64_t peak_live_bytes = 0;   // the most bytes of planned values alive at one node
  std::int64_t arena_bytes = 0;       // one arena holding every planned value at its offset
  std::vector<std::int64_t> offsets;  // per value id: byte offset in the arena, -1 if unplanned
  std::vector<std::int64_t>
      last_use;                   // per value id: the last node reading it (size() for outputs)
  std::string to_string() const;  // "3 values, peak 32 B live, arena 128 B"
};

// Buffers with lifetimes [begin, end] (inclusive steps) packed into one arena: those whose
// lifetimes overlap never share bytes; every offset is a multiple of `alignment`; largest
// first, each at the lowest offset that fits (first fit). Backends plan with this at
// their own granularity (kernels rather than nodes).
struct Lifetime {
  std::int64_t begin = 0, end = 0, bytes = 0;
};
struct ArenaLayout {
  std::vector<std::int64_t> offsets;  // per lifetime
  std::int64_t arena_bytes = 0;
  std::int64_t peak_live_bytes = 0;  // the most bytes alive at one step
};
ArenaLayout pack_arena(const std::vector<Lifetime>& lifetimes,
                       std::int64_t alignment = kArenaAlignment);

// Values whose lifetimes overlap never share bytes; every offset is a multiple of
// `alignment`. Offsets are found greedily, largest value first (first fit).
MemoryPlan plan_memory(const Graph& graph, std::int64_t alignment = kArenaAlignment);

}  // namespace glia
