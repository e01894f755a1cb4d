// README block 8: data-parallel training over MPI, on a model, loss and training split.
#include <glia/glia.hpp>

void readme_snippet_8(const glia::Model& model, const glia::LossFn& loss,
                      const glia::MetricFn& accuracy, const glia::Dataset& data) {
#include "snippet_8.inc"
}
