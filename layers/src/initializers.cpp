// Parameter initializers (Axon's 14), written with Expr ops on the counter-based PRNG.
// Random draws are computed in f32 (f64 for f64 parameters) and cast to the requested
// dtype, so f16/bf16 parameters are the rounded f32 values.
#include "glia/layers/initializers.hpp"

#include <cmath>
#include <numbers>

#include "layer_config.hpp"

namespace glia::initializers {

namespace {

// The type random draws are computed in.
DType compute_dtype(DType t) { return t == DType::f64 ? DType::f64 : DType::f32; }

void check_float(std::string_view name, const TensorType& t) {
  check(is_float(t.dtype), name, ": expected a floating-point parameter, got ", t.to_string());
}

// Fans of a channels-last kernel [..spatial, in, out] (see the header).
struct Fans {
  double in, out;
};
Fans fans(const Shape& s) {
  if (s.rank() < 2) {
    double n = static_cast<double>(s.numel());
    return {n, n};
  }
  double receptive = 1;
  for (int i = 0; i < s.rank() - 2; ++i) receptive *= static_cast<double>(s[i]);
  return {static_cast<double>(s[s.rank() - 2]) * receptive,
          static_cast<double>(s[s.rank() - 1]) * receptive};
}

// erfinv(x) for |x| < 1: Giles' single-precision approximation, as XLA's ErfInv32.
// For f64 one Newton step on erf refines it to near double precision.
Expr erfinv(const Expr& x) {
  Expr w = -log((1.0 - x) * (1.0 + x));
  Expr lo = w - 2.5;
  Expr p_lo = glia::full(x.shape(), 2.81022636e-08, x.dtype());
  for (double c : {3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087, -0.00125372503,
                   -0.00417768164, 0.246640727, 1.50140941})
    p_lo = c + p_lo * lo;
  Expr hi = sqrt(w) - 3.0;
  Expr p_hi = glia::full(x.shape(), -0.000200214257, x.dtype());
  for (double c : {0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773, -0.0076224613,
                   0.00943887047, 1.00167406, 2.83297682})
    p_hi = c + p_hi * hi;
  Expr z = select(less(w, 5.0), p_lo, p_hi) * x;
  if (x.dtype() == DType::f64) {
    // erf'(z) = 2 / sqrt(pi) exp(-z^2)
    z = z - (erf(z) - x) / (exp(-square(z)) * (2.0 / std::sqrt(std::numbers::pi)));
  }
  return z;
}

// A standard normal truncated to [-2, 2], by the inverse CDF (as jax.random.truncated_normal).
Expr truncated_normal(const Expr& key, const Shape& shape, DType c) {
  const double bound = std::erf(2.0 / std::numbers::sqrt2);
  Expr u = random::uniform(key, shape, -bound, bound, c);
  Expr z = std::numbers::sqrt2 * erfinv(u);
  return clip(z, -2.0, 2.0);
}

// Modified Gram-Schmidt on the columns of a [m, n] matrix with m >= n: the Q of its QR
// decomposition with a positive diagonal in R. Unrolled over the columns at trace time.
Expr gram_schmidt(Expr v) {
  const std::int64_t n = v.dim(1);
  std::vector<Expr> q;
  for (std::int64_t j = 0; j < n; ++j) {
    Expr col = slice_axis(v, 0, 1, 1);  // (m, 1)
    col = col * rsqrt(sum(square(col)));
    q.push_back(col);
    if (j + 1 < n) {
      Expr rest = slice_axis(v, 1, n - j - 1, 1);  // (m, n - j - 1)
      v = rest - col * sum(col * rest, {0}, true);
    }
  }
  return concatenate(q, 1);
}

Initializer random_initializer(std::string name,
                               std::function<Expr(const Expr&, const Shape&, DType)> draw) {
  return {name, [name, draw](const Expr& key, const TensorType& t) {
            check_float(name, t);
            return cast(draw(key, t.shape, compute_dtype(t.dtype)), t.dtype);
          }};
}

// variance_scaling under another name (for display and errors).
Initializer scaled(std::string name, double scale, FanMode mode, Distribution distribution) {
  check(std::isfinite(scale) && scale > 0, "initializers::", name, ": scale must be positive, got ",
        scale);
  return random_initializer(name, [=](const Expr& key, const Shape& s, DType c) {
    if (s.numel() == 0) return glia::zeros(s, c);
    Fans f = fans(s);
    double fan = mode == FanMode::fan_in    ? f.in
                 : mode == FanMode::fan_out ? f.out
                                            : (f.in + f.out) / 2;
    double variance = scale / fan;
    switch (distribution) {
      case Distribution::uniform: {
        double limit = std::sqrt(3.0 * variance);
        return random::uniform(key, s, -limit, limit, c);
      }
      case Distribution::normal:
        return random::normal(key, s, 0, std::sqrt(variance), c);
      case Distribution::truncated_normal:
        // 0.8796... is the stddev of a standard normal truncated to [-2, 2].
        return truncated_normal(key, s, c) * (std::sqrt(variance) / 0.87962566103423978);
    }
    throw Error("variance_scaling: unknown distribution");
  });
}

// The initializer with its JSON config (name and arguments) for model_to_json.
Initializer described(Initializer init, const detail::ConfigWriter& args) {
  init.config = args.str();
  return init;
}
detail::ConfigWriter named(std::string_view name) {
  return detail::ConfigWriter().string("name", name);
}
// {"name": ..., "scale": ...}: the initializers whose only argument is a scale.
detail::ConfigWriter with_scale(std::string_view name, double scale) {
  return named(name).number("scale", scale);
}

std::string_view mode_name(FanMode m) {
  return m == FanMode::fan_in ? "fan_in" : m == FanMode::fan_out ? "fan_out" : "fan_avg";
}
std::string_view distribution_name(Distribution d) {
  return d == Distribution::normal    ? "normal"
         : d == Distribution::uniform ? "uniform"
                                      : "truncated_normal";
}

}  // namespace

Initializer zeros() {
  return described(
      {"zeros", [](const Expr&, const TensorType& t) { return glia::zeros(t.shape, t.dtype); }},
      named("zeros"));
}

Initializer ones() {
  return described(
      {"ones", [](const Expr&, const TensorType& t) { return glia::ones(t.shape, t.dtype); }},
      named("ones"));
}

Initializer full(double value) {
  return described(
      {cat("full(", value, ")"),
       [value](const Expr&, const TensorType& t) { return glia::full(t.shape, value, t.dtype); }},
      named("full").number("value", value));
}

Initializer identity(double scale) {
  Initializer init{"identity", [scale](const Expr&, const TensorType& t) {
                     check(t.shape.rank() == 2, "identity: expected a rank-2 parameter, got ",
                           t.to_string());
                     Expr eye = equal(iota(t.shape, 0), iota(t.shape, 1));
                     return select(eye, glia::full({}, scale, t.dtype), glia::zeros({}, t.dtype));
                   }};
  return described(init, with_scale("identity", scale));
}

Initializer uniform(double scale) {
  check(std::isfinite(scale) && scale > 0, "initializers::uniform: scale must be positive, got ",
        scale);
  return described(random_initializer("uniform",
                                      [scale](const Expr& key, const Shape& s, DType c) {
                                        return random::uniform(key, s, -scale, scale, c);
                                      }),
                   with_scale("uniform", scale));
}

Initializer normal(double mean, double stddev) {
  check(std::isfinite(mean) && std::isfinite(stddev) && stddev >= 0,
        "initializers::normal: expected a finite mean and stddev >= 0, got mean=", mean,
        ", stddev=", stddev);
  return described(random_initializer("normal",
                                      [mean, stddev](const Expr& key, const Shape& s, DType c) {
                                        return random::normal(key, s, mean, stddev, c);
                                      }),
                   named("normal").number("mean", mean).number("stddev", stddev));
}

Initializer variance_scaling(double scale, FanMode mode, Distribution distribution) {
  return described(scaled("variance_scaling", scale, mode, distribution),
                   with_scale("variance_scaling", scale)
                       .string("mode", mode_name(mode))
                       .string("distribution", distribution_name(distribution)));
}

Initializer lecun_uniform(double scale) {
  return described(scaled("lecun_uniform", scale, FanMode::fan_in, Distribution::uniform),
                   with_scale("lecun_uniform", scale));
}
Initializer lecun_normal(double scale) {
  return described(scaled("lecun_normal", scale, FanMode::fan_in, Distribution::truncated_normal),
                   with_scale("lecun_normal", scale));
}
Initializer glorot_uniform(double scale) {
  return described(scaled("glorot_uniform", scale, FanMode::fan_avg, Distribution::uniform),
                   with_scale("glorot_uniform", scale));
}
Initializer glorot_normal(double scale) {
  return described(scaled("glorot_normal", scale, FanMode::fan_avg, Distribution::truncated_normal),
                   with_scale("glorot_normal", scale));
}
Initializer he_uniform(double scale) {
  return described(scaled("he_uniform", scale, FanMode::fan_in, Distribution::uniform),
                   with_scale("he_uniform", scale));
}
Initializer he_normal(double scale) {
  return described(scaled("he_normal", scale, FanMode::fan_in, Distribution::truncated_normal),
                   with_scale("he_normal", scale));
}

Initializer orthogonal(double scale) {
  check(std::isfinite(scale), "initializers::orthogonal: scale must be finite, got ", scale);
  Initializer init{
      "orthogonal", [scale](const Expr& key, const TensorType& t) {
        check_float("orthogonal", t);
        check(t.shape.rank() >= 2, "orthogonal: expected a parameter of rank >= 2, got ",
              t.to_string());
        const DType c = compute_dtype(t.dtype);
        if (t.shape.numel() == 0) return glia::zeros(t.shape, t.dtype);
        const std::int64_t cols = t.shape[t.shape.rank() - 1];
        const std::int64_t rows = t.shape.numel() / cols;
        const bool wide = rows < cols;
        Expr a = random::normal(key, wide ? Shape{cols, rows} : Shape{rows, cols}, 0, 1, c);
        // A second pass restores orthogonality lost to rounding (twice is enough); its R
        // is near I with a positive diagonal, so Q stays A's QR factor.
        Expr q = gram_schmidt(gram_schmidt(a));
        if (wide) q = transpose(q);
        return cast(reshape(q * scale, t.shape.dims()), t.dtype);
      }};
  return described(init, with_scale("orthogonal", scale));
}

Initializer by_name(std::string_view name) {
  if (name == "zeros") return zeros();
  if (name == "ones") return ones();
  if (name == "identity") return identity();
  if (name == "uniform") return uniform();
  if (name == "normal") return normal();
  if (name == "lecun_uniform") return lecun_uniform();
  if (name == "lecun_normal") return lecun_normal();
  if (name == "glorot_uniform") return glorot_uniform();
  if (name == "glorot_normal") return glorot_normal();
  if (name == "he_uniform") return he_uniform();
  if (name == "he_normal") return he_normal();
  if (name == "variance_scaling") return variance_scaling();
  if (name == "orthogonal") return orthogonal();
  check(name != "full", "initializers::by_name: 'full' needs a value; use initializers::full(v)");
  throw Error(cat("initializers::by_name: unknown initializer '", name,
                  "' (known: zeros, ones, full, identity, uniform, normal, lecun_uniform, "
                  "lecun_normal, glorot_uniform, glorot_normal, he_uniform, he_normal, "
                  "variance_scaling, orthogonal)"));
}

}  // namespace glia::initializers
