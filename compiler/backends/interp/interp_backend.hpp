// Internal: the reference interpreter behind the Backend interface. The registry
// installs it itself, so static linking can never drop it.
#pragma once

#include <memory>

#include "glia/compiler/backend.hpp"

namespace glia::detail {

std::unique_ptr<Backend> make_interp_backend();

}  // namespace glia::detail
