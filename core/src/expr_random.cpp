// glia::random: counter-based random numbers in the tracing API. A key is a u32[2]
// value; everything is derived from random_bits (Threefry-2x32, see rules_random.cpp),
// so a traced function draws the same numbers from the same key on every backend.
#include <cmath>
#include <limits>
#include <numbers>

#include "glia/core/expr.hpp"

namespace glia::random {

namespace {

void check_key(const Expr& key, std::string_view what) {
  check(key.defined(), what, ": the key is an undefined Expr");
  check(key.dtype() == DType::u32 && key.shape() == Shape{2}, what,
        ": the key must be u32[2] (see glia::random::key), got ", key.type());
}

void check_float(DType dtype, std::string_view what) {
  check(is_float(dtype), what, ": expected a floating-point dtype (f16, bf16, f32, f64), got ",
        dtype);
}

Expr random_bits(const Expr& key, const Shape& shape) {
  Graph& g = *key.graph();
  return Expr(&g, g.add(Op::random_bits, {key.id()}, RandomBitsAttrs{shape}));
}

// 16-bit floats are sign-magnitude, so the neighbours of a value are one step of its bits.
template <class H>
double step16(double v, bool up) {
  H h(static_cast<float>(v));
  bool negative = (h.bits & 0x8000u) != 0;
  if (up)
    h.bits = negative ? (h.bits == 0x8000u ? 0x0001u : h.bits - 1u) : h.bits + 1u;
  else
    h.bits = negative ? h.bits + 1u : (h.bits == 0 ? 0x8001u : h.bits - 1u);
  return static_cast<float>(h);
}

// The next value of `dtype` above (or below) v, a value of that dtype.
double step(double v, DType dtype, bool up) {
  const double toward = (up ? 1 : -1) * std::numeric_limits<double>::infinity();
  switch (dtype) {
    case DType::f64:
      return std::nextafter(v, toward);
    case DType::f32:
      return std::nextafter(static_cast<float>(v), static_cast<float>(toward));
    case DType::f16:
      return step16<Half>(v, up);
    default:
      return step16<BFloat16>(v, up);
  }
}

// The smallest value of `dtype` >= v, and the largest one < v: uniform's bounds.
double value_at_least(double v, DType dtype) {
  double r = Tensor::scalar(v, dtype).item<double>();
  return r >= v ? r : step(r, dtype, true);
}
double value_below(double v, DType dtype) {
  double r = Tensor::scalar(v, dtype).item<double>();
  return r < v ? r : step(r, dtype, false);
}

}  // namespace

Tensor key(std::uint64_t seed) {
  return Tensor::from<std::uint32_t>(
      {static_cast<std::uint32_t>(seed >> 32), static_cast<std::uint32_t>(seed)});
}

Expr split(const Expr& key, std::int64_t parts) {
  check_key(key, "random::split");
  check(parts >= 1, "random::split: parts must be >= 1, got ", parts);
  return random_bits(key, Shape{parts, 2});
}

// fold_in(key, data) = threefry(K + (0, data), (0, 0)) with K = threefry(key, (0, 0)):
// hashing the key first makes the derived keys of neighbouring keys (key(1), key(2))
// unrelated, which adding data to the key itself would not.
Expr fold_in(const Expr& key, std::uint32_t data) {
  check_key(key, "random::fold_in");
  TraceScope scope(*key.graph());
  Expr hashed = random_bits(key, Shape{2});
  Expr mixed = hashed + Expr(Tensor::from<std::uint32_t>({0, data}));
  return random_bits(mixed, Shape{2});
}

Expr bits(const Expr& key, const Shape& shape) {
  check_key(key, "random::bits");
  return random_bits(key, shape);
}

// The top 24 bits (32 for f64) scaled by 2^-24 (2^-32) give u in [0, 1) exactly in the
// compute type; rounding of the affine map and of the final cast is clamped back into
// [min, max), so max is never drawn.
Expr uniform(const Expr& key, const Shape& shape, double min, double max, DType dtype) {
  check_key(key, "random::uniform");
  check_float(dtype, "random::uniform");
  check(std::isfinite(min) && std::isfinite(max) && min < max,
        "random::uniform: expected finite min < max, got min=", min, ", max=", max);
  const double lo = value_at_least(min, dtype), hi = value_below(max, dtype);
  check(lo <= hi, "random::uniform: no ", dtype, " value lies in [", min, ", ", max, ")");
  Expr b = random_bits(key, shape);
  Expr u = dtype == DType::f64 ? cast(b, DType::f64) * 0x1p-32
                               : cast(divide(b, 256), DType::f32) * 0x1p-24;
  // A weighted mean of the bounds cannot overflow where max - min would.
  Expr y = cast(u * max + (1.0 - u) * min, dtype);
  return glia::min(glia::max(y, lo), hi);
}

// Box-Muller: r = sqrt(-2 log(1 - u1)), z = r cos(2 pi u2); 1 - u1 is in (0, 1], so the
// log is finite. u1 and u2 come from two keys folded in from `key`.
Expr normal(const Expr& key, const Shape& shape, double mean, double stddev, DType dtype) {
  check_key(key, "random::normal");
  check_float(dtype, "random::normal");
  check(std::isfinite(mean) && std::isfinite(stddev) && stddev >= 0,
        "random::normal: expected a finite mean and a finite stddev >= 0, got mean=", mean,
        ", stddev=", stddev);
  const DType c = dtype == DType::f64 ? DType::f64 : DType::f32;
  Expr u1 = uniform(fold_in(key, 0), shape, 0, 1, c);
  Expr u2 = uniform(fold_in(key, 1), shape, 0, 1, c);
  Expr z = sqrt(-2.0 * log(1.0 - u1)) * cos(2.0 * std::numbers::pi * u2);
  return cast(z * stddev + mean, dtype);
}

Expr bernoulli(const Expr& key, const Operand& p, const Shape& shape) {
  check_key(key, "random::bernoulli");
  DType c = DType::f32;
  if (p.is_expr()) {
    const Expr& e = p.expr();
    check(e.graph() == key.graph(), "random::bernoulli: key and p come from different traces");
    check(broadcast_shapes(e.shape(), shape, "random::bernoulli") == shape,
          "random::bernoulli: p of shape ", e.shape(), " does not broadcast to ", shape);
    if (e.dtype() == DType::f64) c = DType::f64;
  } else {
    check(p.value() >= 0 && p.value() <= 1, "random::bernoulli: p must lie in [0, 1], got ",
          p.value());
  }
  return less(uniform(key, shape, 0, 1, c), p);
}

}  // namespace glia::random
