// Strict parsers for flags and config entries, on std::from_chars: it never reads past the
// text, takes no locale and reports out-of-range values instead of clamping them.
#include "args.hpp"

#include <charconv>
#include <cmath>
#include <system_error>

namespace glia::cli {

namespace {

// from_chars over the whole text, after an optional '+' (from_chars takes '-' only).
template <class T>
std::optional<T> parse_whole(std::string_view text) {
  if (!text.empty() && text.front() == '+') {
    text.remove_prefix(1);
    // "+-1" and "++1" are not numbers.
    if (text.empty() || text.front() == '-' || text.front() == '+') return std::nullopt;
  }
  if (text.empty()) return std::nullopt;
  T value{};
  const char* end = text.data() + text.size();
  auto [stop, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc() || stop != end) return std::nullopt;
  return value;
}

}  // namespace

std::optional<std::int64_t> parse_int64(std::string_view text) {
  return parse_whole<std::int64_t>(text);
}

std::optional<std::uint64_t> parse_uint64(std::string_view text) {
  // from_chars refuses '-' for unsigned types itself: no wrap-around as in strtoull("-1").
  return parse_whole<std::uint64_t>(text);
}

std::optional<double> parse_double(std::string_view text) { return parse_whole<double>(text); }

std::string check_positive(std::string_view text) {
  std::optional<double> v = parse_double(text);
  if (!v) return "not a number: " + std::string(text);
  if (!std::isfinite(*v)) return "must be finite, got " + std::string(text);
  if (!(*v > 0)) return "must be positive, got " + std::string(text);
  return {};
}

std::vector<std::string> split_list(std::string_view list) {
  std::vector<std::string> out;
  while (!list.empty()) {
    std::size_t comma = list.find(',');
    std::string_view item = list.substr(0, comma);
    if (!item.empty()) out.emplace_back(item);
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
  return out;
}

}  // namespace glia::cli
