// Gradients through attention agree with central finite differences in f64, masks on:
// scaled_dot_product_attention with respect to q, k, v and the bias, and the
// multi_head_attention layer with respect to its inputs and every parameter.
#include <gtest/gtest.h>

#include <limits>

#include "autograd/gradcheck.hpp"
#include "glia/layers.hpp"
#include "layers/f64_params.hpp"

#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace glia {
namespace {

using testing::with_f64_params;

using testing::expect_gradients_match;
using testing::random_tensor;

// d sum(w * attention(q, k, v)) with a fixed random w.
TEST(AttentionGradients, ScaledDotProductWithMaskBiasAndCausal) {
  Tensor mask = Tensor::from<bool>({true,  false, true,  true,  true,    // query 0
                                    false, false, false, false, false,   // query 1: nothing
                                    true,  true,  false, true,  true,    // query 2
                                    true,  true,  true,  true,  false},  // query 3
                                   Shape{4, 5});
  std::vector<double> b(20);
  for (int i = 0; i < 20; ++i) b[i] = 0.05 * i - 0.4;
  b[10 + 1] = -std::numeric_limits<double>::infinity();  // query 2, key 1
  Tensor bias = Tensor::from<double>(b, Shape{4, 5});
  Tensor w = random_tensor({2, 4, 3}, -1, 1, 99);
  expect_gradients_match(
      [&](const std::vector<Expr>& in) {
        return sum(w * scaled_dot_product_attention(in[0], in[1], in[2],
                                                    {.mask = in[3], .bias = in[4], .scale = 0.7}));
      },
      {random_tensor({2, 4, 3}, -1, 1, 1), random_tensor({2, 5, 3}, -1, 1, 2),
       random_tensor({2, 5, 3}, -1, 1, 3), mask, bias},
      {.check = {true, true, true, false, false}});
  // The bias's gradient where it is finite; causal on top of a key mask.
  Tensor finite_bias = random_tensor({4, 5}, -1, 1, 4);
  Tensor key_mask = Tensor::from<bool>(
      {true, true, false, true, true, true, true, true, false, true}, Shape{2, 1, 5});
  expect_gradients_match(
      [&](const std::vector<Expr>& in) {
        return sum(w * scaled_dot_product_attention(
                           in[0], in[1], in[2], {.mask = in[3], .bias = in[4], .causal = true}));
      },
      {random_tensor({2, 4, 3}, -1, 1, 5), random_tensor({2, 5, 3}, -1, 1, 6),
       random_tensor({2, 5, 3}, -1, 1, 7), key_mask, finite_bias});
}

// d sum(w * mha(q, kv, kv)) / d (q, kv, every parameter), with a key mask (example 1
// pads two keys), a float attention mask, and causal.
TEST(AttentionGradients, MultiHeadAttentionInputsAndParameters) {
  auto make = [](DType dtype) {
    Model q = input("q", {2, 4, 6}, dtype), kv = input("kv", {2, 5, 4}, dtype);
    Model km = input("key_mask", {2, 5}, DType::boolean);
    Model am = input("attention_mask", {4, 5}, dtype);
    return multi_head_attention(q, kv, kv, 2,
                                {.causal = true, .key_mask = km, .attention_mask = am});
  };
  ModelState drawn = build(make(DType::f32)).init(0);
  const std::string layer = "multi_head_attention_0";
  std::vector<std::string> names;
  std::vector<Tensor> args{
      random_tensor({2, 4, 6}, -1, 1, 1), random_tensor({2, 5, 4}, -1, 1, 2),
      Tensor::from<bool>({true, true, true, true, true, true, false, true, false, true},
                         Shape{2, 5}),
      random_tensor({4, 5}, -0.5, 0.5, 3)};
  unsigned seed = 10;
  for (const auto& [name, t] : drawn.params.at(layer)) {
    names.push_back(name);
    args.push_back(random_tensor(t.shape(), -1, 1, ++seed));
  }
  ASSERT_EQ(names.size(), 8u);
  Model m = with_f64_params(make(DType::f64));
  Tensor w = random_tensor({2, 4, 6}, -1, 1, 99);
  std::vector<bool> check(args.size(), true);
  check[2] = false;  // the key mask
  expect_gradients_match(
      [&](const std::vector<Expr>& in) {
        ExprParamMap params;
        for (std::size_t i = 0; i < names.size(); ++i) params[layer][names[i]] = in[i + 4];
        Expr y =
            apply(m, params, {},
                  {{"q", in[0]}, {"kv", in[1]}, {"key_mask", in[2]}, {"attention_mask", in[3]}})
                .output;
        return sum(y * Expr(w));
      },
      args, {.check = check});
}

}  // namespace
}  // namespace glia
