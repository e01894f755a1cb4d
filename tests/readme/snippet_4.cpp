// README block 4: the small CNN (after block 3's `using namespace glia`).
#include <iostream>

#include <glia/glia.hpp>

void readme_snippet_4() {
  using namespace glia;
#include "snippet_4.inc"
}
