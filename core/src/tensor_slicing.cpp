// Tensor's host helpers for working with results: rows (a view of a batch), slice (a copy
// along any axis) and argmax (a classifier's predicted classes).
#include <cstring>

#include "glia/core/error.hpp"
#include "glia/core/tensor.hpp"

namespace glia {

namespace {

// `axis` of a rank-`rank` tensor for `what`, negative counting from the last.
int tensor_axis(const char* what, const TensorType& type, int axis) {
  const int rank = type.shape.rank();
  check(axis >= -rank && axis < rank, what, ": axis ", axis, " is out of range for ", type);
  return axis < 0 ? axis + rank : axis;
}

void check_range(const char* what, const TensorType& type, int axis, std::int64_t begin,
                 std::int64_t end) {
  const std::int64_t n = type.shape[axis];
  check(0 <= begin && begin <= end && end <= n, what, ": [", begin, ", ", end,
        ") is not a range of axis ", axis, " of ", type, " (0 <= begin <= end <= ", n, ")");
}

}  // namespace

Tensor Tensor::rows(std::int64_t begin, std::int64_t end) const {
  check(defined(), "Tensor::rows: the tensor is undefined");
  check(rank() >= 1, "Tensor::rows: a scalar ", type_, " has no rows");
  check_range("Tensor::rows", type_, 0, begin, end);
  std::vector<std::int64_t> dims = shape().dims();
  const std::int64_t row = dims[0] > 0 ? numel() / dims[0] : 0;
  dims[0] = end - begin;
  Tensor t = *this;
  t.type_.shape = Shape(std::move(dims));
  t.data_ = data_ + static_cast<std::size_t>(begin * row) * dtype_size(dtype());
  return t;
}

Tensor Tensor::slice(int axis, std::int64_t begin, std::int64_t end) const {
  const void* data = host_data("Tensor::slice");
  check(defined(), "Tensor::slice: the tensor is undefined");
  axis = tensor_axis("Tensor::slice", type_, axis);
  check_range("Tensor::slice", type_, axis, begin, end);
  const std::vector<std::int64_t>& dims = shape().dims();
  std::int64_t outer = 1, inner = dtype_size(dtype());
  for (int d = 0; d < axis; ++d) outer *= dims[std::size_t(d)];
  for (std::size_t d = std::size_t(axis) + 1; d < dims.size(); ++d) inner *= dims[d];
  std::vector<std::int64_t> out_dims = dims;
  out_dims[std::size_t(axis)] = end - begin;
  Tensor t(dtype(), Shape(std::move(out_dims)));
  const auto* in = static_cast<const std::byte*>(data);
  const std::int64_t n = dims[std::size_t(axis)], take = (end - begin) * inner;
  for (std::int64_t o = 0; o < outer && take > 0; ++o)
    std::memcpy(t.data_ + o * take, in + (o * n + begin) * inner, std::size_t(take));
  return t;
}

Tensor Tensor::argmax(int axis) const {
  const void* data = host_data("Tensor::argmax");
  check(defined(), "Tensor::argmax: the tensor is undefined");
  check(rank() >= 1, "Tensor::argmax: a scalar ", type_, " has no axis");
  axis = tensor_axis("Tensor::argmax", type_, axis);
  const std::vector<std::int64_t>& dims = shape().dims();
  const std::int64_t n = dims[std::size_t(axis)];
  check(n > 0, "Tensor::argmax: axis ", axis, " of ", type_, " is empty");
  std::int64_t outer = 1, inner = 1;
  for (int d = 0; d < axis; ++d) outer *= dims[std::size_t(d)];
  for (std::size_t d = std::size_t(axis) + 1; d < dims.size(); ++d) inner *= dims[d];
  std::vector<std::int64_t> out_dims = dims;
  out_dims.erase(out_dims.begin() + axis);
  Tensor t(DType::i64, Shape(std::move(out_dims)));
  auto* out = t.data<std::int64_t>();
  visit_dtype(dtype(), [&](auto tag) {
    using T = decltype(tag);
    using C = compute_t<T>;
    const T* in = static_cast<const T*>(data);
    for (std::int64_t o = 0; o < outer; ++o)
      for (std::int64_t i = 0; i < inner; ++i) {
        const T* x = in + o * n * inner + i;
        C best = static_cast<C>(x[0]);
        std::int64_t pick = 0;
        for (std::int64_t k = 1; k < n && best == best; ++k) {
          const C v = static_cast<C>(x[k * inner]);
          if (v != v || v > best) best = v, pick = k;  // a NaN wins and stays
        }
        out[o * inner + i] = pick;
      }
  });
  return t;
}

}  // namespace glia
