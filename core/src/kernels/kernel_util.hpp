// Internal helpers shared by the reference kernels and inference rules: attribute
// access, index arithmetic and dtype dispatch. Clear before fast.
#pragma once

#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "glia/core/monoid.hpp"
#include "glia/core/op.hpp"

namespace glia::detail {

template <class A>
const A& attrs_as(const Attrs& attrs) {
  return std::get<A>(attrs);
}

// "[2][3], [3]": the types of an op's inputs, for error messages.
std::string types_text(std::span<const TensorType> types);

// Row-major multi-index <-> flat index.
inline std::int64_t ravel(const std::vector<std::int64_t>& index,
                          const std::vector<std::int64_t>& strides) {
  std::int64_t flat = 0;
  for (std::size_t i = 0; i < index.size(); ++i) flat += index[i] * strides[i];
  return flat;
}
inline void unravel(std::int64_t flat, const Shape& shape, std::vector<std::int64_t>& index) {
  index.resize(static_cast<std::size_t>(shape.rank()));
  for (int i = shape.rank() - 1; i >= 0; --i) {
    std::int64_t d = shape[i];
    index[i] = d ? flat % d : 0;
    flat = d ? flat / d : 0;
  }
}

// The accumulator of sums (and dot products) of T in the reference kernels: reduce_sum's
// (monoid.hpp), double for floats and u64 for integers.
template <class T>
using wide_t = monoid<Op::reduce_sum>::acc_t<T>;

// Typed pointers into a tensor (storage type T).
template <class T>
const T* in_ptr(const Tensor& t) {
  return static_cast<const T*>(t.raw_data());
}
template <class T>
T* out_ptr(Tensor& t) {
  return static_cast<T*>(t.raw_data());
}

// Checks an axis list: each in range (negative not allowed here: the IR stores
// normalized axes), no duplicates. `what` names the op.
void check_axes(const Ints& axes, int rank, std::string_view what, bool require_sorted = false);

}  // namespace glia::detail
