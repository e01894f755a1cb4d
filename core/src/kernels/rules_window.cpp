// Inference and reference kernels of the window ops (XLA's ReduceWindow and
// SelectAndScatter): window_sum, window_max and select_and_scatter, the primitives
// behind sum/avg/max pooling and max pooling's gradient. A window spans every axis.
#include <string>
#include <type_traits>

#include "glia/core/elementwise.hpp"
#include "glia/core/monoid.hpp"
#include "kernels/kernel_util.hpp"
#include "rules.hpp"

namespace glia::detail {

namespace {

// The extent of an axis of `d` elements after base dilation (holes between elements).
std::int64_t dilated(std::int64_t d, std::int64_t dilation) {
  return d == 0 ? 0 : (d - 1) * dilation + 1;
}

std::string ints_text(const Ints& v) {
  std::string s = "[";
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

// Checks the attributes against the operand and returns the shape of the windowed result.
Shape window_output_shape(Op op, const TensorType& operand, const WindowAttrs& a) {
  const int rank = operand.shape.rank();
  auto check_field = [&](const Ints& v, std::string_view name, std::int64_t lowest) {
    check(static_cast<int>(v.size()) == rank, op_name(op), ": ", name, " has ", v.size(),
          " entries, expected ", rank, " (one per axis of ", operand.to_string(), ")");
    for (std::int64_t x : v)
      check(x >= lowest, op_name(op), ": ", name, " must be >= ", lowest, ", got ", ints_text(v));
  };
  check_field(a.window, "window", 1);
  check_field(a.strides, "strides", 1);
  check_field(a.padding_low, "padding_low", 0);
  check_field(a.padding_high, "padding_high", 0);
  check_field(a.base_dilation, "base_dilation", 1);
  check_field(a.window_dilation, "window_dilation", 1);
  std::vector<std::int64_t> dims(static_cast<std::size_t>(rank));
  for (std::size_t i = 0; i < dims.size(); ++i) {
    std::int64_t padded = dilated(operand.shape[static_cast<int>(i)], a.base_dilation[i]) +
                          a.padding_low[i] + a.padding_high[i];
    std::int64_t window = dilated(a.window[i], a.window_dilation[i]);
    dims[i] = padded < window ? 0 : (padded - window) / a.strides[i] + 1;
  }
  return Shape(std::move(dims));
}

void check_numeric(Op op, const TensorType& t) {
  check(t.dtype != DType::boolean, op_name(op), ": expected a numeric dtype (not bool), got ",
        t.to_string());
}

template <Op kOp>
TensorType infer_window_reduce(std::span<const TensorType> in, const Attrs& attrs) {
  check_numeric(kOp, in[0]);
  return {in[0].dtype, window_output_shape(kOp, in[0], attrs_as<WindowAttrs>(attrs))};
}

TensorType infer_select_and_scatter(std::span<const TensorType> in, const Attrs& attrs) {
  constexpr Op kOp = Op::select_and_scatter;
  check_numeric(kOp, in[0]);
  Shape windows = window_output_shape(kOp, in[0], attrs_as<WindowAttrs>(attrs));
  check(in[1].dtype == in[0].dtype && in[1].shape == windows,
        "select_and_scatter: the source must have the operand's dtype and the window_max output "
        "shape ",
        windows.to_string(), ", got ", types_text(in));
  return in[0];
}

// Walks the windows of an operand: for one output position, the operand flat index
// under each window element in row-major window order, or -1 where the element
// falls on padding or on a hole left by base dilation.
class WindowWalker {
 public:
  WindowWalker(const Shape& operand, const WindowAttrs& a)
      : operand_(operand), attrs_(a), operand_strides_(operand.strides()), window_(a.window) {}

  const std::vector<std::int64_t>& positions(const std::vector<std::int64_t>& out_index) {
    const int rank = operand_.rank();
    positions_.assign(static_cast<std::size_t>(window_.numel()), -1);
    for (std::int64_t k = 0; k < window_.numel(); ++k) {
      unravel(k, window_, window_index_);
      std::int64_t flat = 0;
      bool valid = true;
      for (int i = 0; i < rank && valid; ++i) {
        auto u = static_cast<std::size_t>(i);
        // Position in the padded, dilated operand, then back to an operand element.
        std::int64_t p = out_index[u] * attrs_.strides[u] +
                         window_index_[u] * attrs_.window_dilation[u] - attrs_.padding_low[u];
        std::int64_t b = attrs_.base_dilation[u];
        valid = p >= 0 && p < dilated(operand_[i], b) && p % b == 0;
        flat += (p / b) * operand_strides_[u];
      }
      if (valid) positions_[static_cast<std::size_t>(k)] = flat;
    }
    return positions_;
  }

 private:
  const Shape& operand_;
  const WindowAttrs& attrs_;
  std::vector<std::int64_t> operand_strides_;
  Shape window_;
  std::vector<std::int64_t> window_index_;
  std::vector<std::int64_t> positions_;
};

// Sums accumulate as reduce_sum does (double, or wrapping u64); padding and holes count
// as reduce_max's identity (-inf or the lowest integer), so they never win.
using Sum = monoid<Op::reduce_sum>;
using Max = monoid<Op::reduce_max>;

template <class T>
bool is_nan(compute_t<T> v) {
  return v != v;
}

Tensor kernel_window_sum(std::span<const Tensor> in, const Attrs& attrs, const TensorType& out) {
  Tensor y(out.dtype, out.shape);
  visit_dtype(out.dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (!std::is_same_v<T, bool>) {
      const T* x = in_ptr<T>(in[0]);  // operand (d0, d1, ...)
      T* o = out_ptr<T>(y);           // windows (w0, w1, ...)
      WindowWalker walker(in[0].shape(), attrs_as<WindowAttrs>(attrs));
      std::vector<std::int64_t> index;
      for (std::int64_t i = 0; i < y.numel(); ++i) {
        unravel(i, out.shape, index);
        Sum::acc_t<T> acc = Sum::identity<T>();
        for (std::int64_t p : walker.positions(index))
          if (p >= 0) acc = Sum::combine<T>(acc, Sum::widen<T>(static_cast<compute_t<T>>(x[p])));
        o[i] = convert_element<T>(Sum::narrow<T>(acc));
      }
    }
  });
  return y;
}

Tensor kernel_window_max(std::span<const Tensor> in, const Attrs& attrs, const TensorType& out) {
  Tensor y(out.dtype, out.shape);
  visit_dtype(out.dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (!std::is_same_v<T, bool>) {
      using C = compute_t<T>;
      const T* x = in_ptr<T>(in[0]);  // operand (d0, d1, ...)
      T* o = out_ptr<T>(y);           // windows (w0, w1, ...)
      WindowWalker walker(in[0].shape(), attrs_as<WindowAttrs>(attrs));
      std::vector<std::int64_t> index;
      for (std::int64_t i = 0; i < y.numel(); ++i) {
        unravel(i, out.shape, index);
        const C lowest = Max::identity<T>();
        C best = lowest;
        for (std::int64_t p : walker.positions(index))
          best = ew::Max{}(best, p >= 0 ? static_cast<C>(x[p]) : lowest);
        o[i] = convert_element<T>(best);
      }
    }
  });
  return y;
}

Tensor kernel_select_and_scatter(std::span<const Tensor> in, const Attrs& attrs,
                                 const TensorType& out) {
  Tensor y(out.dtype, out.shape);
  visit_dtype(out.dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (!std::is_same_v<T, bool>) {
      using C = compute_t<T>;
      const T* x = in_ptr<T>(in[0]);    // operand (d0, d1, ...)
      const T* src = in_ptr<T>(in[1]);  // one value per window (w0, w1, ...)
      std::vector<Sum::acc_t<T>> acc(static_cast<std::size_t>(y.numel()), Sum::identity<T>());
      WindowWalker walker(in[0].shape(), attrs_as<WindowAttrs>(attrs));
      std::vector<std::int64_t> index;
      for (std::int64_t i = 0; i < in[1].numel(); ++i) {
        unravel(i, in[1].shape(), index);
        // The first maximum wins ties; a NaN beats numbers, as it is window_max's result.
        std::int64_t chosen = -1;
        C best{};
        for (std::int64_t p : walker.positions(index)) {
          if (p < 0) continue;
          C v = static_cast<C>(x[p]);
          bool better = is_nan<T>(v) ? !is_nan<T>(best) : v > best;
          if (chosen < 0 || better) chosen = p, best = v;
        }
        if (chosen >= 0) {
          auto& slot = acc[static_cast<std::size_t>(chosen)];
          slot = Sum::combine<T>(slot, Sum::widen<T>(static_cast<C>(src[i])));
        }
      }
      T* o = out_ptr<T>(y);
      for (std::int64_t i = 0; i < y.numel(); ++i)
        o[i] = convert_element<T>(Sum::narrow<T>(acc[static_cast<std::size_t>(i)]));
    }
  });
  return y;
}

}  // namespace

void add_window_rules(OpTable& t) {
  set_rule(t, Op::window_sum, &infer_window_reduce<Op::window_sum>, &kernel_window_sum);
  set_rule(t, Op::window_max, &infer_window_reduce<Op::window_max>, &kernel_window_max);
  set_rule(t, Op::select_and_scatter, &infer_select_and_scatter, &kernel_select_and_scatter);
}

}  // namespace glia::detail
