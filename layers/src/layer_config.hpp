// The JSON text a built-in layer records as its config (LayerNode::config) and an
// initializer as Initializer::config: a small writer, so that the layer sources need no
// JSON library. serialize.cpp reads these objects back (option_reader.hpp).
//   node->config = detail::ConfigWriter().integer("units", 8).string("activation", "relu").str();
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "glia/layers/convolution.hpp"

namespace glia::detail {

class ConfigWriter {
 public:
  ConfigWriter& integer(std::string_view key, std::int64_t value);
  // Non-finite values are written as the strings "nan", "inf" and "-inf" (JSON has no such
  // numbers); finite ones with the fewest digits that read back to the same double.
  ConfigWriter& number(std::string_view key, double value);
  ConfigWriter& boolean(std::string_view key, bool value);
  ConfigWriter& string(std::string_view key, std::string_view value);
  ConfigWriter& integers(std::string_view key, const Ints& values);
  ConfigWriter& pairs(std::string_view key,
                      const std::vector<std::pair<std::int64_t, std::int64_t>>& values);
  ConfigWriter& padding(std::string_view key, const Padding& padding);  // "same" or [[lo, hi]..]
  ConfigWriter& channels(std::string_view key, Channels channels);      // "last" or "first"
  // The initializer's config; null for a custom one (model_to_json rejects it).
  ConfigWriter& initializer(std::string_view key, const Initializer& init);
  // {"dtype": "f32", "shape": [2, 3], "data": [...]} with exact element values.
  ConfigWriter& tensor(std::string_view key, const Tensor& value);
  std::string str() const { return "{" + body_ + "}"; }

 private:
  ConfigWriter& raw(std::string_view key, std::string_view json);
  std::string body_;
};

// `value` as a JSON string literal.
std::string json_quote(std::string_view value);
// `value` as a JSON number (or "nan"/"inf"/"-inf" strings), read back exactly.
std::string json_number(double value);

}  // namespace glia::detail
