// Composite functions of the tracing API, written with primitives only (so they need
// no kernel and no gradient rule of their own): activations, clip, numerically stable
// softmax / log_softmax, and one_hot.
#include "glia/core/expr.hpp"

namespace glia {

namespace {

void check_defined(const Expr& x, std::string_view what) {
  check(x.defined(), what, ": the operand is an undefined Expr");
}

// Integer inputs of float-only math are cast to f32, as Nx does.
Expr float_operand(const Expr& x) { return is_float(x.dtype()) ? x : cast(x, DType::f32); }

}  // namespace

Expr sigmoid(const Expr& x) { return logistic(x); }

Expr relu(const Expr& x) {
  check_defined(x, "relu");
  return max(x, 0);
}

Expr square(const Expr& x) {
  check_defined(x, "square");
  return x * x;
}

Expr reciprocal(const Expr& x) {
  check_defined(x, "reciprocal");
  return divide(1.0, x);
}

Expr clip(const Expr& x, const Operand& lo, const Operand& hi) {
  check_defined(x, "clip");
  if (!lo.is_expr() && !hi.is_expr())
    check(lo.value() <= hi.value(), "clip: lo (", lo.value(), ") must not exceed hi (", hi.value(),
          ")");
  return min(max(x, lo), hi);
}

// Subtracting the maximum along the axis keeps exp() from overflowing; the result is
// mathematically unchanged.
Expr softmax(const Expr& x, std::int64_t axis) {
  check_defined(x, "softmax");
  Expr f = float_operand(x);
  int a = f.shape().normalize_axis(axis, "softmax");
  Expr e = exp(f - reduce_max(f, {a}, true));
  // Times the sum's reciprocal, as ATen's softmax: one division a row, not one an element
  // (a vector division costs several multiplications: over 1,000 floats 102 -> 34 ns).
  return e * reciprocal(sum(e, {a}, true));
}

// log_softmax(x) = (x - m) - log(sum(exp(x - m))): the largest term of the sum is 1, so
// the log never sees 0 and extreme logits stay finite.
Expr log_softmax(const Expr& x, std::int64_t axis) {
  check_defined(x, "log_softmax");
  Expr f = float_operand(x);
  int a = f.shape().normalize_axis(axis, "log_softmax");
  Expr shifted = f - reduce_max(f, {a}, true);
  return shifted - log(sum(exp(shifted), {a}, true));
}

// Compares the indices, broadcast along a new last axis, with that axis' iota; an
// index outside [0, num_classes) gives a row of zeros.
Expr one_hot(const Expr& indices, std::int64_t num_classes, DType dtype) {
  check_defined(indices, "one_hot");
  check(is_integer(indices.dtype()), "one_hot: indices must have an integer dtype, got ",
        indices.type());
  check(num_classes >= 1, "one_hot: num_classes must be >= 1, got ", num_classes);
  TraceScope scope(*indices.graph());
  Ints dims = indices.shape().dims(), axes;
  for (int i = 0; i < indices.rank(); ++i) axes.push_back(i);
  dims.push_back(num_classes);
  Shape out(dims);
  // i64 classes: a u8 iota would wrap past 255.
  Expr wide = broadcast(cast(indices, DType::i64), out, axes);
  Expr classes = iota(out, indices.rank(), DType::i64);
  return cast(equal(wide, classes), dtype);
}

}  // namespace glia
