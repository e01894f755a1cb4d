// README block 9: a backend's LoweringTarget, lowering a graph (compiled, not linked: the
// sketch declares its member functions without bodies).
#include <string>
#include <string_view>

#include <glia/glia.hpp>

namespace readme_snippet_9 {
extern const glia::Graph& graph;
#include "snippet_9.inc"
}  // namespace readme_snippet_9
