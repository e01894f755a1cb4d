// README block 1: jit's cache, on parameters and a batch.
#include <iostream>
#include <map>
#include <string>

#include <glia/glia.hpp>

void readme_snippet_1(const std::map<std::string, glia::Tensor>& params, const glia::Tensor& x) {
#include "snippet_1.inc"
}
