// README block 6: a model with two inputs, a shared encoder and two outputs, trained by a
// Loop on named inputs and targets (the tensors are the harness's).
#include <glia/glia.hpp>

void readme_snippet_6(const glia::Tensor& a, const glia::Tensor& b, const glia::Tensor& sums,
                      const glia::Tensor& same) {
#include "snippet_6.inc"
}
