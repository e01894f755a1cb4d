// What the training-step tests share (step_test.cpp, step_inputs_test.cpp): an SGD
// written here so the tests stand alone, the mean squared error, small tensors, and a
// linear model with a batch.
#pragma once

#include <gtest/gtest.h>

#include <vector>

#include "glia/layers/linear.hpp"
#include "glia/optim/step.hpp"

namespace glia::testing {

// updates = -lr * (grads + decay * params), no state.
inline Transformation local_sgd(double lr, double decay = 0) {
  return {[](const ExprParamMap&) { return OptState{}; },
          [lr, decay](const ExprParamMap& g, const OptState& s, const ExprParamMap& p) {
            ExprParamMap u;
            for (const auto& [layer, m] : g)
              for (const auto& [name, e] : m)
                u[layer][name] = (e + p.at(layer).at(name) * decay) * -lr;
            return std::pair{u, s};
          }};
}

inline Expr mse(const Expr& y, const Expr& p) { return mean(square(p - y)); }

inline Tensor tensor(std::vector<float> v, Shape s) { return Tensor::from<float>(v, s); }

inline std::vector<double> values(const Tensor& t) { return t.to_vector<double>(); }

// x [4, 3] -> dense(2): the closed-form MSE gradient is computed in the test.
struct Linear : ::testing::Test {
  Model model = dense(input("x", {-1, 3}), 2);
  Tensor x = tensor({0.5f, -1, 2, 1, 0.25f, -0.5f, -2, 1.5f, 0, 0.75f, -0.25f, 1}, {4, 3});
  Tensor y = tensor({1, 0, -1, 2, 0.5f, 0.5f, 3, -2}, {4, 2});
};

}  // namespace glia::testing
