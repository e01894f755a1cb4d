// README block 7: checkpoints, on block 5's loop and training split.
#include <glia/glia.hpp>

void readme_snippet_7(glia::Loop& loop, const glia::Dataset& train) {
  using namespace glia;
#include "snippet_7.inc"
}
