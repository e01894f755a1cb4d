// Fuzz harness: model_from_json on any text. A glia::Error is the expected answer to
// text that is not a model (nlohmann's own exceptions must not escape, nor any other).
// A model that is read writes back to JSON that reads to the same JSON again.
#include <stdexcept>
#include <string_view>

#include "fuzz_input.hpp"
#include "glia/layers/serialize.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  glia::Model model;
  try {
    model = glia::model_from_json(std::string_view(reinterpret_cast<const char*>(data), size));
  } catch (const glia::Error&) {
    return 0;
  }
  const std::string text = glia::model_to_json(model);
  if (glia::model_to_json(glia::model_from_json(text)) != text)
    throw std::logic_error("model_to_json(model_from_json(text)) changes the text:\n" + text);
  return 0;
}
