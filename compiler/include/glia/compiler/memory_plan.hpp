// Liveness and arena packing: when each value of a lowered program (program.hpp) is born
// and dies, counted in kernel positions, the peak of bytes alive at once, and offsets that
// pack every arena value into one arena. The lowering plans every backend's program with
// these; plan_memory shows the plan of a graph run one reference kernel per node.
//   glia::MemoryPlan plan = glia::plan_memory(graph);  // plan.peak_live_bytes, plan.arena_bytes
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "glia/core/graph.hpp"

namespace glia {

inline constexpr std::int64_t kArenaAlignment = 64;

// The arena holds the values kernels pass each other (and a kernel's own temporaries);
// parameters belong to the caller, constants to the graph and outputs to buffers of their
// own, so none of them is in it.
struct MemoryPlan {
  std::int64_t value_count = 0;       // values in the arena
  std::int64_t peak_live_bytes = 0;   // the most bytes of arena values alive at one kernel
  std::int64_t arena_bytes = 0;       // one arena holding every arena value at its offset
  std::vector<std::int64_t> offsets;  // per value id: byte offset in the arena, -1 if not in it
  // Per value id: the last kernel position at which the value must still be held — its last
  // reader; the kernel that writes it, when nobody reads it; the kernel count for a graph
  // output; -1 for a parameter or constant nobody reads.
  std::vector<std::int64_t> last_use;
  std::string to_string() const;  // "3 values, peak 32 B live, arena 128 B"
};

// Buffers with lifetimes [begin, end] (inclusive kernel positions) packed into one arena:
// those whose lifetimes overlap never share bytes; every offset is a multiple of
// `alignment`; largest first, each at the lowest offset that fits (first fit).
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

// The plan of `graph` lowered one reference kernel per computed node, in graph order (what
// the interp backend runs).
MemoryPlan plan_memory(const Graph& graph, std::int64_t alignment = kArenaAlignment);

}  // namespace glia
