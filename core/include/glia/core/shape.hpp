// Shape: the dimensions of a dense row-major tensor, and TensorType (dtype + shape),
// the static type of every value in the IR.
//   glia::Shape s{2, 3};  s.numel() == 6;  s.to_string() == "[2][3]"
#pragma once

#include <cstdint>
#include <initializer_list>
#include <iosfwd>
#include <string>
#include <vector>

#include "glia/core/dtype.hpp"

namespace glia {

class Shape {
 public:
  Shape() = default;
  Shape(std::initializer_list<std::int64_t> dims);
  explicit Shape(std::vector<std::int64_t> dims);  // throws glia::Error for a negative dim

  int rank() const { return static_cast<int>(dims_.size()); }
  std::int64_t operator[](int axis) const { return dims_[static_cast<std::size_t>(axis)]; }
  std::int64_t dim(int axis) const;  // accepts negative axes; checks range
  std::int64_t numel() const;
  const std::vector<std::int64_t>& dims() const { return dims_; }
  std::vector<std::int64_t> strides() const;  // row-major, in elements
  auto begin() const { return dims_.begin(); }
  auto end() const { return dims_.end(); }

  // Maps a possibly negative axis into [0, rank); `what` names the caller in errors.
  int normalize_axis(std::int64_t axis, std::string_view what) const;

  std::string to_string() const;  // "[2][3]"; a scalar prints as ""
  friend bool operator==(const Shape&, const Shape&) = default;

 private:
  std::vector<std::int64_t> dims_;
};
std::ostream& operator<<(std::ostream& out, const Shape& s);

// A shape seen as (outer, size, inner) around one axis, as gather, scatter_add and argmax
// walk it: element (o, k, i) is at (o * size + k) * inner + i.
struct AxisSplit {
  std::int64_t outer = 1, size = 1, inner = 1;
};
// The split of `shape` at `axis` in [0, rank); glia::Error otherwise. (The axis is
// std::int64_t, as in the ops' attributes.)
AxisSplit split_at(const Shape& shape, std::int64_t axis);

struct TensorType {
  DType dtype = DType::f32;
  Shape shape;
  std::string to_string() const;  // "f32[2][3]"
  friend bool operator==(const TensorType&, const TensorType&) = default;
};
std::ostream& operator<<(std::ostream& out, const TensorType& t);

}  // namespace glia
