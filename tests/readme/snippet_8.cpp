// README block 8: a backend's LoweringTarget, lowering a graph (compiled, not linked: the
// sketch declares its member functions without bodies).
#include <string>
#include <string_view>

#include <glia/glia.hpp>

namespace readme_snippet_8 {
extern const glia::Graph& graph;
#include "snippet_8.inc"
}  // namespace readme_snippet_8
