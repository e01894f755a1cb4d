// Helpers of the loss and metric tests: run a traced function of tensors on the
// interpreter, its value and gradient together, element-wise closeness, and the golden
// fixtures of tests/optim/golden_losses.
#pragma once

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "glia/autograd.hpp"
#include "glia/core.hpp"
#include "golden_fixture.hpp"

namespace glia::testing {

using TensorFn = std::function<Expr(const std::vector<Expr>&)>;

inline std::vector<TensorType> types_of(const std::vector<Tensor>& inputs) {
  std::vector<TensorType> types;
  for (const Tensor& t : inputs) types.push_back(t.type());
  return types;
}

// fn traced on the inputs' types and interpreted on them.
inline Tensor run(const TensorFn& fn, const std::vector<Tensor>& inputs) {
  Graph g = trace([&](const std::vector<Expr>& in) { return std::vector<Expr>{fn(in)}; },
                  types_of(inputs));
  return interpret(g, inputs)[0];
}

// {fn(inputs), d fn / d inputs[wrt]} for a scalar fn.
inline std::pair<Tensor, Tensor> run_with_grad(const TensorFn& fn,
                                               const std::vector<Tensor>& inputs, std::size_t wrt) {
  Graph g = trace(
      [&](const std::vector<Expr>& in) {
        Expr y = fn(in);
        return std::vector<Expr>{y, gradients(y, {in[wrt]})[0]};
      },
      types_of(inputs));
  std::vector<Tensor> out = interpret(g, inputs);
  return {out[0], out[1]};
}

inline bool all_finite(const Tensor& t) {
  for (double v : t.cast(DType::f64).to_vector<double>())
    if (!std::isfinite(v)) return false;
  return true;
}

// |got - want| <= tol * max(1, |want|) element-wise, with matching shapes.
inline void expect_close(const Tensor& got, const Tensor& want, double tol,
                         const std::string& what = "") {
  ASSERT_EQ(got.shape(), want.shape()) << what;
  std::vector<double> g = got.cast(DType::f64).to_vector<double>();
  std::vector<double> w = want.cast(DType::f64).to_vector<double>();
  for (std::size_t i = 0; i < g.size(); ++i)
    EXPECT_LE(std::abs(g[i] - w[i]), tol * std::max(1.0, std::abs(w[i])))
        << what << " element " << i << ": got " << g[i] << ", want " << w[i];
}

inline Tensor f64(const std::vector<double>& v, const Shape& shape) {
  return Tensor::from<double>(v, shape);
}

// One-hot rows [n, classes] (f64) of integer labels, built on the host.
inline Tensor one_hot_rows(const Tensor& labels, std::int64_t classes) {
  std::vector<std::int64_t> l = labels.cast(DType::i64).to_vector<std::int64_t>();
  std::vector<double> v(l.size() * static_cast<std::size_t>(classes), 0.0);
  for (std::size_t i = 0; i < l.size(); ++i)
    v[i * static_cast<std::size_t>(classes) + static_cast<std::size_t>(l[i])] = 1.0;
  return f64(v, Shape{static_cast<std::int64_t>(l.size()), classes});
}

inline golden::Fixture loss_fixture(const std::string& case_name) {
  return golden::load_fixture_from(std::string(GLIA_TESTS_DIR) + "/optim/golden_losses", case_name);
}

}  // namespace glia::testing
