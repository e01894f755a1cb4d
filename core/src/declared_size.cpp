#include "glia/core/declared_size.hpp"

namespace glia {

DeclaredSize declared_size(const std::vector<std::int64_t>& dims, std::uint64_t element_size,
                           std::uint64_t limit) {
  DeclaredSize s{.bytes = element_size, .empty = false, .fits = element_size <= limit};
  for (std::int64_t d : dims) {
    const auto u = static_cast<std::uint64_t>(d);
    if (u == 0) {
      s.empty = true;
    } else if (s.fits) {
      s.fits = s.bytes <= limit / u;
      s.bytes *= u;
    }
  }
  return s;
}

}  // namespace glia
