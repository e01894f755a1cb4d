// The size a file's header declares for a tensor, checked before anything is allocated:
// the rule the IDX, NPY and checkpoint readers share.
//   DeclaredSize s = declared_size({60000, 28, 28}, 1, limit);  // s.bytes == 47040000
#pragma once

#include <cstdint>
#include <vector>

namespace glia {

// `bytes` is element_size times the product of the non-zero dimensions: an empty tensor's
// strides and per-example sizes still multiply those, so they must fit even where another
// dimension is 0. `fits`: that product stayed within `limit` (computed without overflow
// whatever the dimensions).
struct DeclaredSize {
  std::uint64_t bytes = 0;  // meaningful when fits
  bool empty = false;       // a dimension is 0: the tensor holds no data
  bool fits = true;
  std::uint64_t data_bytes() const { return empty ? 0 : bytes; }
};

// dims: each >= 0.
DeclaredSize declared_size(const std::vector<std::int64_t>& dims, std::uint64_t element_size,
                           std::uint64_t limit);

}  // namespace glia
