// Internal: the `cuda` backend, installed by the registry when glia is built with its code.
#pragma once

#include <memory>

#include "glia/compiler/backend.hpp"

namespace glia::detail {

std::unique_ptr<Backend> make_cuda_backend();

}  // namespace glia::detail
