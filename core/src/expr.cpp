// The core of the tracing API: the current trace, Expr creation, weak-typed
// operands, and the element-wise functions with numpy broadcasting and promotion.
#include "glia/core/expr.hpp"

#include "kernels/kernel_util.hpp"

namespace glia {

namespace {

thread_local Graph* g_current = nullptr;

Graph& graph_of(const Expr& e, std::string_view what) {
  check(e.defined(), what, ": the operand is an undefined Expr");
  return *e.graph();
}

Expr emit(Graph& g, Op op, std::vector<ValueId> inputs, Attrs attrs = NoAttrs{}) {
  return Expr(&g, g.add(op, std::move(inputs), std::move(attrs)));
}

// Integer inputs of float-only math are cast to f32, as Nx does.
Expr float_operand(const Expr& x) { return is_float(x.dtype()) ? x : cast(x, DType::f32); }

Expr unary(Op op, const Expr& x) { return emit(graph_of(x, op_name(op)), op, {x.id()}); }

Expr float_unary(Op op, const Expr& x) {
  Expr f = float_operand(x);
  return emit(graph_of(f, op_name(op)), op, {f.id()});
}

// The dtype a C++ number takes beside an Expr of dtype `like`.
DType weak_dtype(DType like, bool integral) {
  if (is_float(like)) return like;
  if (!integral) return DType::f32;
  return like == DType::boolean ? DType::i64 : like;
}

// Broadcasts and promotes two operands to one shape and dtype. `float_only` casts
// integer results to f32 first.
std::pair<Expr, Expr> align(Op op, const Operand& a, const Operand& b, bool float_only = false) {
  check(a.is_expr() || b.is_expr(), op_name(op), ": at least one operand must be an Expr");
  Graph& g = a.is_expr() ? graph_of(a.expr(), op_name(op)) : graph_of(b.expr(), op_name(op));
  if (a.is_expr() && b.is_expr())
    check(a.expr().graph() == b.expr().graph(), op_name(op),
          ": operands come from different traces");
  Expr x = a.is_expr() ? a.expr() : a.as_expr(g, b.expr().dtype());
  Expr y = b.is_expr() ? b.expr() : b.as_expr(g, a.expr().dtype());
  DType t = promote(x.dtype(), y.dtype());
  if (float_only && !is_float(t)) t = DType::f32;
  if (x.dtype() != t) x = cast(x, t);
  if (y.dtype() != t) y = cast(y, t);
  Shape s = broadcast_shapes(x.shape(), y.shape(), op_name(op));
  return {broadcast_to(x, s), broadcast_to(y, s)};
}

Expr binary(Op op, const Operand& a, const Operand& b, bool float_only = false) {
  auto [x, y] = align(op, a, b, float_only);
  return emit(*x.graph(), op, {x.id(), y.id()});
}

}  // namespace

Expr::Expr(const Tensor& value) : Expr(constant(value)) {}

Expr Operand::as_expr(Graph& g, DType like) const {
  if (is_expr()) return expr_;
  TraceScope scope(g);
  return scalar(value_, weak_dtype(like, integral_));
}

TraceScope::TraceScope(Graph& graph) : previous_(g_current) { g_current = &graph; }
TraceScope::~TraceScope() { g_current = previous_; }

Graph& current_graph() {
  check(g_current != nullptr,
        "no trace is active: create values inside a function given to glia::trace or glia::jit");
  return *g_current;
}
bool tracing() { return g_current != nullptr; }

Graph trace(const TracedFn& fn, const std::vector<TensorType>& inputs, std::string name,
            const std::vector<std::string>& input_names) {
  check(input_names.empty() || input_names.size() == inputs.size(), "trace '", name,
        "': ", input_names.size(), " input names for ", inputs.size(), " inputs");
  Graph g(std::move(name));
  TraceScope scope(g);
  std::vector<Expr> params;
  for (std::size_t i = 0; i < inputs.size(); ++i)
    params.push_back(parameter(inputs[i], input_names.empty() ? "" : input_names[i]));
  std::vector<Expr> outs = fn(params);
  std::vector<ValueId> ids;
  for (const Expr& e : outs) {
    check(e.defined(), "trace '", g.name(), "': the function returned an undefined Expr");
    check(e.graph() == &g, "trace '", g.name(),
          "': the function returned an Expr of another trace");
    ids.push_back(e.id());
  }
  check(!ids.empty(), "trace '", g.name(), "': the function returned no outputs");
  g.set_outputs(std::move(ids));
  Graph pruned = prune(g);
  verify(pruned);
  return pruned;
}

// ---- Creation ------------------------------------------------------------------------

Expr parameter(const TensorType& type, std::string name) {
  Graph& g = current_graph();
  return Expr(&g, g.add_parameter(type, std::move(name)));
}

Expr constant(const Tensor& value) {
  check(value.defined(), "constant: the tensor is undefined");
  return emit(current_graph(), Op::constant, {}, ConstantAttrs{value});
}

Expr scalar(double value, DType dtype) { return constant(Tensor::scalar(value, dtype)); }

Expr full(const Shape& shape, double value, DType dtype) {
  return broadcast(scalar(value, dtype), shape, {});
}
Expr zeros(const Shape& shape, DType dtype) { return full(shape, 0, dtype); }
Expr ones(const Shape& shape, DType dtype) { return full(shape, 1, dtype); }

Expr iota(const Shape& shape, std::optional<int> axis, DType dtype) {
  if (!axis && shape.rank() > 1) {
    Expr flat = iota(Shape{shape.numel()}, 0, dtype);
    return reshape(flat, shape.dims());
  }
  std::int64_t a = axis ? shape.normalize_axis(*axis, "iota") : 0;
  return emit(current_graph(), Op::iota, {}, IotaAttrs{shape, dtype, a});
}

// ---- Element-wise --------------------------------------------------------------------

Expr neg(const Expr& x) { return unary(Op::neg, x); }
Expr abs(const Expr& x) { return unary(Op::abs, x); }
Expr sign(const Expr& x) { return unary(Op::sign, x); }
Expr exp(const Expr& x) { return float_unary(Op::exp, x); }
Expr expm1(const Expr& x) { return float_unary(Op::expm1, x); }
Expr log(const Expr& x) { return float_unary(Op::log, x); }
Expr log1p(const Expr& x) { return float_unary(Op::log1p, x); }
Expr sqrt(const Expr& x) { return float_unary(Op::sqrt, x); }
Expr rsqrt(const Expr& x) { return float_unary(Op::rsqrt, x); }
Expr tanh(const Expr& x) { return float_unary(Op::tanh, x); }
Expr logistic(const Expr& x) { return float_unary(Op::logistic, x); }
Expr erf(const Expr& x) { return float_unary(Op::erf, x); }
Expr sin(const Expr& x) { return float_unary(Op::sin, x); }
Expr cos(const Expr& x) { return float_unary(Op::cos, x); }
Expr floor(const Expr& x) { return unary(Op::floor, x); }
Expr ceil(const Expr& x) { return unary(Op::ceil, x); }
Expr round(const Expr& x) { return unary(Op::round, x); }
Expr logical_not(const Expr& x) { return unary(Op::not_, x); }

Expr add(const Operand& a, const Operand& b) { return binary(Op::add, a, b); }
Expr subtract(const Operand& a, const Operand& b) { return binary(Op::subtract, a, b); }
Expr multiply(const Operand& a, const Operand& b) { return binary(Op::multiply, a, b); }
Expr divide(const Operand& a, const Operand& b) { return binary(Op::divide, a, b); }
Expr pow(const Operand& a, const Operand& b) { return binary(Op::pow, a, b); }
Expr max(const Operand& a, const Operand& b) { return binary(Op::max, a, b); }
Expr min(const Operand& a, const Operand& b) { return binary(Op::min, a, b); }
Expr remainder(const Operand& a, const Operand& b) { return binary(Op::remainder, a, b); }
Expr atan2(const Operand& a, const Operand& b) { return binary(Op::atan2, a, b, true); }
Expr logical_and(const Operand& a, const Operand& b) { return binary(Op::and_, a, b); }
Expr logical_or(const Operand& a, const Operand& b) { return binary(Op::or_, a, b); }
Expr equal(const Operand& a, const Operand& b) { return binary(Op::eq, a, b); }
Expr not_equal(const Operand& a, const Operand& b) { return binary(Op::ne, a, b); }
Expr less(const Operand& a, const Operand& b) { return binary(Op::lt, a, b); }
Expr less_equal(const Operand& a, const Operand& b) { return binary(Op::le, a, b); }
Expr greater(const Operand& a, const Operand& b) { return binary(Op::gt, a, b); }
Expr greater_equal(const Operand& a, const Operand& b) { return binary(Op::ge, a, b); }

Expr operator-(const Expr& x) { return neg(x); }
Expr operator+(const Expr& a, const Expr& b) { return add(a, b); }
Expr operator-(const Expr& a, const Expr& b) { return subtract(a, b); }
Expr operator*(const Expr& a, const Expr& b) { return multiply(a, b); }
Expr operator/(const Expr& a, const Expr& b) { return divide(a, b); }
Expr operator+(const Expr& a, double b) { return add(a, b); }
Expr operator-(const Expr& a, double b) { return subtract(a, b); }
Expr operator*(const Expr& a, double b) { return multiply(a, b); }
Expr operator/(const Expr& a, double b) { return divide(a, b); }
Expr operator+(double a, const Expr& b) { return add(a, b); }
Expr operator-(double a, const Expr& b) { return subtract(a, b); }
Expr operator*(double a, const Expr& b) { return multiply(a, b); }
Expr operator/(double a, const Expr& b) { return divide(a, b); }

Expr select(const Expr& pred, const Operand& on_true, const Operand& on_false) {
  Graph& g = graph_of(pred, "select");
  check(pred.dtype() == DType::boolean, "select: the predicate must be bool, got ", pred.type());
  DType like = on_true.is_expr() ? on_true.expr().dtype()
               : on_false.is_expr()
                   ? on_false.expr().dtype()
                   : (on_true.integral() && on_false.integral() ? DType::i64 : DType::f32);
  Expr a = on_true.as_expr(g, like);
  Expr b = on_false.as_expr(g, like);
  check(a.graph() == &g && b.graph() == &g, "select: operands come from different traces");
  DType t = promote(a.dtype(), b.dtype());
  if (a.dtype() != t) a = cast(a, t);
  if (b.dtype() != t) b = cast(b, t);
  Shape s =
      broadcast_shapes(broadcast_shapes(pred.shape(), a.shape(), "select"), b.shape(), "select");
  return emit(g, Op::select,
              {broadcast_to(pred, s).id(), broadcast_to(a, s).id(), broadcast_to(b, s).id()});
}

Expr cast(const Expr& x, DType dtype) {
  if (x.dtype() == dtype) return x;
  return emit(graph_of(x, "cast"), Op::cast, {x.id()}, CastAttrs{dtype});
}

// ---- Broadcasting --------------------------------------------------------------------

Shape broadcast_shapes(const Shape& a, const Shape& b, std::string_view what) {
  int rank = std::max(a.rank(), b.rank());
  std::vector<std::int64_t> dims(static_cast<std::size_t>(rank));
  for (int i = 0; i < rank; ++i) {
    int ia = a.rank() - rank + i, ib = b.rank() - rank + i;
    std::int64_t da = ia >= 0 ? a[ia] : 1, db = ib >= 0 ? b[ib] : 1;
    check(da == db || da == 1 || db == 1, what, ": shapes ", a.to_string(), " and ", b.to_string(),
          " cannot be broadcast together (axis ", i, ": ", da, " vs ", db, ")");
    dims[static_cast<std::size_t>(i)] = da == 1 ? db : da;
  }
  return Shape(std::move(dims));
}

Expr broadcast(const Expr& x, const Shape& shape, const Ints& dims) {
  return emit(graph_of(x, "broadcast"), Op::broadcast, {x.id()}, BroadcastAttrs{shape, dims});
}

Expr broadcast_to(const Expr& x, const Shape& shape) {
  if (x.shape() == shape) return x;
  check(x.rank() <= shape.rank(), "broadcast_to: cannot broadcast ", x.type(), " to ", shape,
        " of lower rank");
  Ints dims;
  for (int i = 0; i < x.rank(); ++i) dims.push_back(shape.rank() - x.rank() + i);
  return broadcast(x, shape, dims);
}

}  // namespace glia
