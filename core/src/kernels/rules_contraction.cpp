// Inference and reference kernels of the contractions: dot_general (XLA's DotGeneral)
// and convolution (XLA's ConvGeneralDilated with the fixed layout of ConvAttrs).
// Floats accumulate in double; integers wrap like the element type.
#include <cstdint>
#include <type_traits>

#include "kernels/kernel_util.hpp"
#include "rules.hpp"

namespace glia::detail {

namespace {

template <class T>
wide_t<T> widen(T v) {
  return static_cast<wide_t<T>>(static_cast<compute_t<T>>(v));
}

void check_operands(std::string_view op, std::span<const TensorType> in) {
  check(in[0].dtype == in[1].dtype, op, ": operands must have one dtype, got ", types_text(in));
  check(in[0].dtype != DType::boolean, op, ": expected a numeric dtype (not bool), got ",
        types_text(in));
}

// ---- dot_general ---------------------------------------------------------------------

// The axes of a rank-`rank` operand that are neither batch nor contracting, in order.
Ints free_axes(int rank, const Ints& batch, const Ints& contract) {
  std::vector<bool> used(static_cast<std::size_t>(rank), false);
  for (std::int64_t a : batch) used[static_cast<std::size_t>(a)] = true;
  for (std::int64_t a : contract) used[static_cast<std::size_t>(a)] = true;
  Ints free;
  for (int i = 0; i < rank; ++i)
    if (!used[static_cast<std::size_t>(i)]) free.push_back(i);
  return free;
}

Ints joined(const Ints& a, const Ints& b) {
  Ints all = a;
  all.insert(all.end(), b.begin(), b.end());
  return all;
}

TensorType infer_dot_general(std::span<const TensorType> in, const Attrs& attrs) {
  const auto& a = attrs_as<DotAttrs>(attrs);
  check_operands("dot_general", in);
  const Shape& l = in[0].shape;
  const Shape& r = in[1].shape;
  std::string what = cat("dot_general of ", types_text(in));
  check(a.lhs_contract.size() == a.rhs_contract.size(), what, ": ", a.lhs_contract.size(),
        " lhs contracting axes but ", a.rhs_contract.size(), " rhs contracting axes");
  check(a.lhs_batch.size() == a.rhs_batch.size(), what, ": ", a.lhs_batch.size(),
        " lhs batch axes but ", a.rhs_batch.size(), " rhs batch axes");
  // One list per side: in range, and no axis both batch and contracting (or twice).
  check_axes(joined(a.lhs_batch, a.lhs_contract), l.rank(), what + " (lhs batch + contracting)");
  check_axes(joined(a.rhs_batch, a.rhs_contract), r.rank(), what + " (rhs batch + contracting)");
  for (std::size_t i = 0; i < a.lhs_contract.size(); ++i) {
    auto la = static_cast<int>(a.lhs_contract[i]), ra = static_cast<int>(a.rhs_contract[i]);
    check(l[la] == r[ra], what, ": contracting dimensions differ: lhs axis ", la, " has size ",
          l[la], ", rhs axis ", ra, " has size ", r[ra]);
  }
  Ints dims;
  for (std::size_t i = 0; i < a.lhs_batch.size(); ++i) {
    auto la = static_cast<int>(a.lhs_batch[i]), ra = static_cast<int>(a.rhs_batch[i]);
    check(l[la] == r[ra], what, ": batch dimensions differ: lhs axis ", la, " has size ", l[la],
          ", rhs axis ", ra, " has size ", r[ra]);
    dims.push_back(l[la]);
  }
  for (std::int64_t ax : free_axes(l.rank(), a.lhs_batch, a.lhs_contract))
    dims.push_back(l[static_cast<int>(ax)]);
  for (std::int64_t ax : free_axes(r.rank(), a.rhs_batch, a.rhs_contract))
    dims.push_back(r[static_cast<int>(ax)]);
  return {in[0].dtype, Shape(std::move(dims))};
}

// Offsets into an operand for every multi-index over `axes` (row-major over those axes).
std::vector<std::int64_t> offsets_over(const Shape& shape, const Ints& axes) {
  std::vector<std::int64_t> strides = shape.strides();
  std::vector<std::int64_t> offsets{0};
  for (std::int64_t ax : axes) {
    std::vector<std::int64_t> next;
    for (std::int64_t base : offsets)
      for (std::int64_t k = 0; k < shape[static_cast<int>(ax)]; ++k)
        next.push_back(base + k * strides[static_cast<std::size_t>(ax)]);
    offsets = std::move(next);
  }
  return offsets;
}

Tensor kernel_dot_general(std::span<const Tensor> in, const Attrs& attrs,
                          const TensorType& out_type) {
  const auto& a = attrs_as<DotAttrs>(attrs);
  const Shape& ls = in[0].shape();
  const Shape& rs = in[1].shape();
  // out = (batch..., lhs free..., rhs free...): the batch offsets pair up element-wise.
  std::vector<std::int64_t> lb = offsets_over(ls, a.lhs_batch);
  std::vector<std::int64_t> rb = offsets_over(rs, a.rhs_batch);
  std::vector<std::int64_t> lf =
      offsets_over(ls, free_axes(ls.rank(), a.lhs_batch, a.lhs_contract));
  std::vector<std::int64_t> rf =
      offsets_over(rs, free_axes(rs.rank(), a.rhs_batch, a.rhs_contract));
  std::vector<std::int64_t> lc = offsets_over(ls, a.lhs_contract);
  std::vector<std::int64_t> rc = offsets_over(rs, a.rhs_contract);
  Tensor out(out_type.dtype, out_type.shape);
  if (out.numel() == 0) return out;
  visit_dtype(in[0].dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (!std::is_same_v<T, bool>) {
      const T* x = in_ptr<T>(in[0]);
      const T* w = in_ptr<T>(in[1]);
      T* y = out_ptr<T>(out);
      std::int64_t o = 0;
      for (std::size_t b = 0; b < lb.size(); ++b)
        for (std::int64_t li : lf)
          for (std::int64_t ri : rf) {
            wide_t<T> acc = 0;
            for (std::size_t k = 0; k < lc.size(); ++k)
              acc += widen(x[lb[b] + li + lc[k]]) * widen(w[rb[b] + ri + rc[k]]);
            y[o++] = convert_element<T>(acc);
          }
    }
  });
  return out;
}

// ---- convolution ---------------------------------------------------------------------

// The size of d elements with r-1 holes between neighbours.
std::int64_t dilated(std::int64_t d, std::int64_t r) { return d == 0 ? 0 : (d - 1) * r + 1; }

TensorType infer_convolution(std::span<const TensorType> in, const Attrs& attrs) {
  const auto& a = attrs_as<ConvAttrs>(attrs);
  std::string what = cat("convolution of ", types_text(in));
  const Shape& x = in[0].shape;
  const Shape& w = in[1].shape;
  check(x.rank() == w.rank() && x.rank() >= 3, what,
        ": input [N, C, spatial...] and kernel [O, C/feature_groups, spatial...] must have one "
        "rank of at least 3");
  check_operands(what, in);
  auto spatial = static_cast<std::size_t>(x.rank() - 2);
  auto check_len = [&](const Ints& v, std::string_view name, bool positive) {
    check(v.size() == spatial, what, ": ", name, " has ", v.size(), " entries, expected ", spatial,
          " (one per spatial axis)");
    if (positive)
      for (std::int64_t e : v) check(e >= 1, what, ": ", name, " must be >= 1, got ", e);
  };
  check_len(a.strides, "strides", true);
  check_len(a.padding_low, "padding_low", false);
  check_len(a.padding_high, "padding_high", false);
  check_len(a.input_dilation, "input_dilation", true);
  check_len(a.kernel_dilation, "kernel_dilation", true);
  std::int64_t fg = a.feature_groups, bg = a.batch_groups;
  check(fg >= 1 && bg >= 1, what, ": feature_groups and batch_groups must be >= 1, got ", fg,
        " and ", bg);
  check(fg == 1 || bg == 1, what, ": feature_groups (", fg, ") and batch_groups (", bg,
        ") cannot both exceed 1");
  std::int64_t n = x[0], c = x[1], o = w[0];
  check(c % fg == 0, what, ": input channels (", c, ") are not divisible by feature_groups (", fg,
        ")");
  check(o % fg == 0, what, ": output channels (", o, ") are not divisible by feature_groups (", fg,
        ")");
  check(w[1] == c / fg, what, ": the kernel has ", w[1], " input channels, expected ", c / fg,
        " (input channels ", c, " / feature_groups ", fg, ")");
  check(n % bg == 0, what, ": batch (", n, ") is not divisible by batch_groups (", bg, ")");
  check(o % bg == 0, what, ": output channels (", o, ") are not divisible by batch_groups (", bg,
        ")");
  Ints dims{n / bg, o};
  for (std::size_t i = 0; i < spatial; ++i) {
    int d = static_cast<int>(i) + 2;
    std::int64_t padded = a.padding_low[i] + dilated(x[d], a.input_dilation[i]) + a.padding_high[i];
    check(padded >= 0, what, ": spatial axis ", i, " has negative size ", padded,
          " after dilation and padding");
    std::int64_t window = dilated(w[d], a.kernel_dilation[i]);
    // As in XLA, a window that does not fit gives no output positions.
    dims.push_back(padded == 0 || window > padded ? 0 : (padded - window) / a.strides[i] + 1);
  }
  return {in[0].dtype, Shape(std::move(dims))};
}

Tensor kernel_convolution(std::span<const Tensor> in, const Attrs& attrs,
                          const TensorType& out_type) {
  const auto& a = attrs_as<ConvAttrs>(attrs);
  const Shape& xs = in[0].shape();   // (N, C, S...)
  const Shape& ws = in[1].shape();   // (O, C/fg, K...)
  const Shape& ys = out_type.shape;  // (N/bg, O, Q...)
  auto spatial = static_cast<std::size_t>(xs.rank() - 2);
  std::int64_t n_out = ys[0], o_count = ys[1], cg = ws[1];
  std::int64_t o_per_fg = o_count / a.feature_groups, o_per_bg = o_count / a.batch_groups;
  Shape q_shape(Ints(ys.dims().begin() + 2, ys.dims().end()));
  Shape k_shape(Ints(ws.dims().begin() + 2, ws.dims().end()));
  std::vector<std::int64_t> x_strides = xs.strides(), w_strides = ws.strides();
  Ints dilated_in(spatial);
  for (std::size_t d = 0; d < spatial; ++d)
    dilated_in[d] = dilated(xs[static_cast<int>(d) + 2], a.input_dilation[d]);
  std::vector<std::vector<std::int64_t>> k_index(static_cast<std::size_t>(k_shape.numel()));
  for (std::size_t k = 0; k < k_index.size(); ++k)
    unravel(static_cast<std::int64_t>(k), k_shape, k_index[k]);

  Tensor out(out_type.dtype, out_type.shape);
  if (out.numel() == 0) return out;
  visit_dtype(in[0].dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (!std::is_same_v<T, bool>) {
      const T* x = in_ptr<T>(in[0]);
      const T* w = in_ptr<T>(in[1]);
      T* y = out_ptr<T>(out);
      std::vector<std::int64_t> q;
      std::int64_t flat = 0;
      for (std::int64_t nb = 0; nb < n_out; ++nb) {
        for (std::int64_t o = 0; o < o_count; ++o) {
          // Output feature block g reads input channel block g (feature groups) or
          // input batch block g (batch groups).
          std::int64_t c0 = (o / o_per_fg) * cg;
          std::int64_t n = (o / o_per_bg) * n_out + nb;
          for (std::int64_t qf = 0; qf < q_shape.numel(); ++qf) {
            unravel(qf, q_shape, q);
            wide_t<T> acc = 0;
            for (std::size_t kf = 0; kf < k_index.size(); ++kf) {
              // Position in the dilated input; padding and holes contribute zeros.
              std::int64_t x_off = 0;
              bool inside = true;
              for (std::size_t d = 0; d < spatial && inside; ++d) {
                std::int64_t pos =
                    q[d] * a.strides[d] + k_index[kf][d] * a.kernel_dilation[d] - a.padding_low[d];
                inside = pos >= 0 && pos < dilated_in[d] && pos % a.input_dilation[d] == 0;
                x_off += pos / a.input_dilation[d] * x_strides[d + 2];
              }
              if (!inside) continue;
              for (std::int64_t ci = 0; ci < cg; ++ci)
                acc +=
                    widen(x[n * x_strides[0] + (c0 + ci) * x_strides[1] + x_off]) *
                    widen(w[o * w_strides[0] + ci * w_strides[1] + static_cast<std::int64_t>(kf)]);
            }
            y[flat++] = convert_element<T>(acc);
          }
        }
      }
    }
  });
  return out;
}

}  // namespace

void add_contraction_rules(OpTable& t) {
  set_rule(t, Op::dot_general, &infer_dot_general, &kernel_dot_general);
  set_rule(t, Op::convolution, &infer_convolution, &kernel_convolution);
}

}  // namespace glia::detail
