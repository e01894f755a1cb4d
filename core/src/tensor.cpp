#include "glia/core/tensor.hpp"

#include <charconv>
#include <cmath>
#include <cstring>
#include <ostream>

#include "glia/core/buffer.hpp"

namespace glia {

namespace {

constexpr std::size_t kAlignment = 64;

// What every borrowed tensor points to: a buffer that owns nothing, held through an empty
// control block so that borrowing and copying a borrowed tensor count no references.
Buffer* borrowed_buffer() {
  // Never destroyed: tensors in static objects may borrow until the very end.
  static auto* keep = new std::shared_ptr<Buffer>(Buffer::adopt(Device::host(), nullptr, 0, {}));
  return keep->get();
}

// The allocator that copies `t`'s bytes: its buffer's, or, for adopted memory, its device's.
std::shared_ptr<Allocator> copier(const Tensor& t) {
  const std::shared_ptr<Buffer>& buffer = t.buffer();
  if (Allocator* a = buffer ? buffer->allocator() : nullptr)
    return std::shared_ptr<Allocator>(std::shared_ptr<Allocator>(), a);  // the buffer holds it
  return allocator_for(t.device());
}

// Shortest round-trip text of a float, always with a decimal point or exponent ("1.0").
std::string format_float(double v, bool single) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "Inf" : "-Inf";
  char buf[64];
  auto res = single ? std::to_chars(buf, buf + sizeof buf, static_cast<float>(v))
                    : std::to_chars(buf, buf + sizeof buf, v);
  std::string s(buf, res.ptr);
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

std::string format_element(const Tensor& t, std::int64_t i) {
  return visit_dtype(t.dtype(), [&](auto tag) -> std::string {
    using T = decltype(tag);
    T v = static_cast<const T*>(t.raw_data())[i];
    if constexpr (std::is_same_v<T, bool>)
      return v ? "true" : "false";
    else if constexpr (std::is_same_v<T, double>)
      return format_float(v, false);
    else if constexpr (std::is_integral_v<T>)
      return std::to_string(v);
    else
      return format_float(static_cast<float>(v), true);
  });
}

// Prints the sub-array at `axis` starting at flat element `offset`, Nx-style.
void print_nested(std::ostream& out, const Tensor& t, int axis, std::int64_t offset,
                  const std::vector<std::int64_t>& strides, std::int64_t& budget, int indent) {
  const Shape& s = t.shape();
  std::string pad(static_cast<std::size_t>(indent), ' ');
  if (axis == s.rank() - 1) {
    out << pad << "[";
    for (std::int64_t i = 0; i < s[axis]; ++i) {
      if (budget <= 0) {
        out << (i ? ", ..." : "...");
        break;
      }
      out << (i ? ", " : "") << format_element(t, offset + i);
      --budget;
    }
    out << "]";
    return;
  }
  out << pad << "[\n";
  for (std::int64_t i = 0; i < s[axis]; ++i) {
    if (budget <= 0) {
      out << pad << "  ...\n";
      break;
    }
    print_nested(out, t, axis + 1, offset + i * strides[axis], strides, budget, indent + 2);
    out << (i + 1 < s[axis] ? ",\n" : "\n");
  }
  out << pad << "]";
}

}  // namespace

Tensor::Tensor(DType dtype, Shape shape) : type_{dtype, std::move(shape)} {
  attach(Buffer::allocate(Device::host(), nbytes()), 0);
  std::memset(data_, 0, buffer_->size());
}

Tensor Tensor::uninitialized(DType dtype, Shape shape, Device device) {
  Tensor t;
  t.type_ = TensorType{dtype, std::move(shape)};
  t.attach(Buffer::allocate(device, t.nbytes()), 0);
  return t;
}

Tensor Tensor::wrap(DType dtype, Shape shape, std::shared_ptr<std::byte> storage) {
  check(storage != nullptr, "Tensor::wrap: null storage");
  check(reinterpret_cast<std::uintptr_t>(storage.get()) % kAlignment == 0,
        "Tensor::wrap: storage must be ", kAlignment, "-byte aligned");
  Tensor t;
  t.type_ = TensorType{dtype, std::move(shape)};
  std::byte* data = storage.get();
  t.attach(Buffer::adopt(Device::host(), data, t.nbytes(), std::move(storage)), 0);
  return t;
}

Tensor Tensor::wrap(DType dtype, Shape shape, std::shared_ptr<Buffer> buffer,
                    std::size_t byte_offset) {
  check(buffer != nullptr, "Tensor::wrap: null buffer");
  Tensor t;
  t.type_ = TensorType{dtype, std::move(shape)};
  std::size_t n = t.nbytes(), size = buffer->size();
  check(byte_offset <= size && n <= size - byte_offset, "Tensor::wrap: ", t.type_, " (", n,
        " bytes) at offset ", byte_offset, " does not fit in a buffer of ", size, " bytes on ",
        buffer->device());
  auto address = reinterpret_cast<std::uintptr_t>(buffer->data()) + byte_offset;
  check(address % static_cast<std::uintptr_t>(dtype_size(dtype)) == 0, "Tensor::wrap: offset ",
        byte_offset, " misaligns ", dtype, " elements");
  t.attach(std::move(buffer), byte_offset);
  return t;
}

Tensor Tensor::borrow(DType dtype, Shape shape, void* data) {
  Tensor t;
  t.type_ = TensorType{dtype, std::move(shape)};
  check(data != nullptr || t.nbytes() == 0, "Tensor::borrow: null data for ", t.type_);
  check(
      reinterpret_cast<std::uintptr_t>(data) % static_cast<std::uintptr_t>(dtype_size(dtype)) == 0,
      "Tensor::borrow: data misaligned for ", dtype, " elements");
  t.buffer_ = std::shared_ptr<Buffer>(std::shared_ptr<Buffer>(), borrowed_buffer());
  t.data_ = static_cast<std::byte*>(data);
  return t;
}

void Tensor::attach(std::shared_ptr<Buffer> buffer, std::size_t byte_offset) {
  data_ = static_cast<std::byte*>(buffer->data()) + byte_offset;
  device_ = buffer->device();
  buffer_ = std::move(buffer);
}

bool Tensor::borrowed() const { return buffer_.get() == borrowed_buffer(); }

const std::shared_ptr<Buffer>& Tensor::buffer() const {
  static const std::shared_ptr<Buffer> none;
  return borrowed() ? none : buffer_;
}

std::size_t Tensor::byte_offset() const {
  if (!defined() || borrowed()) return 0;
  return static_cast<std::size_t>(data_ - static_cast<std::byte*>(buffer_->data()));
}

bool Tensor::shares_storage_with(const Tensor& other) const {
  if (!defined() || !other.defined() || device_ != other.device_) return false;
  if (buffer_ == other.buffer_ && !borrowed()) return true;
  const void* a = borrowed() ? data_ : buffer_->data();
  const void* b = other.borrowed() ? other.data_ : other.buffer_->data();
  return a != nullptr && a == b;
}

bool Tensor::unique_storage() const { return buffer_.use_count() == 1 && buffer_->sole_holder(); }

Tensor Tensor::to(Device device) const {
  if (!defined() || device == device_) return *this;
  if (!device_.is_host() && !device.is_host()) return to_host().to(device);  // via the host
  Tensor t = uninitialized(dtype(), shape(), device);
  std::size_t n = nbytes();
  if (n == 0) return t;
  if (device_.is_host())
    copier(t)->copy_from_host(t.data_, data_, n);
  else
    copier(*this)->copy_to_host(t.data_, data_, n);
  return t;
}

void Tensor::throw_not_host(const char* what) const {
  throw Error(cat(what, ": the tensor (", type_.to_string(), ") is on ", device_,
                  ", which host code cannot read; copy it with to_host() first"));
}

std::size_t Tensor::nbytes() const {
  return static_cast<std::size_t>(numel()) * static_cast<std::size_t>(dtype_size(dtype()));
}

Tensor Tensor::zeros(Shape shape, DType dtype) { return Tensor(dtype, std::move(shape)); }
Tensor Tensor::ones(Shape shape, DType dtype) { return full(std::move(shape), 1.0, dtype); }

Tensor Tensor::full(Shape shape, double value, DType dtype) {
  Tensor t(dtype, std::move(shape));
  visit_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    T v = convert_element<T>(value);
    T* p = t.data<T>();
    for (std::int64_t i = 0; i < t.numel(); ++i) p[i] = v;
  });
  return t;
}

Tensor Tensor::scalar(double value, DType dtype) { return full(Shape{}, value, dtype); }

Tensor Tensor::iota(Shape shape, std::optional<int> axis, DType dtype) {
  Tensor t(dtype, std::move(shape));
  const Shape& s = t.shape();
  std::int64_t inner = 1, size = s.numel();
  if (axis) {
    int a = s.normalize_axis(*axis, "Tensor::iota");
    inner = s.strides()[a];
    size = s[a];
  }
  visit_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    T* p = t.data<T>();
    for (std::int64_t i = 0; i < t.numel(); ++i)
      p[i] = convert_element<T>(static_cast<double>((i / inner) % std::max<std::int64_t>(size, 1)));
  });
  return t;
}

void Tensor::check_storage_type(DType expected) const {
  check(defined(), "Tensor: access to an undefined tensor");
  host_data("Tensor::data");
  check(expected == dtype(), "Tensor::data: the tensor holds ", dtype(), ", not ", expected);
}

double Tensor::element(std::int64_t i) const {
  check(i >= 0 && i < numel(), "Tensor::element: index ", i, " out of range for ", type_);
  return visit_dtype(dtype(), [&](auto tag) {
    using T = decltype(tag);
    return convert_element<double>(static_cast<const T*>(host_data("Tensor::element"))[i]);
  });
}

Tensor Tensor::clone() const {
  if (!defined()) return {};
  std::size_t n = nbytes();
  if (device_.is_host()) {
    Tensor t(dtype(), shape());
    if (n > 0) std::memcpy(t.data_, data_, n);
    return t;
  }
  Tensor t = uninitialized(dtype(), shape(), device_);
  if (n > 0) copier(t)->copy_within(t.data_, data_, n);
  return t;
}

Tensor Tensor::reshape(Shape shape) const {
  check(shape.numel() == numel(), "Tensor::reshape: cannot reshape ", type_, " to ", shape);
  Tensor t = *this;
  t.type_.shape = std::move(shape);
  return t;
}

Tensor Tensor::cast(DType to) const {
  const void* data = host_data("Tensor::cast");
  Tensor t(to, shape());
  visit_dtype(dtype(), [&](auto from_tag) {
    using From = decltype(from_tag);
    const From* in = static_cast<const From*>(data);
    visit_dtype(to, [&](auto to_tag) {
      using To = decltype(to_tag);
      To* out = t.data<To>();
      for (std::int64_t i = 0; i < numel(); ++i) out[i] = convert_element<To>(in[i]);
    });
  });
  return t;
}

std::string Tensor::to_string(std::int64_t limit) const {
  std::ostringstream out;
  out << "#Tensor<\n  " << type_.to_string() << "\n";
  if (!defined()) {
    out << "  undefined\n>";
    return out.str();
  }
  host_data("Tensor::to_string");
  std::int64_t budget = limit;
  if (rank() == 0) {
    out << "  " << format_element(*this, 0) << "\n>";
    return out.str();
  }
  print_nested(out, *this, 0, 0, shape().strides(), budget, 2);
  out << "\n>";
  return out.str();
}

std::ostream& operator<<(std::ostream& out, const Tensor& t) { return out << t.to_string(); }

namespace {
void check_on_host(const Tensor& a, const Tensor& b, const char* what) {
  check(a.device().is_host() && b.device().is_host(), what, ": compares host tensors, not ",
        a.device(), " and ", b.device(), "; copy them with to_host() first");
}
}  // namespace

bool equal(const Tensor& a, const Tensor& b) {
  if (a.type() != b.type() || a.defined() != b.defined()) return false;
  check_on_host(a, b, "equal");
  return !a.defined() || std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) == 0;
}

bool allclose(const Tensor& a, const Tensor& b, double rtol, double atol) {
  if (a.shape() != b.shape()) return false;
  check_on_host(a, b, "allclose");
  for (std::int64_t i = 0; i < a.numel(); ++i) {
    double x = a.element(i), y = b.element(i);
    if (std::isnan(x) || std::isnan(y)) {
      if (std::isnan(x) != std::isnan(y)) return false;
      continue;
    }
    if (x == y) continue;  // equal infinities
    if (!(std::abs(x - y) <= atol + rtol * std::abs(y))) return false;
  }
  return true;
}

}  // namespace glia
