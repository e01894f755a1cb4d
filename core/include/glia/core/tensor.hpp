// Tensor: a dense row-major array with a dtype and a shape over 64-byte-aligned
// shared host storage. Copies share storage; clone() makes a deep copy.
//   auto t = glia::Tensor::from<float>({1, 2, 3, 4, 5, 6}, {2, 3});
//   std::cout << t;   // #Tensor<\n  f32[2][3]\n  [ [1.0, 2.0, 3.0], ... ] >
#pragma once

#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "glia/core/shape.hpp"

namespace glia {

// Converts one element between storage types, going through the compute type.
template <class To, class From>
To convert_element(From v) {
  if constexpr (std::is_same_v<To, bool>) {
    return static_cast<compute_t<From>>(v) != compute_t<From>(0);
  } else if constexpr (std::is_same_v<To, Half> || std::is_same_v<To, BFloat16>) {
    return To(static_cast<float>(static_cast<compute_t<From>>(v)));
  } else {
    return static_cast<To>(static_cast<compute_t<From>>(v));
  }
}

class Tensor {
 public:
  Tensor() = default;                // undefined: no storage
  Tensor(DType dtype, Shape shape);  // zero-filled
  // Storage left uninitialised, for kernels that write every element.
  static Tensor uninitialized(DType dtype, Shape shape);
  // A tensor over storage someone else owns (an executable's arena): `storage` must hold
  // at least numel * dtype_size bytes, 64-byte aligned; sharing it keeps the owner alive.
  static Tensor wrap(DType dtype, Shape shape, std::shared_ptr<std::byte> storage);

  static Tensor zeros(Shape shape, DType dtype = DType::f32);
  static Tensor ones(Shape shape, DType dtype = DType::f32);
  static Tensor full(Shape shape, double value, DType dtype = DType::f32);
  static Tensor scalar(double value, DType dtype = DType::f32);
  // Counts up along `axis`, or through the flattened tensor when no axis is given.
  static Tensor iota(Shape shape, std::optional<int> axis = std::nullopt, DType dtype = DType::i64);
  // Row-major values; their count must match the shape (a 1-D shape by default).
  template <class T>
  static Tensor from(const std::vector<T>& values, std::optional<Shape> shape = std::nullopt);

  bool defined() const { return storage_ != nullptr; }
  const TensorType& type() const { return type_; }
  DType dtype() const { return type_.dtype; }
  const Shape& shape() const { return type_.shape; }
  int rank() const { return type_.shape.rank(); }
  std::int64_t numel() const { return type_.shape.numel(); }
  std::size_t nbytes() const;

  void* raw_data() { return storage_.get(); }
  const void* raw_data() const { return storage_.get(); }
  template <class T>
  T* data();  // checks that T is the storage type of dtype()
  template <class T>
  const T* data() const;

  // The elements converted to T (any dtype to any T).
  template <class T>
  std::vector<T> to_vector() const;
  // The single element of a one-element tensor, converted to T.
  template <class T>
  T item() const;
  double element(std::int64_t flat_index) const;  // converted to double, for tests and printing

  Tensor clone() const;
  Tensor reshape(Shape shape) const;  // shares storage; numel must match
  Tensor cast(DType dtype) const;     // a converted copy
  bool shares_storage_with(const Tensor& other) const { return storage_ == other.storage_; }
  // True when this is the only Tensor holding its storage, so writing it in place is
  // invisible to anyone else (buffer donation).
  bool unique_storage() const { return storage_ != nullptr && storage_.use_count() == 1; }

  // Nx-style text; at most `limit` elements are printed, then "...".
  std::string to_string(std::int64_t limit = 50) const;

 private:
  void check_storage_type(DType expected) const;
  std::shared_ptr<std::byte> storage_;
  TensorType type_;
};
std::ostream& operator<<(std::ostream& out, const Tensor& t);

// Tensor storage allocated so far by this process (every thread), for benchmarks and for
// tests that check a step allocates nothing: counts and bytes only ever grow.
struct AllocationStats {
  std::int64_t count = 0;
  std::int64_t bytes = 0;
};
AllocationStats allocation_stats();

// Same dtype, same shape and bitwise equal elements (NaNs with equal bits are equal).
bool equal(const Tensor& a, const Tensor& b);
// Same shape and |a - b| <= atol + rtol * |b| elementwise (dtypes may differ); NaN matches NaN.
bool allclose(const Tensor& a, const Tensor& b, double rtol = 1e-5, double atol = 1e-8);

template <class T>
Tensor Tensor::from(const std::vector<T>& values, std::optional<Shape> shape) {
  Shape s = shape ? *shape : Shape{static_cast<std::int64_t>(values.size())};
  check(s.numel() == static_cast<std::int64_t>(values.size()), "Tensor::from: ", values.size(),
        " values do not fill shape ", s.to_string(), " (", s.numel(), " elements)");
  constexpr DType dt = dtype_of<T>();
  Tensor t(dt, std::move(s));
  T* out = t.data<T>();
  for (std::size_t i = 0; i < values.size(); ++i) out[i] = values[i];
  return t;
}

template <class T>
T* Tensor::data() {
  check_storage_type(dtype_of<T>());
  return reinterpret_cast<T*>(storage_.get());
}
template <class T>
const T* Tensor::data() const {
  check_storage_type(dtype_of<T>());
  return reinterpret_cast<const T*>(storage_.get());
}

template <class T>
std::vector<T> Tensor::to_vector() const {
  std::vector<T> out(static_cast<std::size_t>(numel()));
  visit_dtype(dtype(), [&](auto tag) {
    using S = decltype(tag);
    const S* in = reinterpret_cast<const S*>(storage_.get());
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = convert_element<T>(in[i]);
  });
  return out;
}

template <class T>
T Tensor::item() const {
  check(numel() == 1, "Tensor::item: expected one element, got ", type_.to_string());
  return to_vector<T>()[0];
}

}  // namespace glia
