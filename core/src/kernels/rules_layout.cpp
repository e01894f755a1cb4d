// Inference and reference kernels of the layout ops: broadcast, reshape, transpose,
// slice, pad, concatenate and reverse. They move elements without arithmetic, so the
// kernels copy bytes and work on every dtype alike.
#include <cstring>

#include "kernels/kernel_util.hpp"
#include "rules.hpp"

namespace glia::detail {

namespace {

// Fills each output element from the input element whose flat index `source(index)`
// returns, or from the single element `fill` where it returns -1.
template <class Source>
Tensor map_elements(const Tensor& in, const TensorType& out_type, Source&& source,
                    const void* fill = nullptr) {
  Tensor out(out_type.dtype, out_type.shape);
  auto size = static_cast<std::size_t>(dtype_size(out_type.dtype));
  const auto* src = static_cast<const std::byte*>(in.raw_data());
  auto* dst = static_cast<std::byte*>(out.raw_data());
  std::vector<std::int64_t> index;
  for (std::int64_t i = 0; i < out.numel(); ++i) {
    unravel(i, out_type.shape, index);
    std::int64_t s = source(index);
    std::memcpy(dst + static_cast<std::size_t>(i) * size,
                s < 0 ? fill : src + static_cast<std::size_t>(s) * size, size);
  }
  return out;
}

std::string ints_text(const Ints& v) {
  std::string s = "[";
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

void check_length(const Ints& v, int rank, std::string_view op, std::string_view field,
                  std::span<const TensorType> in) {
  check(static_cast<int>(v.size()) == rank, op, ": ", field, " needs one entry per axis (", rank,
        ") of ", types_text(in), ", got ", v.size());
}

// ---- broadcast -----------------------------------------------------------------------

TensorType infer_broadcast(std::span<const TensorType> in, const Attrs& attrs) {
  const auto& a = attrs_as<BroadcastAttrs>(attrs);
  const Shape& x = in[0].shape;
  check(static_cast<int>(a.dims.size()) == x.rank(), "broadcast: dims needs one entry per axis (",
        x.rank(), ") of ", types_text(in), ", got ", a.dims.size());
  for (int i = 0; i < x.rank(); ++i) {
    std::int64_t d = a.dims[static_cast<std::size_t>(i)];
    check(d >= 0 && d < a.shape.rank(), "broadcast: dims[", i, "] = ", d,
          " is out of range for the target shape ", a.shape, " of rank ", a.shape.rank());
    // check() evaluates its message parts whatever the outcome: dims[i - 1] only for i > 0.
    if (i > 0) {
      const std::int64_t previous = a.dims[static_cast<std::size_t>(i) - 1];
      check(d > previous, "broadcast: dims must be strictly increasing, got dims[", i, "] = ", d,
            " after ", previous);
    }
    check(x[i] == 1 || x[i] == a.shape[static_cast<int>(d)], "broadcast: cannot broadcast ",
          types_text(in), " to ", a.shape, ": axis ", i, " has size ", x[i],
          " but maps to target axis ", d, " of size ", a.shape[static_cast<int>(d)],
          " (expected 1 or equal)");
  }
  return {in[0].dtype, a.shape};
}

Tensor kernel_broadcast(std::span<const Tensor> in, const Attrs& attrs, const TensorType& out) {
  const auto& a = attrs_as<BroadcastAttrs>(attrs);
  const Shape& x = in[0].shape();
  std::vector<std::int64_t> strides = x.strides();
  return map_elements(in[0], out, [&](const std::vector<std::int64_t>& index) {
    std::int64_t flat = 0;
    for (int i = 0; i < x.rank(); ++i)
      if (x[i] != 1) flat += index[static_cast<std::size_t>(a.dims[i])] * strides[i];
    return flat;
  });
}

// ---- reshape -------------------------------------------------------------------------

TensorType infer_reshape(std::span<const TensorType> in, const Attrs& attrs) {
  const Shape& s = attrs_as<ReshapeAttrs>(attrs).shape;
  check(s.numel() == in[0].shape.numel(), "reshape: cannot reshape ", types_text(in), " (",
        in[0].shape.numel(), " elements) to ", s.to_string(), " (", s.numel(), " elements)");
  return {in[0].dtype, s};
}

Tensor kernel_reshape(std::span<const Tensor> in, const Attrs&, const TensorType& out) {
  return in[0].clone().reshape(out.shape);
}

// ---- transpose -----------------------------------------------------------------------

TensorType infer_transpose(std::span<const TensorType> in, const Attrs& attrs) {
  const Ints& perm = attrs_as<TransposeAttrs>(attrs).perm;
  const Shape& x = in[0].shape;
  check_length(perm, x.rank(), "transpose", "perm", in);
  std::vector<bool> seen(static_cast<std::size_t>(x.rank()), false);
  Ints dims;
  for (std::int64_t p : perm) {
    check(p >= 0 && p < x.rank() && !seen[static_cast<std::size_t>(p)], "transpose: perm ",
          ints_text(perm), " is not a permutation of the axes of ", types_text(in));
    seen[static_cast<std::size_t>(p)] = true;
    dims.push_back(x[static_cast<int>(p)]);
  }
  return {in[0].dtype, Shape(std::move(dims))};
}

Tensor kernel_transpose(std::span<const Tensor> in, const Attrs& attrs, const TensorType& out) {
  const Ints& perm = attrs_as<TransposeAttrs>(attrs).perm;
  std::vector<std::int64_t> strides = in[0].shape().strides();
  return map_elements(in[0], out, [&](const std::vector<std::int64_t>& index) {
    std::int64_t flat = 0;
    for (std::size_t i = 0; i < perm.size(); ++i)
      flat += index[i] * strides[static_cast<std::size_t>(perm[i])];
    return flat;
  });
}

// ---- slice ---------------------------------------------------------------------------

TensorType infer_slice(std::span<const TensorType> in, const Attrs& attrs) {
  const auto& a = attrs_as<SliceAttrs>(attrs);
  const Shape& x = in[0].shape;
  check_length(a.start, x.rank(), "slice", "start", in);
  check_length(a.limit, x.rank(), "slice", "limit", in);
  check_length(a.strides, x.rank(), "slice", "strides", in);
  Ints dims;
  for (int i = 0; i < x.rank(); ++i) {
    auto k = static_cast<std::size_t>(i);
    std::int64_t start = a.start[k], limit = a.limit[k], stride = a.strides[k];
    check(0 <= start && start <= limit && limit <= x[i], "slice: axis ", i, " of ", types_text(in),
          " needs 0 <= start <= limit <= ", x[i], ", got start ", start, ", limit ", limit);
    check(stride >= 1, "slice: axis ", i, " of ", types_text(in), " needs a stride >= 1, got ",
          stride);
    dims.push_back((limit - start + stride - 1) / stride);
  }
  return {in[0].dtype, Shape(std::move(dims))};
}

Tensor kernel_slice(std::span<const Tensor> in, const Attrs& attrs, const TensorType& out) {
  const auto& a = attrs_as<SliceAttrs>(attrs);
  std::vector<std::int64_t> strides = in[0].shape().strides();
  return map_elements(in[0], out, [&](const std::vector<std::int64_t>& index) {
    std::int64_t flat = 0;
    for (std::size_t i = 0; i < index.size(); ++i)
      flat += (a.start[i] + index[i] * a.strides[i]) * strides[i];
    return flat;
  });
}

// ---- pad -----------------------------------------------------------------------------

TensorType infer_pad(std::span<const TensorType> in, const Attrs& attrs) {
  const auto& a = attrs_as<PadAttrs>(attrs);
  const Shape& x = in[0].shape;
  check(in[1].shape.rank() == 0 && in[1].dtype == in[0].dtype,
        "pad: the pad value must be a scalar of the operand's dtype ", in[0].dtype, ", got ",
        types_text(in));
  check_length(a.low, x.rank(), "pad", "low", in);
  check_length(a.high, x.rank(), "pad", "high", in);
  check_length(a.interior, x.rank(), "pad", "interior", in);
  Ints dims;
  for (int i = 0; i < x.rank(); ++i) {
    auto k = static_cast<std::size_t>(i);
    check(a.interior[k] >= 0, "pad: interior padding must be >= 0, got ", a.interior[k],
          " on axis ", i, " of ", types_text(in));
    std::int64_t d =
        a.low[k] + a.high[k] + x[i] + std::max<std::int64_t>(x[i] - 1, 0) * a.interior[k];
    check(d >= 0, "pad: axis ", i, " of ", types_text(in), " would have negative size ", d,
          " (low ", a.low[k], ", high ", a.high[k], ", interior ", a.interior[k], ")");
    dims.push_back(d);
  }
  return {in[0].dtype, Shape(std::move(dims))};
}

Tensor kernel_pad(std::span<const Tensor> in, const Attrs& attrs, const TensorType& out) {
  const auto& a = attrs_as<PadAttrs>(attrs);
  const Shape& x = in[0].shape();
  std::vector<std::int64_t> strides = x.strides();
  // Output position o on an axis is input element (o - low) / (interior + 1) when that
  // division is exact and in range; anything else is padding.
  auto source = [&](const std::vector<std::int64_t>& index) -> std::int64_t {
    std::int64_t flat = 0;
    for (std::size_t i = 0; i < index.size(); ++i) {
      std::int64_t p = index[i] - a.low[i], step = a.interior[i] + 1;
      if (p < 0 || p % step != 0 || p / step >= x[static_cast<int>(i)]) return -1;
      flat += p / step * strides[i];
    }
    return flat;
  };
  return map_elements(in[0], out, source, in[1].raw_data());
}

// ---- concatenate ---------------------------------------------------------------------

TensorType infer_concatenate(std::span<const TensorType> in, const Attrs& attrs) {
  std::int64_t axis = attrs_as<AxisAttrs>(attrs).axis;
  const TensorType& first = in[0];
  check(first.shape.rank() > 0, "concatenate: cannot concatenate scalars, got ", types_text(in));
  check(axis >= 0 && axis < first.shape.rank(), "concatenate: axis ", axis,
        " is out of range for rank ", first.shape.rank(), " (", types_text(in), ")");
  Ints dims = first.shape.dims();
  dims[static_cast<std::size_t>(axis)] = 0;
  for (const TensorType& t : in) {
    check(t.dtype == first.dtype, "concatenate: inputs must have one dtype, got ", types_text(in));
    check(t.shape.rank() == first.shape.rank(), "concatenate: inputs must have one rank, got ",
          types_text(in));
    for (int i = 0; i < t.shape.rank(); ++i)
      check(i == axis || t.shape[i] == first.shape[i],
            "concatenate: inputs must have equal dimensions except on axis ", axis, ", got axis ",
            i, " of sizes ", first.shape[i], " and ", t.shape[i], " in ", types_text(in));
    dims[static_cast<std::size_t>(axis)] += t.shape[static_cast<int>(axis)];
  }
  return {first.dtype, Shape(std::move(dims))};
}

Tensor kernel_concatenate(std::span<const Tensor> in, const Attrs& attrs, const TensorType& out) {
  auto axis = static_cast<int>(attrs_as<AxisAttrs>(attrs).axis);
  Tensor result(out.dtype, out.shape);
  auto size = static_cast<std::int64_t>(dtype_size(out.dtype));
  // Seen as (outer, axis * inner): each input contributes one contiguous block per
  // outer index, in input order.
  std::int64_t outer = 1;
  for (int i = 0; i < axis; ++i) outer *= out.shape[i];
  auto* dst = static_cast<std::byte*>(result.raw_data());
  for (std::int64_t o = 0; o < outer; ++o) {
    for (const Tensor& t : in) {
      std::int64_t block = outer ? t.numel() / outer * size : 0;
      if (block == 0) continue;
      const auto* src = static_cast<const std::byte*>(t.raw_data());
      std::memcpy(dst, src + o * block, static_cast<std::size_t>(block));
      dst += block;
    }
  }
  return result;
}

// ---- reverse -------------------------------------------------------------------------

TensorType infer_reverse(std::span<const TensorType> in, const Attrs& attrs) {
  const Ints& axes = attrs_as<AxesAttrs>(attrs).axes;
  check_axes(axes, in[0].shape.rank(), cat("reverse of ", types_text(in)), true);
  return in[0];
}

Tensor kernel_reverse(std::span<const Tensor> in, const Attrs& attrs, const TensorType& out) {
  const Ints& axes = attrs_as<AxesAttrs>(attrs).axes;
  const Shape& x = in[0].shape();
  std::vector<bool> flip(static_cast<std::size_t>(x.rank()), false);
  for (std::int64_t a : axes) flip[static_cast<std::size_t>(a)] = true;
  std::vector<std::int64_t> strides = x.strides();
  return map_elements(in[0], out, [&](const std::vector<std::int64_t>& index) {
    std::int64_t flat = 0;
    for (std::size_t i = 0; i < index.size(); ++i)
      flat += (flip[i] ? x[static_cast<int>(i)] - 1 - index[i] : index[i]) * strides[i];
    return flat;
  });
}

}  // namespace

void add_layout_rules(OpTable& t) {
  set_rule(t, Op::broadcast, &infer_broadcast, &kernel_broadcast);
  set_rule(t, Op::reshape, &infer_reshape, &kernel_reshape);
  set_rule(t, Op::transpose, &infer_transpose, &kernel_transpose);
  set_rule(t, Op::slice, &infer_slice, &kernel_slice);
  set_rule(t, Op::pad, &infer_pad, &kernel_pad);
  set_rule(t, Op::concatenate, &infer_concatenate, &kernel_concatenate);
  set_rule(t, Op::reverse, &infer_reverse, &kernel_reverse);
}

}  // namespace glia::detail
