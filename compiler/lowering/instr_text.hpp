// Internal to the writers of generated source (the AOT exporter's C, the cuda backend's
// CUDA C): the expression a fused instruction computes, in elementwise_math.h's functions.
#pragma once

#include <string>

#include "glia/compiler/program.hpp"

namespace glia::lowering {

// The value of a unary, binary, compare, select or cast instruction over operands named
// a, b and c; `cast_type` is the C type a cast converts to. `who` prefixes the error for
// an op that has no C function ("export", "cuda").
std::string computed_value(const FusedSpec::Instr& in, const std::string& a, const std::string& b,
                           const std::string& c, const std::string& cast_type, const char* who);

}  // namespace glia::lowering
