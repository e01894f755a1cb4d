// The JSON writer behind layer and initializer configs. Doubles are written with
// std::to_chars' shortest round-trip form, so a config read back and written again is
// the same text.
#include "layer_config.hpp"

#include <charconv>
#include <cmath>
#include <type_traits>

namespace glia::detail {

std::string json_quote(std::string_view value) {
  std::string s = "\"";
  for (char c : value) {
    switch (c) {
      case '"':
        s += "\\\"";
        break;
      case '\\':
        s += "\\\\";
        break;
      case '\n':
        s += "\\n";
        break;
      case '\t':
        s += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
          s += buf;
        } else {
          s += c;
        }
    }
  }
  return s + "\"";
}

std::string json_number(double value) {
  if (std::isnan(value)) return "\"nan\"";
  if (std::isinf(value)) return value > 0 ? "\"inf\"" : "\"-inf\"";
  char buf[32];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, value);
  std::string s(buf, end);
  // A double that prints like an integer stays a JSON float: "1.0", not "1".
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

namespace {

std::string ints_json(const Ints& values) {
  std::string s = "[";
  for (std::size_t i = 0; i < values.size(); ++i) s += (i ? ", " : "") + std::to_string(values[i]);
  return s + "]";
}

template <class T>
std::string element_json(T v) {
  if constexpr (std::is_same_v<T, bool>)
    return v ? "true" : "false";
  else if constexpr (std::is_integral_v<T>)
    return std::to_string(v);
  else
    return json_number(static_cast<double>(static_cast<float>(v)));
}

std::string element_json(double v) { return json_number(v); }

}  // namespace

ConfigWriter& ConfigWriter::raw(std::string_view key, std::string_view json) {
  if (!body_.empty()) body_ += ", ";
  body_ += json_quote(key);
  body_ += ": ";
  body_ += json;
  return *this;
}

ConfigWriter& ConfigWriter::integer(std::string_view key, std::int64_t value) {
  return raw(key, std::to_string(value));
}
ConfigWriter& ConfigWriter::number(std::string_view key, double value) {
  return raw(key, json_number(value));
}
ConfigWriter& ConfigWriter::boolean(std::string_view key, bool value) {
  return raw(key, value ? "true" : "false");
}
ConfigWriter& ConfigWriter::string(std::string_view key, std::string_view value) {
  return raw(key, json_quote(value));
}
ConfigWriter& ConfigWriter::integers(std::string_view key, const Ints& values) {
  return raw(key, ints_json(values));
}

ConfigWriter& ConfigWriter::pairs(
    std::string_view key, const std::vector<std::pair<std::int64_t, std::int64_t>>& values) {
  std::string s = "[";
  for (std::size_t i = 0; i < values.size(); ++i)
    s += cat(i ? ", " : "", "[", values[i].first, ", ", values[i].second, "]");
  return raw(key, s + "]");
}

ConfigWriter& ConfigWriter::padding(std::string_view key, const Padding& padding) {
  if (padding.pairs.empty()) return string(key, padding.mode);
  return pairs(key, padding.pairs);
}

ConfigWriter& ConfigWriter::channels(std::string_view key, Channels channels) {
  return string(key, channels == Channels::last ? "last" : "first");
}

ConfigWriter& ConfigWriter::initializer(std::string_view key, const Initializer& init) {
  return raw(key, init.config.empty() ? "null" : init.config);
}

ConfigWriter& ConfigWriter::tensor(std::string_view key, const Tensor& value) {
  std::string data = "[";
  visit_dtype(value.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* p = static_cast<const T*>(value.raw_data());
    for (std::int64_t i = 0; i < value.numel(); ++i) data += (i ? ", " : "") + element_json(p[i]);
  });
  std::string s = ConfigWriter()
                      .string("dtype", dtype_name(value.dtype()))
                      .integers("shape", value.shape().dims())
                      .raw("data", data + "]")
                      .str();
  return raw(key, s);
}

}  // namespace glia::detail
