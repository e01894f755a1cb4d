// README block 3: the MNIST MLP, built and run.
#include <iostream>

#include <glia/glia.hpp>

void readme_snippet_3() {
#include "snippet_3.inc"
}
