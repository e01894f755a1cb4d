#include "autograd/gradcheck.hpp"

namespace glia {
namespace {

TEST(GradSmoke, ExpOfProduct) {
  testing::expect_gradients_match(
      [](const std::vector<Expr>& in) { return sum(exp(in[0] * in[1])); },
      {testing::random_tensor({2, 3}), testing::random_tensor({3}, -1, 1, 9)});
}

}  // namespace
}  // namespace glia
