// The README's "Gradients" example, kept compiling and checked here.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>

#include "glia/autograd.hpp"
#include "glia/compiler.hpp"

namespace {

// ---- README example begins ----
using namespace glia;
using Params = std::map<std::string, Expr>;

// A linear model's squared error; value_and_grad differentiates it with respect to its
// first argument, a parameter map, and returns gradients shaped like that map.
Expr loss(const Params& p, const Expr& x, const Expr& y) {
  Expr prediction = dot(x, p.at("w")) + p.at("b");
  return mean(square(prediction - y));
}

auto step = jit([](const Params& p, const Expr& x, const Expr& y) {
  auto [value, grads] = value_and_grad(loss)(p, x, y);
  return std::tuple{value, grads};  // the loss and {"b": d/db, "w": d/dw}
});
// ---- README example ends ----

TEST(ReadmeExample, GradientsOfALinearModel) {
  std::map<std::string, Tensor> params{{"w", Tensor::from<float>({0.5f, -1.0f})},
                                       {"b", Tensor::scalar(0.25f)}};
  Tensor x = Tensor::from<float>({1, 2, 3, 4}, Shape{2, 2});
  Tensor y = Tensor::from<float>({1, 0});
  auto [value, grads] = step(params, x, y);
  // predictions: [0.5 - 2 + 0.25, 1.5 - 4 + 0.25] = [-1.25, -2.25]; errors [-2.25, -2.25]
  EXPECT_FLOAT_EQ(value.item<float>(), 2.25f * 2.25f);
  // d/db = mean(2 e) = -4.5; d/dw = 2/2 * x^T e = [-2.25 * 4, -2.25 * 6]
  EXPECT_FLOAT_EQ(grads.at("b").item<float>(), -4.5f);
  EXPECT_EQ(grads.at("w").to_vector<float>(), (std::vector<float>{-9.0f, -13.5f}));
  std::cout << step.graph_text(params, x, y);
}

}  // namespace
