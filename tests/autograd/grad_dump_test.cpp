// The gradient graph is ordinary IR that prints readably: a dump of the gradient of
// sum(softmax(x) * y) with respect to x, with a few structural facts asserted.
#include <iostream>
#include <string>
#include <vector>

#include "autograd/grad_test_util.hpp"

namespace glia {
namespace {

using ::testing::HasSubstr;

TEST(GradDump, SoftmaxDotGradient) {
  TensorType t{DType::f32, {2, 3}};
  Graph g = trace(
      [](const std::vector<Expr>& in) {
        const Expr& y = in[1];
        return std::vector{grad([&y](const Expr& x) { return sum(softmax(x) * y); })(in[0])};
      },
      {t, t}, "softmax_grad", {"x", "y"});
  std::string text = to_text(g);
  std::cout << text;
  EXPECT_THAT(text, HasSubstr("graph softmax_grad(%0: f32[2][3] x, %1: f32[2][3] y)"));
  EXPECT_THAT(text, HasSubstr("-> (f32[2][3])"));
  // Forward ops of softmax, and backward nodes of the sum, product and quotient.
  for (Op op : {Op::reduce_max, Op::exp, Op::reduce_sum, Op::multiply, Op::divide, Op::broadcast})
    EXPECT_TRUE(testing::has_op(g, op)) << op_name(op);
  for (const char* name : {" exp ", " reduce_max ", " reduce_sum ", " multiply ", " divide "})
    EXPECT_THAT(text, HasSubstr(name));
  ASSERT_EQ(g.outputs().size(), 1u);
  EXPECT_EQ(g.type(g.outputs()[0]), t);
  verify(g);

  // The dump describes a correct gradient: s * (y - sum(s * y)) per row.
  std::vector<float> x{0.1f, -0.4f, 0.9f, 1.5f, 0.0f, -1.0f}, y{1, 2, 3, -1, 0.5f, 2};
  Tensor got = interpret(
      g, std::vector{Tensor::from<float>(x, Shape{2, 3}), Tensor::from<float>(y, Shape{2, 3})})[0];
  for (int r = 0; r < 2; ++r) {
    double z = 0, sy = 0, s[3];
    for (int c = 0; c < 3; ++c) z += std::exp(double(x[r * 3 + c]));
    for (int c = 0; c < 3; ++c) sy += (s[c] = std::exp(double(x[r * 3 + c])) / z) * y[r * 3 + c];
    for (int c = 0; c < 3; ++c)
      EXPECT_NEAR(got.element(r * 3 + c), s[c] * (y[r * 3 + c] - sy), 1e-6) << r << "," << c;
  }
}

}  // namespace
}  // namespace glia
