// Reductions of the tracing API: sum, product, max/min, argmax/argmin and the
// statistics built on them (mean, variance, standard deviation, logsumexp). Axes may
// be negative; an empty axis list means every axis.
#include <algorithm>
#include <limits>

#include "glia/core/expr.hpp"

namespace glia {

namespace {

Expr emit(const Expr& x, Op op, Attrs attrs) {
  return Expr(x.graph(), x.graph()->add(op, {x.id()}, std::move(attrs)));
}

void check_defined(const Expr& x, std::string_view what) {
  check(x.defined(), what, ": the operand is an undefined Expr");
}

// Normalized, sorted axes; all of x's axes when `axes` is empty. Duplicates are an error.
Ints reduction_axes(const Expr& x, const Ints& axes, std::string_view what) {
  Ints out;
  if (axes.empty()) {
    for (int i = 0; i < x.rank(); ++i) out.push_back(i);
    return out;
  }
  for (std::int64_t a : axes) out.push_back(x.shape().normalize_axis(a, what));
  std::sort(out.begin(), out.end());
  auto twice = std::adjacent_find(out.begin(), out.end());
  check(twice == out.end(), what, ": axis ", twice == out.end() ? 0 : *twice,
        " appears twice in the axes of ", x.type());
  return out;
}

// How many elements each reduced slot combines.
std::int64_t reduced_count(const Expr& x, const Ints& axes) {
  std::int64_t n = 1;
  for (std::int64_t a : axes) n *= x.shape()[static_cast<int>(a)];
  return n;
}

// The shape of a reduction's result.
Ints reduced_dims(const Expr& x, const Ints& axes, bool keep) {
  Ints dims;
  for (int i = 0; i < x.rank(); ++i) {
    bool reduced = std::find(axes.begin(), axes.end(), i) != axes.end();
    if (!reduced)
      dims.push_back(x.shape()[i]);
    else if (keep)
      dims.push_back(1);
  }
  return dims;
}

// Sums and products of bool and integers aggregate in i64, as in Nx.
Expr aggregate(Op op, const Expr& x, const Ints& axes, bool keep, std::string_view what) {
  check_defined(x, what);
  Ints ax = reduction_axes(x, axes, what);
  Expr y = is_float(x.dtype()) ? x : cast(x, DType::i64);
  return emit(y, op, ReduceAttrs{ax, keep});
}

// max/min keep the dtype; on bool they are any/all.
Expr extreme(Op op, const Expr& x, const Ints& axes, bool keep, std::string_view what) {
  check_defined(x, what);
  Ints ax = reduction_axes(x, axes, what);
  if (x.dtype() == DType::boolean)
    return cast(emit(cast(x, DType::u8), op, ReduceAttrs{ax, keep}), DType::boolean);
  return emit(x, op, ReduceAttrs{ax, keep});
}

Expr arg_extreme(Op op, const Expr& x, std::optional<std::int64_t> axis, bool keep) {
  std::string_view what = op_name(op);
  check_defined(x, what);
  Expr y = x.dtype() == DType::boolean ? cast(x, DType::u8) : x;
  if (axis) {
    check(x.rank() > 0, what, ": a scalar has no axis ", *axis);
    std::int64_t a = x.shape().normalize_axis(*axis, what);
    return emit(y, op, ArgReduceAttrs{a, keep});
  }
  // Over the flattened tensor; keep_axes keeps every axis, each of size 1.
  Expr flat = reshape(y, {x.shape().numel()});
  Expr index = emit(flat, op, ArgReduceAttrs{0, false});
  return keep ? reshape(index, Ints(static_cast<std::size_t>(x.rank()), 1)) : index;
}

Expr float_of(const Expr& x) { return is_float(x.dtype()) ? x : cast(x, DType::f32); }

}  // namespace

Expr sum(const Expr& x, const Ints& axes, bool keep_axes) {
  return aggregate(Op::reduce_sum, x, axes, keep_axes, "sum");
}
Expr product(const Expr& x, const Ints& axes, bool keep_axes) {
  return aggregate(Op::reduce_prod, x, axes, keep_axes, "product");
}
Expr reduce_max(const Expr& x, const Ints& axes, bool keep_axes) {
  return extreme(Op::reduce_max, x, axes, keep_axes, "reduce_max");
}
Expr reduce_min(const Expr& x, const Ints& axes, bool keep_axes) {
  return extreme(Op::reduce_min, x, axes, keep_axes, "reduce_min");
}

Expr argmax(const Expr& x, std::optional<std::int64_t> axis, bool keep_axes) {
  return arg_extreme(Op::argmax, x, axis, keep_axes);
}
Expr argmin(const Expr& x, std::optional<std::int64_t> axis, bool keep_axes) {
  return arg_extreme(Op::argmin, x, axis, keep_axes);
}

Expr mean(const Expr& x, const Ints& axes, bool keep_axes) {
  check_defined(x, "mean");
  Expr f = float_of(x);
  Ints ax = reduction_axes(f, axes, "mean");
  return divide(sum(f, ax, keep_axes), static_cast<double>(reduced_count(f, ax)));
}

Expr variance(const Expr& x, const Ints& axes, bool keep_axes, double ddof) {
  check_defined(x, "variance");
  Expr f = float_of(x);
  Ints ax = reduction_axes(f, axes, "variance");
  Expr centered = f - mean(f, ax, true);
  double n = static_cast<double>(reduced_count(f, ax)) - ddof;
  return divide(sum(centered * centered, ax, keep_axes), n);
}

Expr standard_deviation(const Expr& x, const Ints& axes, bool keep_axes, double ddof) {
  check_defined(x, "standard_deviation");
  return sqrt(variance(x, axes, keep_axes, ddof));
}

Expr logsumexp(const Expr& x, const Ints& axes, bool keep_axes) {
  check_defined(x, "logsumexp");
  Expr f = float_of(x);
  Ints ax = reduction_axes(f, axes, "logsumexp");
  // Shifting by an infinite max would give inf - inf = NaN; shifting by 0 instead gives
  // log(0) = -inf for all -inf slots and +inf for slots holding +inf, as it should.
  Expr m = reduce_max(f, ax, true);
  Expr shift = select(equal(abs(m), std::numeric_limits<double>::infinity()), 0.0, m);
  Expr lse = log(sum(exp(f - shift), ax, true)) + shift;
  return keep_axes ? lse : reshape(lse, reduced_dims(f, ax, false));
}

}  // namespace glia
