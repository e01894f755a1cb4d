// Fuzz harness: the parsers of numbers and lists behind glia's flags and checkpoint config
// entries (apps/cli/args.hpp), each checked against a reference written here: integers
// against digit-by-digit arithmetic in 128 bits, doubles against strtod, lists against
// the text with its commas removed. A difference throws, and the run reports a crash.
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <string>

#include "args.hpp"
#include "fuzz_input.hpp"

namespace {

void expect(bool ok, const std::string& what, const std::string& text) {
  if (!ok) throw std::logic_error(what + " for '" + text + "'");
}

// The reference integer parser: an optional sign, then 1 or more digits; nullopt when the
// text is anything else or the value leaves [lo, hi].
std::optional<__int128> reference_integer(const std::string& text, bool allow_minus, __int128 lo,
                                          __int128 hi) {
  std::size_t i = 0;
  bool negative = false;
  if (i < text.size() && (text[i] == '+' || (allow_minus && text[i] == '-')))
    negative = text[i++] == '-';
  if (i == text.size()) return std::nullopt;
  __int128 v = 0;
  for (; i < text.size(); ++i) {
    if (text[i] < '0' || text[i] > '9') return std::nullopt;
    v = v * 10 + (text[i] - '0');
    if (v > hi + 1) return std::nullopt;  // beyond any range asked for; no 128-bit overflow
  }
  if (negative) v = -v;
  if (v < lo || v > hi) return std::nullopt;
  return v;
}

void check_integers(const std::string& text) {
  const auto i64 = glia::cli::parse_int64(text);
  const auto ref_i64 = reference_integer(text, true, INT64_MIN, INT64_MAX);
  expect(i64.has_value() == ref_i64.has_value() && (!i64 || *i64 == *ref_i64),
         "parse_int64 differs from the reference", text);
  const auto u64 = glia::cli::parse_uint64(text);
  const auto ref_u64 = reference_integer(text, false, 0, UINT64_MAX);
  expect(u64.has_value() == ref_u64.has_value() && (!u64 || *u64 == *ref_u64),
         "parse_uint64 differs from the reference", text);
}

void check_double(const std::string& text) {
  const std::optional<double> v = glia::cli::parse_double(text);
  const bool digits_only =
      !text.empty() && text.size() <= 30 &&
      text.find_first_not_of("0123456789", text[0] == '-' || text[0] == '+') == std::string::npos &&
      text.find_first_of("0123456789") != std::string::npos;
  expect(!digits_only || v.has_value(), "parse_double refuses an integer", text);
  const std::string positive = glia::cli::check_positive(text);
  expect(positive.empty() == (v && std::isfinite(*v) && *v > 0),
         "check_positive disagrees with parse_double", text);
  if (!v) return;
  // What parse_double accepts, strtod reads whole to the same value (it accepts more:
  // leading spaces, hexadecimal).
  expect(std::strlen(text.c_str()) == text.size() &&
             !std::isspace(static_cast<unsigned char>(text[0])),
         "parse_double accepts a NUL or a leading space", text);
  char* end = nullptr;
  const double ref = std::strtod(text.c_str(), &end);
  expect(end == text.c_str() + text.size(), "parse_double accepts what strtod does not read whole",
         text);
  expect((std::isnan(ref) && std::isnan(*v)) || ref == *v, "parse_double differs from strtod",
         text);
}

void check_list(const std::string& text) {
  std::string joined;
  for (const std::string& item : glia::cli::split_list(text)) {
    expect(!item.empty() && item.find(',') == std::string::npos,
           "split_list gives an empty item or one with a comma", text);
    joined += item;
  }
  std::string without_commas = text;
  std::erase(without_commas, ',');
  expect(joined == without_commas, "split_list loses or adds characters", text);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  check_integers(text);
  check_double(text);
  check_list(text);
  return 0;
}
