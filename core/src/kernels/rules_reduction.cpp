// Inference and reference kernels of the reductions: reduce_sum, reduce_prod,
// reduce_max, reduce_min over a sorted axis list, and argmax/argmin along one axis.
// Reducing over no axes is the identity; reducing a zero-size axis gives the identity.
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "glia/core/monoid.hpp"
#include "kernels/kernel_util.hpp"
#include "rules.hpp"

namespace glia::detail {

namespace {

// The input shape with `axes` removed, or set to 1 when `keep` is true.
Shape reduced_shape(const Shape& in, const Ints& axes, bool keep) {
  std::vector<bool> reduced(static_cast<std::size_t>(in.rank()), false);
  for (std::int64_t a : axes) reduced[static_cast<std::size_t>(a)] = true;
  Ints dims;
  for (int i = 0; i < in.rank(); ++i) {
    if (!reduced[static_cast<std::size_t>(i)])
      dims.push_back(in[i]);
    else if (keep)
      dims.push_back(1);
  }
  return Shape(std::move(dims));
}

template <Op kOp>
TensorType infer_reduce(std::span<const TensorType> in, const Attrs& attrs) {
  const auto& a = attrs_as<ReduceAttrs>(attrs);
  check(in[0].dtype != DType::boolean, op_name(kOp), ": expected a numeric dtype (not bool), got ",
        in[0].to_string());
  check_axes(a.axes, in[0].shape.rank(), cat(op_name(kOp), " of ", types_text(in)), true);
  return {in[0].dtype, reduced_shape(in[0].shape, a.axes, a.keep_axes)};
}

// Sums and products accumulate in double (floats) or u64 (integers, wrapping around);
// max and min in the compute type, keeping the first NaN (monoid.hpp).
template <Op kOp>
Tensor kernel_reduce(std::span<const Tensor> in, const Attrs& attrs, const TensorType& out_type) {
  using M = monoid<kOp>;
  const auto& a = attrs_as<ReduceAttrs>(attrs);
  const Shape& shape = in[0].shape();
  Tensor out(out_type.dtype, out_type.shape);
  visit_dtype(in[0].dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (!std::is_same_v<T, bool>) {
      using A = typename M::template acc_t<T>;
      std::vector<A> acc(static_cast<std::size_t>(out.numel()), M::template identity<T>());
      // ostride[d]: how far one step along input axis d moves in the output (0 if reduced).
      std::vector<std::int64_t> ostride(static_cast<std::size_t>(shape.rank()), 0);
      std::vector<bool> reduced(static_cast<std::size_t>(shape.rank()), false);
      for (std::int64_t ax : a.axes) reduced[static_cast<std::size_t>(ax)] = true;
      std::int64_t step = 1;
      for (int d = shape.rank() - 1; d >= 0; --d) {
        if (reduced[static_cast<std::size_t>(d)]) continue;
        ostride[static_cast<std::size_t>(d)] = step;
        step *= shape[d];
      }
      const T* x = in_ptr<T>(in[0]);
      std::vector<std::int64_t> idx(static_cast<std::size_t>(shape.rank()), 0);
      std::int64_t o = 0;
      for (std::int64_t i = 0; i < in[0].numel(); ++i) {
        auto& slot = acc[static_cast<std::size_t>(o)];
        slot = M::template combine<T>(slot, M::template widen<T>(static_cast<compute_t<T>>(x[i])));
        for (int d = shape.rank() - 1; d >= 0; --d) {  // advance the multi-index
          auto du = static_cast<std::size_t>(d);
          o += ostride[du];
          if (++idx[du] < shape[d]) break;
          o -= ostride[du] * shape[d];
          idx[du] = 0;
        }
      }
      T* y = out_ptr<T>(out);
      for (std::size_t i = 0; i < acc.size(); ++i)
        y[i] = convert_element<T>(M::template narrow<T>(acc[i]));
    }
  });
  return out;
}

template <Op kOp>
TensorType infer_arg_reduce(std::span<const TensorType> in, const Attrs& attrs) {
  const auto& a = attrs_as<ArgReduceAttrs>(attrs);
  const Shape& s = in[0].shape;
  check(in[0].dtype != DType::boolean, op_name(kOp), ": expected a numeric dtype (not bool), got ",
        in[0].to_string());
  check(a.axis >= 0 && a.axis < s.rank(), op_name(kOp), " of ", types_text(in), ": axis ", a.axis,
        " is out of range for rank ", s.rank());
  check(s[static_cast<int>(a.axis)] > 0, op_name(kOp), " of ", types_text(in), ": axis ", a.axis,
        " has size 0, which has no ", (kOp == Op::argmax ? "maximum" : "minimum"));
  return {DType::i64, reduced_shape(s, {a.axis}, a.keep_axes)};
}

// (outer, n, inner): the index of the first extreme along the middle axis. A NaN counts
// as the extreme, and the first NaN wins, as in numpy and Nx.
template <bool kMax>
Tensor kernel_arg_reduce(std::span<const Tensor> in, const Attrs& attrs,
                         const TensorType& out_type) {
  const auto& a = attrs_as<ArgReduceAttrs>(attrs);
  const AxisSplit split = split_at(in[0].shape(), a.axis);  // (outer, n, inner)
  const std::int64_t outer = split.outer, n = split.size, inner = split.inner;
  Tensor out(out_type.dtype, out_type.shape);
  std::int64_t* y = out_ptr<std::int64_t>(out);
  visit_dtype(in[0].dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (!std::is_same_v<T, bool>) {
      using C = compute_t<T>;
      const T* x = in_ptr<T>(in[0]);
      for (std::int64_t o = 0; o < outer; ++o) {
        for (std::int64_t i = 0; i < inner; ++i) {
          const T* row = x + o * n * inner + i;
          auto best = static_cast<C>(row[0]);
          std::int64_t best_k = 0;
          for (std::int64_t k = 1; k < n; ++k) {
            if constexpr (std::is_floating_point_v<C>)
              if (std::isnan(best)) break;
            auto v = static_cast<C>(row[k * inner]);
            bool nan = false;
            if constexpr (std::is_floating_point_v<C>) nan = std::isnan(v);
            if (nan || (kMax ? v > best : v < best)) best = v, best_k = k;
          }
          y[o * inner + i] = best_k;
        }
      }
    }
  });
  return out;
}

}  // namespace

void add_reduction_rules(OpTable& t) {
#define GLIA_ADD_REDUCE_RULE(op, m) \
  set_rule(t, Op::op, &infer_reduce<Op::op>, &kernel_reduce<Op::op>);
  GLIA_REDUCTION_MONOIDS(GLIA_ADD_REDUCE_RULE)
#undef GLIA_ADD_REDUCE_RULE
  set_rule(t, Op::argmax, &infer_arg_reduce<Op::argmax>, &kernel_arg_reduce<true>);
  set_rule(t, Op::argmin, &infer_arg_reduce<Op::argmin>, &kernel_arg_reduce<false>);
}

}  // namespace glia::detail
