// A model's architecture as JSON, for checkpoints: every layer with its type, built name,
// inputs and options (initializers with their arguments, frozen parameters), so that the
// model is rebuilt without the code that made it. Custom layers (glia::layer) and custom
// initializers have no JSON description and are rejected.
//   std::string text = glia::model_to_json(model);
//   glia::Model same = glia::model_from_json(text);   // same layers, names, init, predict
#pragma once

#include <string>
#include <string_view>

#include "glia/layers/model.hpp"

namespace glia {

// The model's architecture as JSON text: every layer with its type, name (as built,
// <type>_<k> defaults resolved), inputs and options; input layers with shape and dtype.
std::string model_to_json(const Model& model);
// Rebuilds a model from model_to_json's text; glia::Error on malformed JSON, an unknown
// layer type, a missing or ill-typed option (naming the layer and the option).
Model model_from_json(std::string_view json);

}  // namespace glia
