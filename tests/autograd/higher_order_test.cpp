// Higher-order derivatives: gradients of gradients, since the backward pass is ordinary
// IR. Element-wise second derivatives against closed forms, Hessian-vector products of
// reductions and contractions against closed forms and against finite differences of
// the first gradient.
#include <cmath>
#include <functional>
#include <numbers>
#include <string>
#include <vector>

#include "autograd/grad_test_util.hpp"
#include "autograd/gradcheck.hpp"

namespace glia {
namespace {

using testing::expect_values;
using testing::map_values;
using testing::random_tensor;
using testing::run;
using UnaryFn = std::function<Expr(const Expr&)>;

// The diagonal of the Hessian of sum(f(x)) for element-wise f: d/dx sum(f'(x)).
Expr second_derivative(const UnaryFn& f, const Expr& x) {
  auto first = [&f](const Expr& v) {
    return sum(grad([&f](const Expr& u) { return sum(f(u)); })(v));
  };
  return grad(first)(x);
}

struct ElementwiseCase {
  std::string name;
  UnaryFn f;
  std::function<double(double)> d2;
  double lo = -2, hi = 2;
};

TEST(HigherOrder, ElementwiseSecondDerivatives) {
  const double pi = std::numbers::pi;
  std::vector<ElementwiseCase> cases = {
      {"sin", [](const Expr& x) { return sin(x); }, [](double x) { return -std::sin(x); }},
      {"cos", [](const Expr& x) { return cos(x); }, [](double x) { return -std::cos(x); }},
      {"exp", [](const Expr& x) { return exp(x); }, [](double x) { return std::exp(x); }},
      {"expm1", [](const Expr& x) { return expm1(x); }, [](double x) { return std::exp(x); }},
      {"tanh", [](const Expr& x) { return tanh(x); },
       [](double x) {
         double t = std::tanh(x);
         return -2 * t * (1 - t * t);
       }},
      {"logistic", [](const Expr& x) { return logistic(x); },
       [](double x) {
         double s = 1 / (1 + std::exp(-x));
         return s * (1 - s) * (1 - 2 * s);
       }},
      {"erf", [](const Expr& x) { return erf(x); },
       [pi](double x) { return -4 * x / std::sqrt(pi) * std::exp(-x * x); }},
      {"log", [](const Expr& x) { return log(x); }, [](double x) { return -1 / (x * x); }, 0.5, 3},
      {"log1p", [](const Expr& x) { return log1p(x); },
       [](double x) { return -1 / ((1 + x) * (1 + x)); }, 0, 2},
      {"sqrt", [](const Expr& x) { return sqrt(x); },
       [](double x) { return -0.25 * std::pow(x, -1.5); }, 0.5, 3},
      {"rsqrt", [](const Expr& x) { return rsqrt(x); },
       [](double x) { return 0.75 * std::pow(x, -2.5); }, 0.5, 3},
      {"cube by pow", [](const Expr& x) { return pow(x, 3.0); }, [](double x) { return 6 * x; }},
      {"cube by products", [](const Expr& x) { return x * x * x; }, [](double x) { return 6 * x; }},
      {"reciprocal", [](const Expr& x) { return 1.0 / x; },
       [](double x) { return 2 / (x * x * x); }, 0.5, 3},
      {"two to the x", [](const Expr& x) { return pow(2.0, x); },
       [](double x) { return std::pow(2, x) * std::log(2) * std::log(2); }},
      {"x to the x", [](const Expr& x) { return pow(x, x); },
       [](double x) {
         double l = std::log(x) + 1;
         return std::pow(x, x) * (l * l + 1 / x);
       },
       0.5, 2},
      {"atan", [](const Expr& x) { return atan2(x, 1.0); },
       [](double x) { return -2 * x / ((1 + x * x) * (1 + x * x)); }},
      {"abs", [](const Expr& x) { return abs(x) * 3.0; }, [](double) { return 0.0; }, 0.5, 2},
      {"square of remainder", [](const Expr& x) { return square(remainder(x, 1.5)); },
       [](double) { return 2.0; }, 0.1, 1.4},
      {"quotient", [](const Expr& x) { return sin(x) / (x * x + 1.0); },
       [](double x) {
         // (u/v)'' = (u'' v^2 - 2 u' v v' - u v v'' + 2 u v'^2) / v^3 with v = x^2 + 1
         double u = std::sin(x), du = std::cos(x), ddu = -std::sin(x);
         double v = x * x + 1, dv = 2 * x, ddv = 2;
         return (ddu * v * v - 2 * du * v * dv - u * v * ddv + 2 * u * dv * dv) / (v * v * v);
       }},
  };
  for (const ElementwiseCase& c : cases) {
    SCOPED_TRACE(c.name);
    Tensor x = random_tensor({2, 3}, c.lo, c.hi, 11);
    auto out =
        run([&](const std::vector<Expr>& in) { return std::vector{second_derivative(c.f, in[0])}; },
            {x});
    EXPECT_EQ(out[0].type(), x.type());
    expect_values(out[0], map_values(x, c.d2), 1e-9, c.name);
  }
}

TEST(HigherOrder, ThirdAndFourthDerivative) {
  Tensor x = Tensor::from<double>({-1.5, 0.5, 2});
  auto out = run(
      [](const std::vector<Expr>& in) {
        auto f = [](const Expr& x) { return sum(x * x * x * x); };
        auto d1 = [&](const Expr& x) { return sum(grad(f)(x)); };
        auto d2 = [&](const Expr& x) { return sum(grad(d1)(x)); };
        auto d3 = [&](const Expr& x) { return sum(grad(d2)(x)); };
        return std::vector{grad(d2)(in[0]), grad(d3)(in[0])};
      },
      {x});
  expect_values(out[0], {24 * -1.5, 24 * 0.5, 24 * 2});  // 24 x
  expect_values(out[1], {24, 24, 24});
}

// Hessian-vector product: d/dx sum(grad(f)(x) * v).
Expr hvp(const UnaryFn& f, const Expr& x, const Expr& v) {
  auto directional = [&](const Expr& u) {
    return sum(grad([&f](const Expr& w) { return f(w); })(u) * v);
  };
  return grad(directional)(x);
}

TEST(HigherOrder, SquaredSumHessian) {
  // f = sum(x)^2: H = 2 * ones, so Hv = 2 sum(v) everywhere.
  Tensor x = Tensor::from<double>({1, -2, 0.5, 3}, Shape{2, 2}),
         v = random_tensor({2, 2}, -1, 1, 3);
  auto out = run(
      [](const std::vector<Expr>& in) {
        return std::vector{hvp([](const Expr& x) { return square(sum(x)); }, in[0], in[1])};
      },
      {x, v});
  double s = 0;
  for (double e : v.to_vector<double>()) s += e;
  expect_values(out[0], {2 * s, 2 * s, 2 * s, 2 * s});
}

TEST(HigherOrder, LogsumexpHessianVectorProduct) {
  // H = diag(p) - p p^T with p = softmax(x): Hv = p v - p (p . v), per row for axis 1.
  Tensor x = random_tensor({2, 4}, -2, 2, 5), v = random_tensor({2, 4}, -1, 1, 6);
  auto out = run(
      [](const std::vector<Expr>& in) {
        return std::vector{hvp([](const Expr& x) { return sum(logsumexp(x, {1})); }, in[0], in[1])};
      },
      {x, v});
  std::vector<double> xs = x.to_vector<double>(), vs = v.to_vector<double>(), want(8);
  for (int r = 0; r < 2; ++r) {
    double z = 0, pv = 0;
    for (int c = 0; c < 4; ++c) z += std::exp(xs[r * 4 + c]);
    for (int c = 0; c < 4; ++c) pv += std::exp(xs[r * 4 + c]) / z * vs[r * 4 + c];
    for (int c = 0; c < 4; ++c) {
      double p = std::exp(xs[r * 4 + c]) / z;
      want[r * 4 + c] = p * vs[r * 4 + c] - p * pv;
    }
  }
  expect_values(out[0], want);
}

TEST(HigherOrder, MaxAndProductHessians) {
  Tensor x = Tensor::from<double>({0.5, 3, -1.5, 2}), v = Tensor::from<double>({1, 2, 3, 4});
  auto out = run(
      [](const std::vector<Expr>& in) {
        return std::vector{hvp([](const Expr& x) { return square(reduce_max(x)); }, in[0], in[1]),
                           hvp([](const Expr& x) { return product(x); }, in[0], in[1])};
      },
      {x, v});
  // max(x)^2: gradient 2 max(x) at the argmax (index 1), so Hv = 2 v[1] there.
  expect_values(out[0], {0, 4, 0, 0});
  // prod: H_ij = prod / (x_i x_j) off the diagonal, 0 on it.
  std::vector<double> xs = x.to_vector<double>(), vs = v.to_vector<double>(), want(4, 0);
  double p = xs[0] * xs[1] * xs[2] * xs[3];
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j)
      if (i != j) want[i] += p / (xs[i] * xs[j]) * vs[j];
  expect_values(out[1], want);
}

TEST(HigherOrder, DotThroughTheGradientOfTheInput) {
  // s(W) = sum(grad_x sum((W x)^2)) = sum(2 W^T W x) = 2 u^T W^T W x with u = ones, so
  // ds/dW = 2 (W u x^T + W x u^T).
  Tensor w = random_tensor({3, 4}, -1, 1, 21), x = random_tensor({4}, -1, 1, 22);
  auto s = [](const Expr& w, const Expr& x) {
    auto inner = [&w](const Expr& x) { return sum(square(dot(w, x))); };
    return sum(grad(inner)(x));
  };
  auto out = run([&](const std::vector<Expr>& in) { return std::vector{grad<0>(s)(in[0], in[1])}; },
                 {w, x});
  std::vector<double> ws = w.to_vector<double>(), xs = x.to_vector<double>(), want(12);
  for (int i = 0; i < 3; ++i) {
    double wu = 0, wx = 0;
    for (int k = 0; k < 4; ++k) wu += ws[i * 4 + k], wx += ws[i * 4 + k] * xs[k];
    for (int j = 0; j < 4; ++j) want[i * 4 + j] = 2 * (wu * xs[j] + wx);
  }
  EXPECT_EQ(out[0].type(), w.type());
  expect_values(out[0], want);
  // And against finite differences of the first gradient.
  testing::expect_gradients_match([&](const std::vector<Expr>& in) { return s(in[0], in[1]); },
                                  {w, x}, {.tolerance = 1e-7, .check = {true, false}});
}

// Finite differences of v . grad(f): checks the Hessian-vector product of f.
void expect_hvp_matches(const UnaryFn& f, const Tensor& x, unsigned seed) {
  Tensor v = random_tensor(x.shape(), -1, 1, seed);
  testing::expect_gradients_match(
      [&](const std::vector<Expr>& in) { return sum(grad(f)(in[0]) * in[1]); }, {x, v},
      {.tolerance = 1e-6, .check = {true, false}});
}

TEST(HigherOrder, HessianVectorProductsMatchFiniteDifferences) {
  Tensor w = random_tensor({4, 3}, -1, 1, 31);
  auto mlp = [&w](const Expr& x) { return sum(log_softmax(tanh(matmul(x, constant(w)))) * 0.5); };
  expect_hvp_matches(mlp, random_tensor({2, 4}, -1, 1, 32), 33);
  expect_hvp_matches([](const Expr& x) { return sum(softmax(x, 0) * sin(x)); },
                     random_tensor({3, 2}, -1, 1, 34), 35);
  expect_hvp_matches([](const Expr& x) { return square(sum(transpose(x) * reverse(x, {1}))); },
                     random_tensor({2, 2}, -1, 1, 36), 37);
  expect_hvp_matches(
      [](const Expr& x) {
        Expr k = reshape(slice(x, {0, 0}, {1, 3}), {1, 1, 3});
        Expr c = conv(reshape(x, {1, 1, 6}), k);
        return sum(c * c * c);
      },
      random_tensor({2, 3}, -1, 1, 38), 39);
  expect_hvp_matches(
      [](const Expr& x) {
        WindowOptions overlapping;
        overlapping.strides = {1, 1};
        return sum(exp(window_sum(x, {2, 2}, overlapping)));
      },
      random_tensor({3, 3}, -1, 1, 40), 41);
  expect_hvp_matches(
      [](const Expr& x) {
        Expr idx = constant(Tensor::from<std::int64_t>({2, 0, 2}));
        return sum(exp(take(x, idx, 0))) + sum(square(concatenate({x, x * x}, 1)));
      },
      random_tensor({3, 2}, -1, 1, 42), 43);
  expect_hvp_matches(
      [](const Expr& x) {
        return sum(square(pad(x, 0.5, {1, 0}, {0, 1}) * broadcast_to(sum(x, {1}), {4, 3})));
      },
      random_tensor({3, 2}, -1, 1, 44), 45);
  expect_hvp_matches(
      [](const Expr& x) {
        Expr b = reshape(x, {2, 2, 3});  // batched matmul with itself transposed
        return sum(sin(matmul(b, transpose(b, {0, 2, 1}))));
      },
      random_tensor({4, 3}, -1, 1, 46), 47);
  expect_hvp_matches(
      [](const Expr& x) {
        ConvOptions o;
        o.strides = {2, 1};
        o.padding_low = {1, 0};
        o.padding_high = {0, 1};
        o.kernel_dilation = {1, 2};
        Expr k = reshape(slice(x, {0, 0}, {2, 2}), {1, 1, 2, 2});
        return sum(square(conv(reshape(x, {1, 1, 4, 4}), k, o)));
      },
      random_tensor({4, 4}, -1, 1, 48), 49);
  expect_hvp_matches(
      [](const Expr& x) {
        Expr idx = constant(Tensor::from<std::int64_t>({1, 1, 0}));
        Expr s = scatter_add(x * x, idx, exp(slice(x, {0, 0}, {3, 2})), 0);
        return sum(clip(s, -0.5, 2.0) * s) + sum(reduce_min(x * x, {1})) * sum(reduce_max(x, {0}));
      },
      random_tensor({3, 2}, -1, 1, 52), 53);
}

TEST(HigherOrder, MaxPoolingSecondAndThirdDerivatives) {
  // f = sum(m^3) over the maxima m of non-overlapping 2x2 windows: at each window's argmax
  // f' = 3 m^2, f'' = 6 m and f''' = 6, and nothing elsewhere. The first derivative goes
  // through select_and_scatter, the second and third through its gradient rule.
  Tensor x = random_tensor({4, 4}, -1, 1, 50), v = random_tensor({4, 4}, -1, 1, 51),
         u = random_tensor({4, 4}, -1, 1, 52);
  UnaryFn f = [](const Expr& x) {
    Expr m = window_max(x, {2, 2});
    return sum(m * m * m);
  };
  auto out = run(
      [&f](const std::vector<Expr>& in) {
        auto third = [&](const Expr& x) { return sum(hvp(f, x, in[1]) * in[2]); };
        return std::vector{grad(f)(in[0]), hvp(f, in[0], in[1]), grad(third)(in[0])};
      },
      {x, v, u});
  std::vector<double> xs = x.to_vector<double>(), vs = v.to_vector<double>(),
                      us = u.to_vector<double>(), first(16, 0), second(16, 0), third(16, 0);
  for (int r = 0; r < 4; r += 2)
    for (int c = 0; c < 4; c += 2) {
      int best = r * 4 + c;
      for (int i : {r * 4 + c + 1, (r + 1) * 4 + c, (r + 1) * 4 + c + 1})
        if (xs[i] > xs[best]) best = i;
      auto k = static_cast<std::size_t>(best);
      first[k] = 3 * xs[k] * xs[k];
      second[k] = 6 * xs[k] * vs[k];
      third[k] = 6 * vs[k] * us[k];
    }
  expect_values(out[0], first);
  expect_values(out[1], second);
  expect_values(out[2], third);
}

TEST(HigherOrder, MaxPool2dHessianVectorProductMatchesFiniteDifferences) {
  // max_pool2d(3, stride 2, padding 1) on [N, H, W, C]: overlapping windows, so an element
  // can be the maximum of several; then a smooth function of the pooled values.
  Tensor w = random_tensor({2, 3, 3, 2}, -1, 1, 60);
  expect_hvp_matches(
      [&w](const Expr& x) {
        WindowOptions o{{1, 2, 2, 1}, {0, 1, 1, 0}, {0, 1, 1, 0}, {}, {}};
        Expr m = window_max(x, {1, 3, 3, 1}, o);
        return sum(sin(m) * constant(w) + m * m * m);
      },
      random_tensor({2, 5, 5, 2}, -1, 1, 61), 62);
}

}  // namespace
}  // namespace glia
