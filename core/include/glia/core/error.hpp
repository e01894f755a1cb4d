// glia::Error, the one exception type every user-facing failure throws, and a
// small helper to build its message from pieces.
//   throw glia::Error(glia::cat("dot: ", a.shape(), " vs ", b.shape()));
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>

namespace glia {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

// Concatenates anything printable with operator<< into one string.
template <class... Parts>
std::string cat(const Parts&... parts) {
  std::ostringstream out;
  (out << ... << parts);
  return out.str();
}

namespace detail {
template <class... Parts>
[[noreturn, gnu::cold, gnu::noinline]] void check_failed(const Parts&... parts) {
  throw Error(cat(parts...));
}
}  // namespace detail

// Throws glia::Error with the concatenated message when `ok` is false. The test is inlined
// and the throw is out of line: a passing check costs a branch, not a call that takes
// every part (a run's input checks are a tenth of a tiny predict otherwise).
template <class... Parts>
[[gnu::always_inline]] inline void check(bool ok, const Parts&... parts) {
  if (!ok) [[unlikely]]
    detail::check_failed(parts...);
}

}  // namespace glia
