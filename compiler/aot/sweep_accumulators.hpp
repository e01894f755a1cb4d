// Internal to emit_fused.cpp: where each reduction of a fused sweep accumulates. A
// reduction whose innermost levels are all reduced sums into a local accumulator there;
// others into an accumulator array: on the stack in a ranged sweep (the cpu backend's,
// which threads split), else in the workspace. The statements that start, write and (for
// a whole-array reduction a thread takes part of) hand over each accumulator.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "aot/emitter.hpp"
#include "aot/loop_nest.hpp"
#include "glia/core/error.hpp"

namespace glia::aot::detail {

struct SweepAccumulator {
  std::string name, type, t, m;
  std::size_t level = 0;     // local from this level's loop on; == levels+1: an array
  bool local_array = false;  // an array on the stack (ranged), else in the workspace
  // The monoid's name `what` (acc, identity, widen, combine, narrow) for this type.
  std::string fn(const char* what) const { return cat("glia_", m, "_", what, "_", t); }
};

struct SweepAccumulators {
  std::vector<SweepAccumulator> accs;  // by reduction
  // Per level: statements at the start of that level's loop body (0: before the loops),
  // and after its loop.
  std::vector<std::string> opened, closed;
  std::string pre;                    // before the loops
  std::string to_result, to_partial;  // level-0 locals: their results, or their partials
  std::int64_t scratch = 0;           // workspace bytes the arrays take
  // Whether an accumulator array takes the same element on consecutive iterations of the
  // innermost loop (a dependence that loop carries): then no `ivdep`.
  bool carried = false;
};

// The accumulators of sweep `s` over `nest`; a ranged sweep's partials and merge go to out.
SweepAccumulators place_accumulators(Emitter& e, const FusedSpec::Sweep& s, const Nest& nest,
                                     bool ranged, SweepText& out);

}  // namespace glia::aot::detail
