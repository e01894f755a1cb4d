// The built-in layers by type, for model_from_json: each remade with its public builder
// from the options its config recorded, so a rebuilt layer is the same layer.
#pragma once

#include <string>
#include <vector>

#include "option_reader.hpp"

namespace glia::detail {

// The layer `type` on `inputs`, unnamed; glia::Error (prefixed with `where`) for an unknown
// type or a wrong number of inputs, and from the options' reads.
Model rebuild_layer(const std::string& type, const std::vector<Model>& inputs,
                    OptionReader& options, const std::string& where);

}  // namespace glia::detail
