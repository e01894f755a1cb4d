// Tensor: a dense row-major array with a dtype and a shape, a view of a device-aware Buffer
// (64-byte-aligned host memory unless placed on a device). Copies share storage; clone()
// makes a deep copy; to(device) moves it between devices through their allocators.
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

#include "glia/core/device.hpp"
#include "glia/core/shape.hpp"

namespace glia {

class Buffer;  // glia/core/buffer.hpp

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
  Tensor(DType dtype, Shape shape);  // zero-filled, on the host
  // Storage left uninitialised, for kernels that write every element.
  static Tensor uninitialized(DType dtype, Shape shape, Device device = Device::host());
  // A host tensor over storage someone else owns: `storage` must hold at least
  // numel * dtype_size bytes, 64-byte aligned; holding it keeps the owner alive.
  static Tensor wrap(DType dtype, Shape shape, std::shared_ptr<std::byte> storage);
  // A view of `buffer` from `byte_offset` on, on the buffer's device (slices of an arena):
  // the bytes must fit in the buffer and the offset keep elements aligned. The tensor holds
  // the buffer, so it outlives whoever made it.
  static Tensor wrap(DType dtype, Shape shape, std::shared_ptr<Buffer> buffer,
                     std::size_t byte_offset = 0);
  // A host tensor over `data` that it does NOT own, for kernels that hand a pointer to code
  // taking Tensors: the caller keeps the memory alive while this tensor and its copies live.
  // Costs no allocation; never unique_storage(), so an executable never overwrites it.
  static Tensor borrow(DType dtype, Shape shape, void* data);

  static Tensor zeros(Shape shape, DType dtype = DType::f32);
  static Tensor ones(Shape shape, DType dtype = DType::f32);
  static Tensor full(Shape shape, double value, DType dtype = DType::f32);
  static Tensor scalar(double value, DType dtype = DType::f32);
  // Counts up along `axis`, or through the flattened tensor when no axis is given.
  static Tensor iota(Shape shape, std::optional<int> axis = std::nullopt, DType dtype = DType::i64);
  // Row-major values; their count must match the shape (a 1-D shape by default).
  template <class T>
  static Tensor from(const std::vector<T>& values, std::optional<Shape> shape = std::nullopt);

  bool defined() const { return buffer_ != nullptr; }
  const TensorType& type() const { return type_; }
  DType dtype() const { return type_.dtype; }
  const Shape& shape() const { return type_.shape; }
  int rank() const { return type_.shape.rank(); }
  std::int64_t numel() const { return type_.shape.numel(); }
  std::size_t nbytes() const;
  Device device() const { return device_; }  // the host for an undefined tensor

  // Host access: the elements of a host tensor (null when undefined). On another device
  // every accessor below throws glia::Error naming it; raw_data() stays one predictable
  // branch because the cpu executor calls it for every kernel.
  void* raw_data() { return const_cast<void*>(host_data("Tensor::raw_data")); }
  const void* raw_data() const { return host_data("Tensor::raw_data"); }
  template <class T>
  T* data();  // checks that T is the storage type of dtype()
  template <class T>
  const T* data() const;
  // The address of the first element on device(), unchecked: for executors and device
  // kernels, which know where their tensors live. Host code must not dereference it for a
  // tensor on another device.
  void* data_ptr() { return data_; }
  const void* data_ptr() const { return data_; }

  // A copy on `device`, through the allocators; *this itself when already there.
  Tensor to(Device device) const;
  Tensor to_host() const { return to(Device::host()); }
  // The buffer this tensor views and where in it; null and 0 for undefined and borrowed ones.
  const std::shared_ptr<Buffer>& buffer() const;
  std::size_t byte_offset() const;

  // The elements converted to T (any dtype to any T).
  template <class T>
  std::vector<T> to_vector() const;
  // The single element of a one-element tensor, converted to T.
  template <class T>
  T item() const;
  double element(std::int64_t flat_index) const;  // converted to double, for tests and printing

  Tensor clone() const;               // a deep copy on the same device
  Tensor reshape(Shape shape) const;  // shares storage; numel must match
  Tensor cast(DType dtype) const;     // a converted copy (host only)
  // Rows begin..end-1 along axis 0 (a batch of examples), sharing storage like reshape:
  //   Tensor batch = images.rows(64, 128);   // [64, ...]
  Tensor rows(std::int64_t begin, std::int64_t end) const;
  // Elements begin..end-1 along `axis` (negative counts from the last), as a copy; along
  // axis 0 rows() gives the same values without copying. Host only.
  Tensor slice(int axis, std::int64_t begin, std::int64_t end) const;
  // The index of the largest element along `axis` (negative counts from the last), as i64
  // with that axis removed: a classifier's predicted classes, probabilities.argmax(-1).
  // The first of equal maxima, and the first NaN, as the traced argmax. Host only.
  Tensor argmax(int axis = -1) const;
  // Views of one buffer (at any offsets), or memory at the same address on the same device.
  bool shares_storage_with(const Tensor& other) const;
  // True when this is the only Tensor holding its storage, on any device, so writing it in
  // place is invisible to anyone else (buffer donation). Two views of one buffer are not.
  bool unique_storage() const;

  // Nx-style text; at most `limit` elements are printed, then "...". Host tensors only.
  std::string to_string(std::int64_t limit = 50) const;

 private:
  const void* host_data(const char* what) const {
    if (!device_.is_host()) [[unlikely]]
      throw_not_host(what);
    return data_;
  }
  [[noreturn]] void throw_not_host(const char* what) const;
  void check_storage_type(DType expected) const;
  void attach(std::shared_ptr<Buffer> buffer, std::size_t byte_offset);
  bool borrowed() const;

  std::shared_ptr<Buffer> buffer_;
  std::byte* data_ = nullptr;  // the first element: buffer_'s data plus the view's offset
  TensorType type_;
  Device device_;  // buffer_'s, kept here so that raw_data() need not load the buffer
};
std::ostream& operator<<(std::ostream& out, const Tensor& t);

// Tensor storage allocated so far by this process (every thread, every device: each
// Buffer::allocate), for benchmarks and for tests that check a step allocates nothing;
// wrapped and borrowed memory is not counted. Counts and bytes only ever grow.
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
        " values do not fill shape ", s, " (", s.numel(), " elements)");
  constexpr DType dt = dtype_of<T>();
  Tensor t(dt, std::move(s));
  T* out = t.data<T>();
  for (std::size_t i = 0; i < values.size(); ++i) out[i] = values[i];
  return t;
}

template <class T>
T* Tensor::data() {
  check_storage_type(dtype_of<T>());
  return reinterpret_cast<T*>(data_);
}
template <class T>
const T* Tensor::data() const {
  check_storage_type(dtype_of<T>());
  return reinterpret_cast<const T*>(data_);
}

template <class T>
std::vector<T> Tensor::to_vector() const {
  const void* data = host_data("Tensor::to_vector");
  std::vector<T> out(static_cast<std::size_t>(numel()));
  visit_dtype(dtype(), [&](auto tag) {
    using S = decltype(tag);
    const S* in = static_cast<const S*>(data);
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = convert_element<T>(in[i]);
  });
  return out;
}

template <class T>
T Tensor::item() const {
  check(numel() == 1, "Tensor::item: expected one element, got ", type_);
  return to_vector<T>()[0];
}

}  // namespace glia
