#include "kernels/kernel_util.hpp"

#include <algorithm>

namespace glia::detail {

std::string types_text(std::span<const TensorType> types) {
  std::string s;
  for (std::size_t i = 0; i < types.size(); ++i) s += (i ? ", " : "") + types[i].to_string();
  return s;
}

void check_axes(const Ints& axes, int rank, std::string_view what, bool require_sorted) {
  std::vector<bool> seen(static_cast<std::size_t>(rank), false);
  for (std::int64_t a : axes) {
    check(a >= 0 && a < rank, what, ": axis ", a, " is out of range for rank ", rank);
    check(!seen[static_cast<std::size_t>(a)], what, ": axis ", a, " appears twice");
    seen[static_cast<std::size_t>(a)] = true;
  }
  if (require_sorted)
    check(std::is_sorted(axes.begin(), axes.end()), what, ": axes must be sorted");
}

}  // namespace glia::detail
