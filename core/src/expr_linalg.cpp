// Linear algebra of the tracing API: dot (Nx.dot), dot_general, matmul (numpy.matmul)
// and conv. Operands are promoted to one dtype (bool contracts as i64); axes may be
// negative; shapes are checked here so errors name the function the user called.
#include "glia/core/expr.hpp"

namespace glia {

namespace {

// Both operands defined, in one trace, promoted to one numeric dtype.
std::pair<Expr, Expr> promoted(const Expr& a, const Expr& b, std::string_view what) {
  check(a.defined() && b.defined(), what, ": an operand is an undefined Expr");
  check(a.graph() == b.graph(), what, ": operands come from different traces");
  DType t = promote(a.dtype(), b.dtype());
  if (t == DType::boolean) t = DType::i64;
  return {cast(a, t), cast(b, t)};
}

Ints normalized(const Expr& x, const Ints& axes, std::string_view what) {
  Ints out;
  for (std::int64_t a : axes) out.push_back(x.shape().normalize_axis(a, what));
  return out;
}

Expr emit_dot(const Expr& a, const Expr& b, DotAttrs attrs) {
  return Expr(a.graph(), a.graph()->add(Op::dot_general, {a.id(), b.id()}, std::move(attrs)));
}

Ints iota_ints(int n) {
  Ints v;
  for (int i = 0; i < n; ++i) v.push_back(i);
  return v;
}

}  // namespace

Expr dot(const Expr& a, const Expr& b) {
  auto [x, y] = promoted(a, b, "dot");
  if (x.rank() == 0 || y.rank() == 0) return multiply(x, y);
  int xa = x.rank() - 1;
  int ya = y.rank() == 1 ? 0 : y.rank() - 2;
  check(x.shape()[xa] == y.shape()[ya], "dot: cannot contract ", a.type(), " with ", b.type(),
        ": axis ", xa, " of the first has size ", x.shape()[xa], ", axis ", ya,
        " of the second has size ", y.shape()[ya]);
  return emit_dot(x, y, DotAttrs{{xa}, {ya}, {}, {}});
}

Expr dot_general(const Expr& a, const Expr& b, const Ints& contract_a, const Ints& contract_b,
                 const Ints& batch_a, const Ints& batch_b) {
  auto [x, y] = promoted(a, b, "dot_general");
  return emit_dot(
      x, y,
      DotAttrs{normalized(x, contract_a, "dot_general"), normalized(y, contract_b, "dot_general"),
               normalized(x, batch_a, "dot_general"), normalized(y, batch_b, "dot_general")});
}

Expr matmul(const Expr& a, const Expr& b) {
  auto [x, y] = promoted(a, b, "matmul");
  check(x.rank() >= 1 && y.rank() >= 1, "matmul: operands must have rank >= 1 (use multiply for ",
        "scalars), got ", a.type(), " and ", b.type());
  // A vector becomes a matrix [1, k] (first operand) or [k, 1] (second); the added axis
  // is removed from the result.
  bool a_vector = x.rank() == 1, b_vector = y.rank() == 1;
  if (a_vector) x = reshape(x, {1, x.shape()[0]});
  if (b_vector) y = reshape(y, {y.shape()[0], 1});
  int xr = x.rank(), yr = y.rank();
  check(x.shape()[xr - 1] == y.shape()[yr - 2], "matmul: cannot multiply ", a.type(), " by ",
        b.type(), ": ", x.shape()[xr - 1], " columns against ", y.shape()[yr - 2], " rows");
  Expr out;
  if (yr == 2) {
    // No batch axes on the right: one contraction over x's last axis, no broadcast.
    out = emit_dot(x, y, DotAttrs{{xr - 1}, {0}, {}, {}});
  } else {
    Ints xb(x.shape().dims().begin(), x.shape().dims().end() - 2);
    Ints yb(y.shape().dims().begin(), y.shape().dims().end() - 2);
    Shape batch = broadcast_shapes(Shape(xb), Shape(yb), "matmul");
    Ints xd = batch.dims(), yd = batch.dims();
    xd.insert(xd.end(), {x.shape()[xr - 2], x.shape()[xr - 1]});
    yd.insert(yd.end(), {y.shape()[yr - 2], y.shape()[yr - 1]});
    x = broadcast_to(x, Shape(xd));
    y = broadcast_to(y, Shape(yd));
    int nb = batch.rank();
    out = emit_dot(x, y, DotAttrs{{nb + 1}, {nb}, iota_ints(nb), iota_ints(nb)});
  }
  if (!a_vector && !b_vector) return out;
  Ints dims = out.shape().dims();  // [..., n, m]
  if (b_vector) dims.erase(dims.end() - 1);
  if (a_vector) dims.erase(dims.end() - (b_vector ? 1 : 2));
  return reshape(out, dims);
}

Expr conv(const Expr& input, const Expr& kernel, const ConvOptions& options) {
  auto [x, w] = promoted(input, kernel, "conv");
  check(x.rank() == w.rank() && x.rank() >= 3, "conv: input [N, C, spatial...] and kernel ",
        "[O, C/feature_groups, spatial...] must have one rank of at least 3, got ", input.type(),
        " and ", kernel.type());
  auto spatial = static_cast<std::size_t>(x.rank() - 2);
  auto or_default = [&](const Ints& v, std::int64_t fill) {
    return v.empty() ? Ints(spatial, fill) : v;
  };
  ConvAttrs attrs{or_default(options.strides, 1),
                  or_default(options.padding_low, 0),
                  or_default(options.padding_high, 0),
                  or_default(options.input_dilation, 1),
                  or_default(options.kernel_dilation, 1),
                  options.feature_groups,
                  options.batch_groups};
  return Expr(x.graph(), x.graph()->add(Op::convolution, {x.id(), w.id()}, std::move(attrs)));
}

}  // namespace glia
