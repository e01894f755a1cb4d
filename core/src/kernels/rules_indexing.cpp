// Inference and reference kernels of the indexing ops: gather (Nx.take along one axis)
// and its adjoint scatter_add. Indices are checked when the kernel runs: an index out
// of [0, size) is a glia::Error, never a wild read or write.
#include <cstring>
#include <type_traits>

#include "glia/core/monoid.hpp"
#include "kernels/kernel_util.hpp"
#include "rules.hpp"

namespace glia::detail {

namespace {

bool is_index_dtype(DType t) { return is_integer(t); }

// The shape gather gives: x.shape[:axis] + indices.shape + x.shape[axis+1:].
Shape gather_shape(const Shape& x, const Shape& indices, int axis) {
  Ints dims(x.dims().begin(), x.dims().begin() + axis);
  dims.insert(dims.end(), indices.dims().begin(), indices.dims().end());
  dims.insert(dims.end(), x.dims().begin() + axis + 1, x.dims().end());
  return Shape(std::move(dims));
}

// Checks x, indices and the axis common to gather and scatter_add; returns the axis.
int check_gather_operands(std::string_view op, std::span<const TensorType> in, std::int64_t axis) {
  const TensorType& x = in[0];
  const TensorType& indices = in[1];
  check(x.shape.rank() > 0, op, ": the operand must have at least one axis, got ", types_text(in));
  check(axis >= 0 && axis < x.shape.rank(), op, ": axis ", axis, " is out of range for rank ",
        x.shape.rank(), " (", types_text(in), ")");
  check(is_index_dtype(indices.dtype), op,
        ": indices must have an integer dtype (u8, u32, i32, i64), got ", types_text(in));
  return static_cast<int>(axis);
}

// The indices as i64, each checked to lie in [0, size).
std::vector<std::int64_t> read_indices(std::string_view op, const Tensor& indices,
                                       std::int64_t size, int axis) {
  std::vector<std::int64_t> out = indices.to_vector<std::int64_t>();
  for (std::size_t i = 0; i < out.size(); ++i)
    check(out[i] >= 0 && out[i] < size, op, ": index ", out[i], " (at position ", i,
          " of the indices) is out of range for axis ", axis, " of size ", size);
  return out;
}

// ---- gather --------------------------------------------------------------------------

TensorType infer_gather(std::span<const TensorType> in, const Attrs& attrs) {
  int axis = check_gather_operands("gather", in, attrs_as<AxisAttrs>(attrs).axis);
  return {in[0].dtype, gather_shape(in[0].shape, in[1].shape, axis)};
}

Tensor kernel_gather(std::span<const Tensor> in, const Attrs& attrs, const TensorType& out) {
  auto axis = static_cast<int>(attrs_as<AxisAttrs>(attrs).axis);
  AxisSplit s = split_at(in[0].shape(), axis);
  std::vector<std::int64_t> idx = read_indices("gather", in[1], s.size, axis);
  auto n = static_cast<std::int64_t>(idx.size());
  auto bytes = static_cast<std::int64_t>(dtype_size(out.dtype));
  Tensor result(out.dtype, out.shape);
  const auto* x = static_cast<const std::byte*>(in[0].raw_data());  // (outer, size, inner)
  auto* y = static_cast<std::byte*>(result.raw_data());             // (outer, n, inner)
  std::int64_t row = s.inner * bytes;
  if (row == 0) return result;
  for (std::int64_t o = 0; o < s.outer; ++o)
    for (std::int64_t j = 0; j < n; ++j)
      std::memcpy(y + (o * n + j) * row, x + (o * s.size + idx[static_cast<std::size_t>(j)]) * row,
                  static_cast<std::size_t>(row));
  return result;
}

// ---- scatter_add ---------------------------------------------------------------------

TensorType infer_scatter_add(std::span<const TensorType> in, const Attrs& attrs) {
  int axis = check_gather_operands("scatter_add", in, attrs_as<AxisAttrs>(attrs).axis);
  const TensorType& target = in[0];
  check(target.dtype != DType::boolean, "scatter_add: bool targets cannot be added to, got ",
        types_text(in));
  check(in[2].dtype == target.dtype, "scatter_add: updates must have the target's dtype ",
        target.dtype, ", got ", types_text(in));
  Shape want = gather_shape(target.shape, in[1].shape, axis);
  check(in[2].shape == want, "scatter_add: updates must have shape ", want.to_string(),
        " (target[:axis] + indices + target[axis+1:]), got ", types_text(in));
  return target;
}

Tensor kernel_scatter_add(std::span<const Tensor> in, const Attrs& attrs, const TensorType& out) {
  auto axis = static_cast<int>(attrs_as<AxisAttrs>(attrs).axis);
  AxisSplit s = split_at(in[0].shape(), axis);
  std::vector<std::int64_t> idx = read_indices("scatter_add", in[1], s.size, axis);
  auto n = static_cast<std::int64_t>(idx.size());
  Tensor result(out.dtype, out.shape);
  visit_dtype(out.dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (!std::is_same_v<T, bool>) {
      // Float sums accumulate in double, integer sums in u64, wrapping around (the sum
      // monoid's accumulator), and are narrowed at the end.
      using Sum = monoid<Op::reduce_sum>;
      using Acc = Sum::acc_t<T>;
      auto widen = [](T v) { return Sum::widen<T>(static_cast<compute_t<T>>(v)); };
      const T* target = in_ptr<T>(in[0]);   // (outer, size, inner)
      const T* updates = in_ptr<T>(in[2]);  // (outer, n, inner)
      std::vector<Acc> acc(static_cast<std::size_t>(result.numel()));
      for (std::size_t i = 0; i < acc.size(); ++i) acc[i] = widen(target[i]);
      for (std::int64_t o = 0; o < s.outer; ++o)
        for (std::int64_t j = 0; j < n; ++j)
          for (std::int64_t k = 0; k < s.inner; ++k) {
            Acc& slot = acc[static_cast<std::size_t>(
                (o * s.size + idx[static_cast<std::size_t>(j)]) * s.inner + k)];
            slot = Sum::combine<T>(slot, widen(updates[(o * n + j) * s.inner + k]));
          }
      T* y = out_ptr<T>(result);
      for (std::size_t i = 0; i < acc.size(); ++i)
        y[i] = convert_element<T>(Sum::narrow<T>(acc[i]));
    }
  });
  return result;
}

}  // namespace

void add_indexing_rules(OpTable& t) {
  set_rule(t, Op::gather, &infer_gather, &kernel_gather);
  set_rule(t, Op::scatter_add, &infer_scatter_add, &kernel_scatter_add);
}

}  // namespace glia::detail
