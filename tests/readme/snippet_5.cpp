// README block 5: training with the Loop, on a model and the two splits.
#include <glia/glia.hpp>

void readme_snippet_5(const glia::Model& mlp, const glia::Dataset& train,
                      const glia::Dataset& test) {
#include "snippet_5.inc"
}
