// Internal: the `cpu` backend on oneDNN. The registry installs it itself (when glia is
// built with oneDNN), so static linking can never drop it. No oneDNN types appear here.
#pragma once

#include <memory>

#include "glia/compiler/backend.hpp"

namespace glia::detail {

std::unique_ptr<Backend> make_cpu_backend();

}  // namespace glia::detail
