#include "glia/core/tensor.hpp"

#include <atomic>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <new>
#include <ostream>

namespace glia {

namespace {

constexpr std::size_t kAlignment = 64;

std::atomic<std::int64_t> g_allocations{0};
std::atomic<std::int64_t> g_allocated_bytes{0};

std::shared_ptr<std::byte> allocate(std::size_t nbytes, bool zero) {
  // One byte at least, so that a zero-size tensor still has (unique) storage.
  std::size_t size = (std::max<std::size_t>(nbytes, 1) + kAlignment - 1) / kAlignment * kAlignment;
  void* p = std::aligned_alloc(kAlignment, size);
  if (p == nullptr) throw Error(cat("Tensor: could not allocate ", nbytes, " bytes"));
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  g_allocated_bytes.fetch_add(static_cast<std::int64_t>(size), std::memory_order_relaxed);
  if (zero) std::memset(p, 0, size);
  return std::shared_ptr<std::byte>(static_cast<std::byte*>(p), [](std::byte* q) { std::free(q); });
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
  storage_ = allocate(nbytes(), true);
}

Tensor Tensor::uninitialized(DType dtype, Shape shape) {
  Tensor t;
  t.type_ = TensorType{dtype, std::move(shape)};
  t.storage_ = allocate(t.nbytes(), false);
  return t;
}

Tensor Tensor::wrap(DType dtype, Shape shape, std::shared_ptr<std::byte> storage) {
  check(storage != nullptr, "Tensor::wrap: null storage");
  check(reinterpret_cast<std::uintptr_t>(storage.get()) % kAlignment == 0,
        "Tensor::wrap: storage must be ", kAlignment, "-byte aligned");
  Tensor t;
  t.type_ = TensorType{dtype, std::move(shape)};
  t.storage_ = std::move(storage);
  return t;
}

AllocationStats allocation_stats() {
  return {g_allocations.load(std::memory_order_relaxed),
          g_allocated_bytes.load(std::memory_order_relaxed)};
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
  check(expected == dtype(), "Tensor::data: the tensor holds ", dtype(), ", not ", expected);
}

double Tensor::element(std::int64_t i) const {
  check(i >= 0 && i < numel(), "Tensor::element: index ", i, " out of range for ",
        type_.to_string());
  return visit_dtype(dtype(), [&](auto tag) {
    using T = decltype(tag);
    return convert_element<double>(reinterpret_cast<const T*>(storage_.get())[i]);
  });
}

Tensor Tensor::clone() const {
  if (!defined()) return {};
  Tensor t(dtype(), shape());
  std::memcpy(t.raw_data(), raw_data(), nbytes());
  return t;
}

Tensor Tensor::reshape(Shape shape) const {
  check(shape.numel() == numel(), "Tensor::reshape: cannot reshape ", type_.to_string(), " to ",
        shape.to_string());
  Tensor t = *this;
  t.type_.shape = std::move(shape);
  return t;
}

Tensor Tensor::cast(DType to) const {
  Tensor t(to, shape());
  visit_dtype(dtype(), [&](auto from_tag) {
    using From = decltype(from_tag);
    const From* in = reinterpret_cast<const From*>(storage_.get());
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

bool equal(const Tensor& a, const Tensor& b) {
  if (a.type() != b.type() || a.defined() != b.defined()) return false;
  return !a.defined() || std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) == 0;
}

bool allclose(const Tensor& a, const Tensor& b, double rtol, double atol) {
  if (a.shape() != b.shape()) return false;
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
