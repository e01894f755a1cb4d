// Shape, layout and indexing functions of the tracing API. They normalize what users
// write (negative axes, defaults, -1 in shapes, numbers as pad values) into the IR's
// normalized attributes, and emit nothing when the result would equal the input.
#include <algorithm>
#include <string>

#include "glia/core/expr.hpp"

namespace glia {

namespace {

Graph& graph_of(const Expr& e, std::string_view what) {
  check(e.defined(), what, ": the operand is an undefined Expr");
  return *e.graph();
}

Expr emit(Graph& g, Op op, std::vector<ValueId> inputs, Attrs attrs) {
  return Expr(&g, g.add(op, std::move(inputs), std::move(attrs)));
}

std::string ints_text(const Ints& v) {
  std::string s = "[";
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

// One entry per axis of x, or an error naming `what` and `field`.
void check_per_axis(const Expr& x, const Ints& v, std::string_view what, std::string_view field) {
  check(static_cast<int>(v.size()) == x.rank(), what, ": ", field, " ", ints_text(v),
        " needs one entry per axis of ", x.type());
}

// Normalized, sorted, duplicate-free axes of x.
Ints normalize_axes(const Expr& x, const Ints& axes, std::string_view what) {
  Ints out;
  for (std::int64_t a : axes) out.push_back(x.shape().normalize_axis(a, what));
  std::sort(out.begin(), out.end());
  check(std::adjacent_find(out.begin(), out.end()) == out.end(), what, ": axes ", ints_text(axes),
        " name an axis of ", x.type(), " twice");
  return out;
}

// The common graph of several operands, which must all come from one trace.
Graph& common_graph(const std::vector<Expr>& xs, std::string_view what) {
  check(!xs.empty(), what, ": needs at least one input");
  Graph& g = graph_of(xs[0], what);
  for (const Expr& x : xs)
    check(&graph_of(x, what) == &g, what, ": operands come from different traces");
  return g;
}

}  // namespace

Expr reshape(const Expr& x, const Ints& shape) {
  Graph& g = graph_of(x, "reshape");
  Ints dims = shape;
  int unknown = -1;
  std::int64_t known = 1;
  for (std::size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] == -1) {
      check(unknown < 0, "reshape: at most one dimension may be -1, got ", ints_text(shape));
      unknown = static_cast<int>(i);
    } else {
      check(dims[i] >= 0, "reshape: dimension ", dims[i], " in ", ints_text(shape), " is negative");
      known *= dims[i];
    }
  }
  std::int64_t numel = x.shape().numel();
  if (unknown >= 0) {
    check(known > 0 && numel % known == 0, "reshape: cannot reshape ", x.type(), " (", numel,
          " elements) to ", ints_text(shape));
    dims[static_cast<std::size_t>(unknown)] = numel / known;
  }
  Shape target(dims);
  check(target.numel() == numel, "reshape: cannot reshape ", x.type(), " (", numel,
        " elements) to ", ints_text(shape), " (", target.numel(), " elements)");
  if (target == x.shape()) return x;
  return emit(g, Op::reshape, {x.id()}, ReshapeAttrs{target});
}

Expr transpose(const Expr& x, const Ints& perm) {
  Graph& g = graph_of(x, "transpose");
  Ints p;
  if (perm.empty()) {
    for (int i = x.rank() - 1; i >= 0; --i) p.push_back(i);
  } else {
    check_per_axis(x, perm, "transpose", "perm");
    for (std::int64_t a : perm) p.push_back(x.shape().normalize_axis(a, "transpose"));
  }
  bool identity = true;
  for (std::size_t i = 0; i < p.size(); ++i) identity = identity && p[i] == std::int64_t(i);
  if (identity) return x;
  return emit(g, Op::transpose, {x.id()}, TransposeAttrs{p});
}

Expr slice(const Expr& x, const Ints& start, const Ints& limit, const Ints& strides) {
  Graph& g = graph_of(x, "slice");
  check_per_axis(x, start, "slice", "start");
  check_per_axis(x, limit, "slice", "limit");
  Ints st = strides.empty() ? Ints(static_cast<std::size_t>(x.rank()), 1) : strides;
  check_per_axis(x, st, "slice", "strides");
  SliceAttrs a{start, limit, st};
  bool identity = true;
  for (int i = 0; i < x.rank(); ++i) {
    auto k = static_cast<std::size_t>(i);
    std::int64_t d = x.shape()[i];
    if (a.start[k] < 0) a.start[k] += d;
    if (a.limit[k] < 0) a.limit[k] += d;
    check(0 <= a.start[k] && a.start[k] <= a.limit[k] && a.limit[k] <= d, "slice: axis ", i, " of ",
          x.type(), ": start ", start[k], " and limit ", limit[k],
          " are out of range or out of order");
    check(a.strides[k] >= 1, "slice: strides must be >= 1, got ", ints_text(st));
    identity = identity && a.start[k] == 0 && a.limit[k] == d && (a.strides[k] == 1 || d <= 1);
  }
  if (identity) return x;
  return emit(g, Op::slice, {x.id()}, std::move(a));
}

Expr slice_axis(const Expr& x, std::int64_t start, std::int64_t length, std::int64_t axis,
                std::int64_t stride) {
  graph_of(x, "slice_axis");
  int a = x.shape().normalize_axis(axis, "slice_axis");
  std::int64_t d = x.shape()[a];
  std::int64_t s = start < 0 ? start + d : start;
  check(length >= 0 && s >= 0 && s + length <= d, "slice_axis: ", length, " elements from index ",
        start, " do not fit axis ", axis, " of ", x.type());
  Ints starts(static_cast<std::size_t>(x.rank()), 0), strides(starts.size(), 1);
  Ints limits = x.shape().dims();
  starts[static_cast<std::size_t>(a)] = s;
  limits[static_cast<std::size_t>(a)] = s + length;
  strides[static_cast<std::size_t>(a)] = stride;
  return slice(x, starts, limits, strides);
}

Expr pad(const Expr& x, const Operand& value, const Ints& low, const Ints& high,
         const Ints& interior) {
  Graph& g = graph_of(x, "pad");
  TraceScope scope(g);  // a number becomes a constant of x's graph
  check_per_axis(x, low, "pad", "low");
  check_per_axis(x, high, "pad", "high");
  Ints in = interior.empty() ? Ints(static_cast<std::size_t>(x.rank()), 0) : interior;
  check_per_axis(x, in, "pad", "interior");
  auto zero = [](std::int64_t n) { return n == 0; };
  bool identity = std::all_of(low.begin(), low.end(), zero) &&
                  std::all_of(high.begin(), high.end(), zero) &&
                  std::all_of(in.begin(), in.end(), zero);
  // A number takes x's dtype; an Expr value promotes with x, as Nx.pad does.
  if (!value.is_expr()) {
    if (identity) return x;
    Expr v = constant(Tensor::scalar(value.value(), x.dtype()));
    return emit(g, Op::pad, {x.id(), v.id()}, PadAttrs{low, high, in});
  }
  Expr v = value.expr();
  check(v.graph() == &g, "pad: operands come from different traces");
  check(v.rank() == 0, "pad: the pad value must be a scalar, got ", v.type());
  DType t = promote(x.dtype(), v.dtype());
  Expr y = cast(x, t);
  if (identity) return y;
  v = cast(v, t);
  return emit(g, Op::pad, {y.id(), v.id()}, PadAttrs{low, high, in});
}

Expr concatenate(const std::vector<Expr>& xs, std::int64_t axis) {
  Graph& g = common_graph(xs, "concatenate");
  if (xs.size() == 1) return xs[0];
  DType t = xs[0].dtype();
  for (const Expr& x : xs) t = promote(t, x.dtype());
  check(xs[0].rank() > 0, "concatenate: cannot concatenate scalars, got ", xs[0].type());
  std::int64_t a = xs[0].shape().normalize_axis(axis, "concatenate");
  std::vector<ValueId> ids;
  for (const Expr& x : xs) {
    check(x.rank() == xs[0].rank(), "concatenate: inputs must have one rank, got ", xs[0].type(),
          " and ", x.type());
    ids.push_back(cast(x, t).id());
  }
  return emit(g, Op::concatenate, std::move(ids), AxisAttrs{a});
}

Expr stack(const std::vector<Expr>& xs, std::int64_t axis) {
  common_graph(xs, "stack");
  Ints dims = xs[0].shape().dims();
  dims.push_back(1);  // the output rank, so that negative axes count from its end
  int a = Shape(dims).normalize_axis(axis, "stack");
  std::vector<Expr> expanded;
  for (const Expr& x : xs) {
    check(x.shape() == xs[0].shape(), "stack: inputs must have one shape, got ", xs[0].type(),
          " and ", x.type());
    expanded.push_back(expand_dims(x, a));
  }
  return concatenate(expanded, a);
}

Expr reverse(const Expr& x, const Ints& axes) {
  Graph& g = graph_of(x, "reverse");
  Ints all;
  if (axes.empty())
    for (int i = 0; i < x.rank(); ++i) all.push_back(i);
  Ints normalized = normalize_axes(x, axes.empty() ? all : axes, "reverse");
  // Reversing an axis of size 0 or 1 changes nothing.
  Ints flipped;
  for (std::int64_t a : normalized)
    if (x.shape()[static_cast<int>(a)] > 1) flipped.push_back(a);
  if (flipped.empty()) return x;
  return emit(g, Op::reverse, {x.id()}, AxesAttrs{flipped});
}

Expr squeeze(const Expr& x, const Ints& axes) {
  graph_of(x, "squeeze");
  Ints drop;
  if (axes.empty()) {
    for (int i = 0; i < x.rank(); ++i)
      if (x.shape()[i] == 1) drop.push_back(i);
  } else {
    drop = normalize_axes(x, axes, "squeeze");
    for (std::int64_t a : drop)
      check(x.shape()[static_cast<int>(a)] == 1, "squeeze: axis ", a, " of ", x.type(),
            " has size ", x.shape()[static_cast<int>(a)], ", expected 1");
  }
  Ints dims;
  for (int i = 0; i < x.rank(); ++i)
    if (!std::binary_search(drop.begin(), drop.end(), std::int64_t(i)))
      dims.push_back(x.shape()[i]);
  return reshape(x, dims);
}

Expr expand_dims(const Expr& x, std::int64_t axis) {
  graph_of(x, "expand_dims");
  Ints dims = x.shape().dims();
  dims.push_back(1);  // the output rank, so that negative axes count from its end
  int a = Shape(dims).normalize_axis(axis, "expand_dims");
  dims.pop_back();
  dims.insert(dims.begin() + a, 1);
  return reshape(x, dims);
}

Expr flatten(const Expr& x) {
  graph_of(x, "flatten");
  return reshape(x, {x.shape().numel()});
}

Expr take(const Expr& x, const Expr& indices, std::int64_t axis) {
  Graph& g = common_graph({x, indices}, "take");
  check(x.rank() > 0, "take: cannot take from a scalar ", x.type());
  int a = x.shape().normalize_axis(axis, "take");
  return emit(g, Op::gather, {x.id(), indices.id()}, AxisAttrs{a});
}

Expr scatter_add(const Expr& target, const Expr& indices, const Expr& updates, std::int64_t axis) {
  Graph& g = common_graph({target, indices, updates}, "scatter_add");
  check(target.rank() > 0, "scatter_add: cannot scatter into a scalar ", target.type());
  int a = target.shape().normalize_axis(axis, "scatter_add");
  DType t = promote(target.dtype(), updates.dtype());
  return emit(g, Op::scatter_add, {cast(target, t).id(), indices.id(), cast(updates, t).id()},
              AxisAttrs{a});
}

}  // namespace glia
