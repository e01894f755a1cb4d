// Initializers: constants, identity, moments of the random ones over large draws, fans of
// dense and conv kernels, truncation, orthogonality, determinism, dtypes, by_name, errors.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "glia/core.hpp"
#include "glia/layers.hpp"
#include "glia/layers/initializers.hpp"

// GCC 12 flags options given with designated initializers that leave fields out.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace glia {
namespace {

using ::testing::HasSubstr;
using ::testing::ThrowsMessage;
namespace init = initializers;

// The initializer's value for a parameter of type `t`, drawn from random::key(seed).
Tensor draw(const Initializer& i, const TensorType& t, std::uint64_t seed = 0) {
  Graph g = trace([&](const std::vector<Expr>& in) { return std::vector<Expr>{i.fn(in[0], t)}; },
                  {{DType::u32, Shape{2}}}, "init");
  std::vector<Tensor> args{random::key(seed)};
  return interpret(g, args)[0];
}

struct Moments {
  double mean, variance, max_abs;
};
Moments moments(const Tensor& t) {
  std::vector<double> v = t.to_vector<double>();
  double n = static_cast<double>(v.size());
  double mean = std::accumulate(v.begin(), v.end(), 0.0) / n;
  double var = 0, max_abs = 0;
  for (double x : v) {
    var += (x - mean) * (x - mean);
    max_abs = std::max(max_abs, std::abs(x));
  }
  return {mean, var / n, max_abs};
}

// The fraction of values with |x| > bound.
double fraction_beyond(const Tensor& t, double bound) {
  std::vector<double> v = t.to_vector<double>();
  double k = 0;
  for (double x : v) k += std::abs(x) > bound ? 1 : 0;
  return k / static_cast<double>(v.size());
}

const TensorType kBig{DType::f32, Shape{200, 500}};  // 100k values, fan_in 200, fan_out 500

TEST(Initializers, Constants) {
  for (DType dt : {DType::f32, DType::f64, DType::i32, DType::bf16}) {
    TensorType t{dt, Shape{2, 3}};
    Tensor z = draw(init::zeros(), t), o = draw(init::ones(), t), f = draw(init::full(2.5), t);
    ASSERT_EQ(z.type(), t);
    ASSERT_EQ(o.type(), t);
    ASSERT_EQ(f.type(), t);
    for (std::int64_t k = 0; k < 6; ++k) {
      EXPECT_EQ(z.element(k), 0);
      EXPECT_EQ(o.element(k), 1);
      EXPECT_EQ(f.element(k), dt == DType::i32 ? 2 : 2.5);
    }
  }
  EXPECT_EQ(draw(init::full(-3), {DType::f32, Shape{}}).item<float>(), -3.0f);
}

TEST(Initializers, Identity) {
  Tensor sq = draw(init::identity(2), {DType::f32, Shape{3, 3}});
  EXPECT_EQ(sq.to_vector<float>(), (std::vector<float>{2, 0, 0, 0, 2, 0, 0, 0, 2}));
  Tensor wide = draw(init::identity(), {DType::f64, Shape{2, 4}});
  EXPECT_EQ(wide.to_vector<double>(), (std::vector<double>{1, 0, 0, 0, 0, 1, 0, 0}));
  Tensor tall = draw(init::identity(0.5), {DType::f16, Shape{3, 2}});
  EXPECT_EQ(tall.dtype(), DType::f16);
  EXPECT_EQ(tall.cast(DType::f32).to_vector<float>(), (std::vector<float>{0.5, 0, 0, 0.5, 0, 0}));
  EXPECT_THAT(
      [] {
        draw(init::identity(), {DType::f32, Shape{2, 2, 2}});
      },
      ThrowsMessage<Error>(HasSubstr("identity: expected a rank-2 parameter")));
  EXPECT_THAT(
      [] {
        draw(init::identity(), {DType::f32, Shape{4}});
      },
      ThrowsMessage<Error>(HasSubstr("identity: expected a rank-2 parameter")));
}

TEST(Initializers, UniformMoments) {
  Tensor u = draw(init::uniform(0.5), kBig);
  Moments m = moments(u);
  EXPECT_NEAR(m.mean, 0, 5e-3);
  EXPECT_NEAR(m.variance, 0.25 / 3, 0.03 * 0.25 / 3);
  EXPECT_LE(m.max_abs, 0.5);
  EXPECT_GT(m.max_abs, 0.499);
}

TEST(Initializers, NormalMoments) {
  Tensor n = draw(init::normal(1.0, 0.5), kBig);
  Moments m = moments(n);
  EXPECT_NEAR(m.mean, 1.0, 1e-2);
  EXPECT_NEAR(m.variance, 0.25, 0.03 * 0.25);
  // About 31.7% of a normal lies beyond one stddev.
  std::vector<double> v = n.to_vector<double>();
  double k = 0;
  for (double x : v) k += std::abs(x - 1.0) > 0.5 ? 1 : 0;
  EXPECT_NEAR(k / static_cast<double>(v.size()), 0.3173, 0.01);
}

// Variance scale / fan for every mode and distribution on a [200, 500] kernel.
TEST(Initializers, VarianceScalingModesAndDistributions) {
  const double scale = 2.0;
  for (auto [mode, fan] :
       {std::pair{init::FanMode::fan_in, 200.0}, std::pair{init::FanMode::fan_out, 500.0},
        std::pair{init::FanMode::fan_avg, 350.0}}) {
    const double v = scale / fan;
    for (auto dist : {init::Distribution::uniform, init::Distribution::normal,
                      init::Distribution::truncated_normal}) {
      SCOPED_TRACE(::testing::Message()
                   << "fan " << fan << " distribution " << static_cast<int>(dist));
      Tensor t = draw(init::variance_scaling(scale, mode, dist), kBig);
      ASSERT_EQ(t.type(), kBig);
      Moments m = moments(t);
      EXPECT_NEAR(m.mean, 0, 5 * std::sqrt(v / 1e5));
      EXPECT_NEAR(m.variance, v, 0.03 * v);
      if (dist == init::Distribution::uniform) {
        EXPECT_LE(m.max_abs, std::sqrt(3 * v));
        EXPECT_GT(m.max_abs, 0.999 * std::sqrt(3 * v));
      }
    }
  }
}

// JAX's truncated normal: stddev_raw = sqrt(v) / 0.8796..., nothing beyond 2 stddev_raw,
// and variance v.
void expect_truncated_normal(const Tensor& t, double v, double tolerance = 0.03) {
  const double raw = std::sqrt(v) / 0.87962566103423978;
  Moments m = moments(t);
  EXPECT_LE(m.max_abs, 2 * raw * (1 + 1e-6));
  EXPECT_GT(m.max_abs, 1.98 * raw);
  EXPECT_NEAR(m.mean, 0, 5 * std::sqrt(v / static_cast<double>(t.numel())));
  EXPECT_NEAR(m.variance, v, tolerance * v);
  // The distribution's shape: P(|z| > a | |z| < 2) = 1 - erf(a / sqrt 2) / erf(sqrt 2).
  for (double a : {0.25, 0.5, 1.0, 1.5, 1.9}) {
    const double beyond = 1 - std::erf(a / std::sqrt(2.0)) / std::erf(std::sqrt(2.0));
    EXPECT_NEAR(fraction_beyond(t, a * raw), beyond, 0.01) << a;
  }
}

TEST(Initializers, TruncatedNormalF32AndF64) {
  expect_truncated_normal(draw(init::lecun_normal(), kBig), 1.0 / 200);
  TensorType f64{DType::f64, Shape{200, 500}};
  Tensor t = draw(
      init::variance_scaling(3.0, init::FanMode::fan_out, init::Distribution::truncated_normal),
      f64);
  ASSERT_EQ(t.dtype(), DType::f64);
  expect_truncated_normal(t, 3.0 / 500);
}

TEST(Initializers, NamedVarianceScalingOnDenseKernel) {
  // fan_in 200, fan_out 500, fan_avg 350.
  expect_truncated_normal(draw(init::lecun_normal(0.5), kBig), 0.5 / 200);
  expect_truncated_normal(draw(init::glorot_normal(), kBig), 1.0 / 350);
  expect_truncated_normal(draw(init::he_normal(), kBig), 2.0 / 200);
  for (auto [i, v] :
       {std::pair{init::lecun_uniform(), 1.0 / 200}, std::pair{init::glorot_uniform(), 1.0 / 350},
        std::pair{init::he_uniform(), 2.0 / 200}, std::pair{init::he_uniform(1.0), 1.0 / 200}}) {
    SCOPED_TRACE(i.name);
    Moments m = moments(draw(i, kBig));
    EXPECT_NEAR(m.variance, v, 0.03 * v);
    EXPECT_LE(m.max_abs, std::sqrt(3 * v));
    EXPECT_GT(m.max_abs, 0.999 * std::sqrt(3 * v));
  }
}

// The uniform bound sqrt(3 scale / fan) pins the fan exactly.
double uniform_bound(init::FanMode mode, const Shape& shape) {
  return moments(draw(init::variance_scaling(1.0, mode, init::Distribution::uniform),
                      {DType::f32, shape}))
      .max_abs;
}

TEST(Initializers, FansOfConvKernelsVectorsAndScalars) {
  // [5, 5, 64, 40]: fan_in = 25 * 64 = 1600, fan_out = 25 * 40 = 1000.
  Shape conv{5, 5, 64, 40};
  EXPECT_NEAR(uniform_bound(init::FanMode::fan_in, conv), std::sqrt(3.0 / 1600), 1e-4);
  EXPECT_NEAR(uniform_bound(init::FanMode::fan_out, conv), std::sqrt(3.0 / 1000), 1e-4);
  EXPECT_NEAR(uniform_bound(init::FanMode::fan_avg, conv), std::sqrt(3.0 / 1300), 1e-4);
  // [3, 3, 16, 32]: fan_in 144, fan_out 288.
  Shape small{3, 3, 16, 32};
  EXPECT_LE(uniform_bound(init::FanMode::fan_in, small), std::sqrt(3.0 / 144));
  EXPECT_GT(uniform_bound(init::FanMode::fan_in, small), 0.99 * std::sqrt(3.0 / 144));
  EXPECT_LE(uniform_bound(init::FanMode::fan_out, small), std::sqrt(3.0 / 288));
  EXPECT_GT(uniform_bound(init::FanMode::fan_out, small), 0.99 * std::sqrt(3.0 / 288));
  Moments conv_normal = moments(draw(init::he_normal(), {DType::f32, conv}));
  EXPECT_NEAR(conv_normal.variance, 2.0 / 1600, 0.03 * 2.0 / 1600);
  // A vector's fans are its length; a scalar's are 1.
  EXPECT_NEAR(uniform_bound(init::FanMode::fan_in, Shape{30000}), std::sqrt(3.0 / 30000), 1e-5);
  double s = std::abs(draw(init::he_uniform(), {DType::f32, Shape{}}).item<float>());
  EXPECT_LE(s, std::sqrt(6.0));
  EXPECT_GT(s, 0.0);
  EXPECT_EQ(draw(init::glorot_uniform(), {DType::f32, Shape{0, 4}}).shape(), (Shape{0, 4}));
}

// Q^T Q for a [rows, cols] matrix given row-major.
std::vector<double> gram(const std::vector<double>& q, std::int64_t rows, std::int64_t cols) {
  std::vector<double> g(static_cast<std::size_t>(cols * cols));
  for (std::int64_t i = 0; i < cols; ++i)
    for (std::int64_t j = 0; j < cols; ++j)
      for (std::int64_t r = 0; r < rows; ++r) g[i * cols + j] += q[r * cols + i] * q[r * cols + j];
  return g;
}

void expect_identity(const std::vector<double>& g, std::int64_t n, double scale2, double tol) {
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t j = 0; j < n; ++j)
      EXPECT_NEAR(g[i * n + j], i == j ? scale2 : 0.0, tol) << i << "," << j;
}

std::vector<double> transposed(const std::vector<double>& q, std::int64_t rows, std::int64_t cols) {
  std::vector<double> t(q.size());
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t c = 0; c < cols; ++c) t[c * rows + r] = q[r * cols + c];
  return t;
}

TEST(Initializers, OrthogonalIsOrthonormal) {
  for (auto [rows, cols] : {std::pair<std::int64_t, std::int64_t>{16, 16}, {32, 8}, {8, 32}}) {
    SCOPED_TRACE(::testing::Message() << rows << "x" << cols);
    Tensor q = draw(init::orthogonal(), {DType::f32, Shape{rows, cols}});
    ASSERT_EQ(q.type(), (TensorType{DType::f32, Shape{rows, cols}}));
    std::vector<double> v = q.to_vector<double>();
    if (rows >= cols)
      expect_identity(gram(v, rows, cols), cols, 1, 1e-5);
    else  // orthonormal rows
      expect_identity(gram(transposed(v, rows, cols), cols, rows), rows, 1, 1e-5);
    // Not a trivial matrix: more than one nonzero entry per column.
    EXPECT_GT(fraction_beyond(q, 1e-3), 0.5);
  }
  Tensor d = draw(init::orthogonal(2.0), {DType::f64, Shape{12, 12}}, 5);
  expect_identity(gram(d.to_vector<double>(), 12, 12), 12, 4, 1e-12);
  // A conv kernel [3, 3, 4, 8] is orthonormal as a [36, 8] matrix.
  Tensor c = draw(init::orthogonal(), {DType::f32, Shape{3, 3, 4, 8}});
  ASSERT_EQ(c.shape(), (Shape{3, 3, 4, 8}));
  expect_identity(gram(c.to_vector<double>(), 36, 8), 8, 1, 1e-5);
}

// Q is the QR factor (positive diagonal R) of the normal matrix drawn from the same key:
// Q^T A is upper triangular with a positive diagonal.
TEST(Initializers, OrthogonalIsTheQrFactorOfANormalDraw) {
  const std::int64_t m = 10, n = 6;
  TensorType t{DType::f64, Shape{m, n}};
  Graph g = trace(
      [&](const std::vector<Expr>& in) {
        return std::vector<Expr>{init::orthogonal().fn(in[0], t),
                                 random::normal(in[0], t.shape, 0, 1, DType::f64)};
      },
      {{DType::u32, Shape{2}}});
  std::vector<Tensor> args{random::key(3)};
  std::vector<Tensor> out = interpret(g, args);
  std::vector<double> q = out[0].to_vector<double>(), a = out[1].to_vector<double>();
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t j = 0; j < n; ++j) {
      double r = 0;
      for (std::int64_t k = 0; k < m; ++k) r += q[k * n + i] * a[k * n + j];
      if (i > j) {
        EXPECT_NEAR(r, 0, 1e-12) << i << "," << j;
      } else if (i == j) {
        EXPECT_GT(r, 0) << i;
      }
    }
}

TEST(Initializers, OrthogonalErrors) {
  EXPECT_THAT(
      [] {
        draw(init::orthogonal(), {DType::f32, Shape{8}});
      },
      ThrowsMessage<Error>(HasSubstr("orthogonal: expected a parameter of rank >= 2")));
  EXPECT_THAT(
      [] {
        draw(init::orthogonal(), {DType::i32, Shape{4, 4}});
      },
      ThrowsMessage<Error>(HasSubstr("orthogonal: expected a floating-point parameter")));
}

const std::vector<std::string> kNames = {"zeros",        "ones",           "identity",
                                         "uniform",      "normal",         "lecun_uniform",
                                         "lecun_normal", "glorot_uniform", "glorot_normal",
                                         "he_uniform",   "he_normal",      "variance_scaling",
                                         "orthogonal"};

TEST(Initializers, EveryDtypeAndShapeExactly) {
  for (const std::string& name : kNames)
    for (DType dt : {DType::f32, DType::f64, DType::f16, DType::bf16}) {
      SCOPED_TRACE(name + " " + std::string(dtype_name(dt)));
      TensorType t{dt, Shape{6, 4}};
      Tensor v = draw(init::by_name(name), t);
      ASSERT_EQ(v.type(), t);
      for (std::int64_t k = 0; k < v.numel(); ++k) EXPECT_TRUE(std::isfinite(v.element(k)));
    }
  // f16 draws are the f32 values rounded.
  Tensor h = draw(init::he_normal(), {DType::f16, Shape{40, 30}});
  Tensor f = draw(init::he_normal(), {DType::f32, Shape{40, 30}});
  EXPECT_TRUE(equal(h, f.cast(DType::f16)));
}

TEST(Initializers, DeterministicForAKey) {
  TensorType t{DType::f32, Shape{8, 5}};
  for (const std::string& name : kNames) {
    SCOPED_TRACE(name);
    Initializer i = init::by_name(name);
    EXPECT_TRUE(equal(draw(i, t, 11), draw(i, t, 11)));
    bool constant = name == "zeros" || name == "ones" || name == "identity";
    EXPECT_EQ(equal(draw(i, t, 11), draw(i, t, 12)), constant);
  }
}

TEST(Initializers, ByName) {
  for (const std::string& name : kNames) EXPECT_EQ(init::by_name(name).name, name);
  // Defaults: uniform(0.01), normal(0, 0.01), he_uniform scale 2.
  EXPECT_LE(moments(draw(init::by_name("uniform"), kBig)).max_abs, 0.01);
  EXPECT_NEAR(moments(draw(init::by_name("normal"), kBig)).variance, 1e-4, 3e-6);
  EXPECT_NEAR(moments(draw(init::by_name("he_uniform"), kBig)).variance, 0.01, 3e-4);
  EXPECT_NEAR(moments(draw(init::by_name("variance_scaling"), kBig)).variance, 1.0 / 200,
              0.03 / 200);
  EXPECT_EQ(draw(init::by_name("identity"), {DType::f32, Shape{2, 2}}).to_vector<float>(),
            (std::vector<float>{1, 0, 0, 1}));
  EXPECT_THAT([] { init::by_name("xavier"); },
              ThrowsMessage<Error>(HasSubstr("unknown initializer 'xavier'")));
  EXPECT_THAT([] { init::by_name("full"); },
              ThrowsMessage<Error>(HasSubstr("'full' needs a value")));
}

TEST(Initializers, Errors) {
  EXPECT_THAT([] { init::uniform(-1); },
              ThrowsMessage<Error>(HasSubstr("uniform: scale must be positive")));
  EXPECT_THAT([] { init::normal(0, -1); },
              ThrowsMessage<Error>(HasSubstr("normal: expected a finite mean and stddev >= 0")));
  EXPECT_THAT([] { init::variance_scaling(0); },
              ThrowsMessage<Error>(HasSubstr("variance_scaling: scale must be positive")));
  EXPECT_THAT(
      [] {
        draw(init::glorot_uniform(), {DType::i32, Shape{3, 3}});
      },
      ThrowsMessage<Error>(HasSubstr("glorot_uniform: expected a floating-point")));
  // Through a model, the failing initializer is named with the layer.
  Model y = dense(input("x", {-1, 3}), 2, {.kernel_initializer = init::orthogonal()});
  Model bad = layer("scale", {input("x", {-1, 3})},
                    [](LayerContext& c) { return c.input() * c.param("s"); },
                    {{"s", [](const InputShapes&) { return Shape{3}; }, init::orthogonal()}});
  EXPECT_THAT([&] { build(bad).init(0); },
              ThrowsMessage<Error>(HasSubstr("initializer orthogonal of 's'")));
  EXPECT_EQ(build(y).init(0).params.at("dense_0").at("kernel").shape(), (Shape{3, 2}));
}

}  // namespace
}  // namespace glia
