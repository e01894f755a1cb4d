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

// Throws glia::Error with the concatenated message when `ok` is false.
template <class... Parts>
void check(bool ok, const Parts&... parts) {
  if (!ok) throw Error(cat(parts...));
}

}  // namespace glia
