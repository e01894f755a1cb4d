// The C text the emitters share: types, literals, loops, index expressions, indentation.
#include <cmath>
#include <cstdio>

#include "aot/emitter.hpp"
#include "glia/core/elementwise.hpp"
#include "glia/core/error.hpp"

namespace glia::aot::detail {

std::string c_type(DType t) {
  // Exported C has no 16-bit float type.
  if (t == DType::f16 || t == DType::bf16)
    throw Error(cat("export: no C type for ", dtype_name(t), " values"));
  return std::string(ew_storage_type(t));
}

std::string lit(std::int64_t v) {
  if (v == INT64_MIN) return "(-9223372036854775807LL - 1)";
  std::string s = std::to_string(v);
  return v > INT32_MAX || v < INT32_MIN ? s + "LL" : s;
}

// One element of a constant as a C literal.
std::string element_literal(const Tensor& t, std::int64_t i) {
  char buf[64];
  auto real = [&](double v, bool f32) -> std::string {
    if (v != v) return "NAN";
    if (v == INFINITY) return "INFINITY";
    if (v == -INFINITY) return "-INFINITY";
    if (v == 0) return std::signbit(v) ? "-0.0" : "0";
    std::snprintf(buf, sizeof buf, "%a", v);
    return std::string(buf) + (f32 ? "f" : "");
  };
  switch (t.dtype()) {
    case DType::f32:
      return real(t.data<float>()[i], true);
    case DType::f64:
      return real(t.data<double>()[i], false);
    case DType::i32:
      return lit(t.data<std::int32_t>()[i]);
    case DType::i64:
      return lit(t.data<std::int64_t>()[i]);
    case DType::u8:
      return std::to_string(t.data<std::uint8_t>()[i]);
    case DType::u32:
      return std::to_string(t.data<std::uint32_t>()[i]) + "u";
    case DType::boolean:
      return t.data<bool>()[i] ? "1" : "0";
    default:
      throw Error(cat("export: no C literal for ", dtype_name(t.dtype()), " constants"));
  }
}

// A C string literal of `text`.
std::string c_string_literal(const std::string& text) {
  std::string s = "\"";
  for (char c : text) {
    if (c == '\n')
      s += "\\n\"\n    \"";
    else if (c == '"' || c == '\\')
      s += std::string("\\") + c;
    else
      s += c;
  }
  return s + "\"";
}

// Indents generated statements two spaces per open brace.
std::string indent(const std::string& code, int depth) {
  std::string out, line;
  std::size_t at = 0;
  while (at < code.size()) {
    std::size_t end = code.find('\n', at);
    if (end == std::string::npos) end = code.size();
    line = code.substr(at, end - at);
    at = end + 1;
    int closes = 0;
    while (closes < int(line.size()) && line[std::size_t(closes)] == '}') ++closes;
    depth -= closes > 0 ? 1 : 0;
    if (!line.empty()) out += std::string(std::size_t(std::max(depth, 0)) * 2, ' ') + line;
    out += '\n';
    for (char ch : line) depth += ch == '{' ? 1 : ch == '}' ? -1 : 0;
    depth += closes > 0 ? 1 : 0;
  }
  return out;
}

std::string upper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

// sum(names[i] * strides[i]) over the non-zero strides, from `base`.
std::string index_expr(const std::vector<std::string>& names,
                       const std::vector<std::int64_t>& strides, std::string base) {
  for (std::size_t i = 0; i < names.size() && i < strides.size(); ++i)
    if (strides[i] != 0 && !names[i].empty())
      base += cat(" + ", names[i], strides[i] == 1 ? "" : " * " + lit(strides[i]));
  return base;
}

std::string loop(const std::string& v, std::int64_t n) {
  return cat("for (int64_t ", v, " = 0; ", v, " < ", lit(n), "; ++", v, ") {\n");
}

}  // namespace glia::aot::detail
