// Gradient checking against central finite differences, run on the interpreter.
// Used by the autograd suites and by the layer suites.
//   glia::testing::expect_gradients_match(
//       [](const std::vector<glia::Expr>& in) { return glia::sum(glia::exp(in[0])); },
//       {x});
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "glia/autograd.hpp"
#include "glia/core.hpp"

namespace glia::testing {

using ScalarFn = std::function<Expr(const std::vector<Expr>&)>;

struct GradCheckOptions {
  double eps = 1e-6;        // central-difference step
  double tolerance = 1e-6;  // on |analytic - numeric| / max(1, |numeric|)
  std::vector<bool> check;  // which inputs to differentiate (empty: every float input)
};

// Uniform f64 values in [lo, hi) from a fixed-seed generator of the test's own.
inline Tensor random_tensor(const Shape& shape, double lo = -1, double hi = 1, unsigned seed = 7) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  std::vector<double> v(static_cast<std::size_t>(shape.numel()));
  for (double& x : v) x = dist(rng);
  return Tensor::from<double>(v, shape);
}

// The analytic gradients of fn at `inputs` (traced with glia::gradients and interpreted).
inline std::vector<Tensor> analytic_gradients(const ScalarFn& fn, const std::vector<Tensor>& inputs,
                                              const std::vector<bool>& which) {
  std::vector<TensorType> types;
  for (const Tensor& t : inputs) types.push_back(t.type());
  Graph g = trace(
      [&](const std::vector<Expr>& in) {
        Expr y = fn(in);
        std::vector<Expr> xs;
        for (std::size_t i = 0; i < in.size(); ++i)
          if (which[i]) xs.push_back(in[i]);
        return gradients(y, xs);
      },
      types, "gradients");
  return interpret(g, inputs);
}

// Central differences of fn with respect to every element of input `i`.
inline Tensor numeric_gradient(const ScalarFn& fn, const std::vector<Tensor>& inputs, std::size_t i,
                               double eps) {
  std::vector<TensorType> types;
  for (const Tensor& t : inputs) types.push_back(t.type());
  Graph g = trace([&](const std::vector<Expr>& in) { return std::vector<Expr>{fn(in)}; }, types);
  std::vector<Tensor> args = inputs;
  Tensor x = inputs[i].cast(DType::f64);
  std::vector<double> base = x.to_vector<double>(), out(base.size());
  for (std::size_t k = 0; k < base.size(); ++k) {
    std::vector<double> v = base;
    v[k] = base[k] + eps;
    args[i] = Tensor::from<double>(v, x.shape()).cast(inputs[i].dtype());
    double plus = interpret(g, args)[0].item<double>();
    v[k] = base[k] - eps;
    args[i] = Tensor::from<double>(v, x.shape()).cast(inputs[i].dtype());
    double minus = interpret(g, args)[0].item<double>();
    out[k] = (plus - minus) / (2 * eps);
  }
  return Tensor::from<double>(out, x.shape());
}

// Asserts that every checked input's analytic gradient matches central differences.
inline void expect_gradients_match(const ScalarFn& fn, const std::vector<Tensor>& inputs,
                                   GradCheckOptions options = {}) {
  std::vector<bool> which = options.check;
  if (which.empty())
    for (const Tensor& t : inputs) which.push_back(is_float(t.dtype()));
  std::vector<Tensor> analytic = analytic_gradients(fn, inputs, which);
  std::size_t a = 0;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    if (!which[i]) continue;
    const Tensor& got = analytic[a++];
    ASSERT_EQ(got.shape(), inputs[i].shape()) << "gradient of input " << i;
    std::vector<double> g = got.to_vector<double>();
    std::vector<double> n = numeric_gradient(fn, inputs, i, options.eps).to_vector<double>();
    double worst = 0;
    for (std::size_t k = 0; k < g.size(); ++k) {
      double error = std::abs(g[k] - n[k]) / std::max(1.0, std::abs(n[k]));
      // std::max would skip a NaN: a NaN gradient must fail, not pass.
      worst = std::isnan(error) ? std::numeric_limits<double>::infinity() : std::max(worst, error);
    }
    EXPECT_LE(worst, options.tolerance)
        << "input " << i << " " << inputs[i].type() << "\nanalytic: " << got
        << "\nnumeric: " << Tensor::from<double>(n, inputs[i].shape());
  }
}

}  // namespace glia::testing
