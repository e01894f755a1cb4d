// Internal to the lowering: the index maps of fused loads (how a sweep reads an operand
// through a layout op) and a reduction's input as kept/reduced extents.
#pragma once

#include "glia/compiler/program.hpp"

namespace glia::lowering {

// `shape` with these element strides: size-1 axes dropped, axes that step as one merged.
FusedSpec::View make_view(const Shape& shape, const std::vector<std::int64_t>& strides,
                          std::int64_t offset);
FusedSpec::View contiguous_view(const Shape& shape);
// How the result of view op `n` (broadcast, transpose, slice, reverse) reads its operand
// of shape `in`.
FusedSpec::View operand_view(const Node& n, const Shape& in);
// A reduction's input of shape `in` over `axes` as extents, outermost first.
std::vector<FusedSpec::Extent> reduce_extents(const Shape& in, const Ints& axes);

}  // namespace glia::lowering
