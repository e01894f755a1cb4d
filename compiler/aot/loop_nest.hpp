// The loop nest of a fused sweep (emit_fused.cpp): the sweep's flat domain split at every
// boundary its views, reductions and iotas step at (suffix products of their dims: these
// nest, each dividing the next), giving levels along which every view steps by a constant
// stride; and where a (dims, strides) map lands at the loop indices.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "glia/compiler/program.hpp"

namespace glia::aot::detail {

struct Nest {
  bool chain = true;                 // the levels below are valid
  std::vector<std::int64_t> extent;  // per level, outermost first
  std::vector<std::int64_t> flat;    // the flat index's step per level
};

// The nest of a sweep; not a chain (one flat level, indices from `t`) where the maps'
// boundaries do not nest.
Nest make_nest(const FusedSpec::Sweep& s);
// Per level, where a (dims, strides) map steps; chain mode only.
std::vector<std::int64_t> level_strides(const Nest& nest, const std::vector<std::int64_t>& dims,
                                        const std::vector<std::int64_t>& strides);
// The offset expression of a map at the current loop indices (chain) or from `t` (not).
std::string offset_expr(const Nest& nest, const std::vector<std::int64_t>& dims,
                        const std::vector<std::int64_t>& strides, std::int64_t offset);
// The flat index at the current loop indices.
std::string flat_expr(const Nest& nest);
// A reduction's extents as a (dims, strides) map onto its result.
void reduction_map(const FusedSpec::Reduction& r, std::vector<std::int64_t>& dims,
                   std::vector<std::int64_t>& strides);
// How many outer levels a map keeps (steps along) before the first it reduces; 0 where the
// nest is not a chain.
std::size_t kept_outer(const Nest& nest, const std::vector<std::int64_t>& dims,
                       const std::vector<std::int64_t>& strides);
// The results one iteration of the kept outer levels' innermost loop covers: one past the
// largest offset the inner levels reach.
std::int64_t inner_block(const Nest& nest, const std::vector<std::int64_t>& dims,
                         const std::vector<std::int64_t>& strides);
// A sweep that draws random words runs its innermost loop (over [lo, hi)) in chunks, each
// chunk's words computed first into a stack array per key a Threefry block at a time: a
// block gives two words, where a word computed on its own wastes one. Opens the chunk loop
// (`c` to `c_end`) and fills words<key> (word f at [1 + f - f0], f0 the chunk's first flat
// index, from keys key<v>_0 and key<v>_1); the caller's innermost loop runs inside it.
std::string random_chunks(const Nest& nest, const std::vector<ValueId>& keys, const std::string& lo,
                          const std::string& hi, const std::string& flat_t);

}  // namespace glia::aot::detail
