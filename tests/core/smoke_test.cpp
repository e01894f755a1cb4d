#include <gtest/gtest.h>

#include "glia/core.hpp"

TEST(Smoke, TraceAndInterpret) {
  using namespace glia;
  Graph g = trace([](const std::vector<Expr>& in) { return std::vector<Expr>{in[0] * 2.0 + 1.0}; },
                  {{f32, {3}}}, "affine", {"x"});
  auto out = interpret(g, std::vector<Tensor>{Tensor::from<float>({1, 2, 3})});
  EXPECT_EQ(out[0].to_vector<float>(), (std::vector<float>{3, 5, 7}));
  std::cout << to_text(g) << out[0] << "\n";
}
