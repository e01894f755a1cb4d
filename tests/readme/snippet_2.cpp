// README block 2: value_and_grad over a parameter map, at namespace scope.
#include <map>
#include <string>
#include <tuple>

#include <glia/glia.hpp>

namespace readme_snippet_2 {
#include "snippet_2.inc"
}  // namespace readme_snippet_2
