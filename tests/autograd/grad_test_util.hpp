// Small helpers shared by the autograd suites: trace a function over tensors and run
// it on the interpreter, and compare a tensor with expected values.
//   auto out = glia::testing::run([](const auto& in) { return std::vector{in[0] * 2.0}; }, {x});
#pragma once

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "glia/autograd.hpp"
#include "glia/core.hpp"

namespace glia::testing {

// Traces fn on parameters typed like `inputs` and interprets the graph on them.
inline std::vector<Tensor> run(const TracedFn& fn, const std::vector<Tensor>& inputs) {
  std::vector<TensorType> types;
  for (const Tensor& t : inputs) types.push_back(t.type());
  return interpret(trace(fn, types), inputs);
}

// The graph fn traces to on parameters of these types.
inline Graph traced(const TracedFn& fn, const std::vector<Tensor>& inputs) {
  std::vector<TensorType> types;
  for (const Tensor& t : inputs) types.push_back(t.type());
  return trace(fn, types);
}

inline void expect_values(const Tensor& got, const std::vector<double>& want, double tol = 1e-9,
                          const std::string& what = "") {
  ASSERT_EQ(got.numel(), static_cast<std::int64_t>(want.size())) << what << " " << got.type();
  for (std::size_t i = 0; i < want.size(); ++i)
    EXPECT_NEAR(got.element(static_cast<std::int64_t>(i)), want[i],
                tol * std::max(1.0, std::abs(want[i])))
        << what << " element " << i;
}

// Every element of `t` mapped through f, as doubles (for closed-form expectations).
template <class F>
std::vector<double> map_values(const Tensor& t, F f) {
  std::vector<double> out;
  for (std::int64_t i = 0; i < t.numel(); ++i) out.push_back(f(t.element(i)));
  return out;
}

inline bool has_op(const Graph& g, Op op) {
  for (const Node& n : g.nodes())
    if (n.op == op) return true;
  return false;
}

}  // namespace glia::testing
