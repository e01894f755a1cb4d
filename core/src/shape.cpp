#include "glia/core/shape.hpp"

#include <ostream>

namespace glia {

Shape::Shape(std::initializer_list<std::int64_t> dims) : Shape(std::vector<std::int64_t>(dims)) {}

Shape::Shape(std::vector<std::int64_t> dims) : dims_(std::move(dims)) {
  for (std::int64_t d : dims_)
    check(d >= 0, "Shape: dimensions must be non-negative, got ", d, " in ", *this);
}

std::int64_t Shape::dim(int axis) const { return dims_[normalize_axis(axis, "Shape::dim")]; }

std::int64_t Shape::numel() const {
  std::int64_t n = 1;
  for (std::int64_t d : dims_) n *= d;
  return n;
}

std::vector<std::int64_t> Shape::strides() const {
  std::vector<std::int64_t> s(dims_.size());
  std::int64_t step = 1;
  for (int i = rank() - 1; i >= 0; --i) {
    s[i] = step;
    step *= dims_[i];
  }
  return s;
}

int Shape::normalize_axis(std::int64_t axis, std::string_view what) const {
  std::int64_t a = axis < 0 ? axis + rank() : axis;
  check(a >= 0 && a < rank(), what, ": axis ", axis, " is out of range for shape ", *this,
        " of rank ", rank());
  return static_cast<int>(a);
}

std::string Shape::to_string() const {
  std::string s;
  for (std::int64_t d : dims_) s += "[" + std::to_string(d) + "]";
  return s;
}

std::ostream& operator<<(std::ostream& out, const Shape& s) { return out << s.to_string(); }

AxisSplit split_at(const Shape& shape, std::int64_t axis) {
  check(axis >= 0 && axis < shape.rank(), "split_at: axis ", axis, " is out of range for shape ",
        shape, " of rank ", shape.rank());
  AxisSplit s;
  for (int i = 0; i < axis; ++i) s.outer *= shape[i];
  s.size = shape[static_cast<int>(axis)];
  for (int i = static_cast<int>(axis) + 1; i < shape.rank(); ++i) s.inner *= shape[i];
  return s;
}

std::string TensorType::to_string() const {
  return std::string(dtype_name(dtype)) + shape.to_string();
}

std::ostream& operator<<(std::ostream& out, const TensorType& t) { return out << t.to_string(); }

}  // namespace glia
