// Uses an installed glia through <glia/glia.hpp>: traces a small element-wise
// function, interprets it and checks the numbers against plain C++. Exit code 1 when
// a value is wrong, so the CTest test that builds this project can fail.
#include <cmath>
#include <cstdio>
#include <iostream>
#include <vector>

#include <glia/glia.hpp>

int main() {
  using glia::Expr;
  // f(x, y) = exp(x) * y - x / y, two inputs of one shape (no broadcasting needed).
  glia::Graph g = glia::trace(
      [](const std::vector<Expr>& in) {
        return std::vector<Expr>{glia::exp(in[0]) * in[1] - in[0] / in[1]};
      },
      {{glia::f32, {2, 3}}, {glia::f32, {2, 3}}}, "consumer", {"x", "y"});
  std::cout << glia::to_text(g);

  const std::vector<float> x{-1.5F, -0.5F, 0.0F, 0.25F, 1.0F, 2.0F};
  const std::vector<float> y{2.0F, -4.0F, 0.5F, 1.0F, 3.0F, -0.25F};
  std::vector<glia::Tensor> out = glia::interpret(
      g, std::vector<glia::Tensor>{glia::Tensor::from<float>(x, glia::Shape{2, 3}),
                                   glia::Tensor::from<float>(y, glia::Shape{2, 3})});
  std::cout << out[0] << "\n";

  if (out.size() != 1 || out[0].type() != glia::TensorType{glia::f32, {2, 3}}) {
    std::cerr << "consumer: expected one f32[2][3] output\n";
    return 1;
  }
  std::vector<float> got = out[0].to_vector<float>();
  int wrong = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    double want = std::exp(double{x[i]}) * y[i] - double{x[i]} / y[i];
    if (std::abs(got[i] - want) > 1e-5 * (1 + std::abs(want))) {
      std::fprintf(stderr, "consumer: element %zu is %.8g, expected %.8g\n", i, got[i], want);
      ++wrong;
    }
  }
  if (wrong) return 1;
  std::cout << "consumer: the installed glia package works\n";
  return 0;
}
