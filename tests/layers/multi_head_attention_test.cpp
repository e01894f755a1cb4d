// The multi_head_attention layer: its parameters, what its masks and causal flag hide, the
// self-attention form, dropout in train mode, its summary row and its errors. Its values
// against PyTorch are in attention_golden_test.cpp, its gradients in
// attention_gradient_test.cpp.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "autograd/gradcheck.hpp"
#include "glia/layers.hpp"

#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace glia {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

Tensor rand32(const Shape& s, unsigned seed) {
  return testing::random_tensor(s, -1, 1, seed).cast(DType::f32);
}

std::vector<float> rows(const Tensor& t, std::int64_t first, std::int64_t count) {
  std::vector<float> all = t.to_vector<float>();
  std::int64_t width = t.numel() / t.shape()[0] / t.shape()[1];
  return {all.begin() + first * width, all.begin() + (first + count) * width};
}

TEST(MultiHeadAttention, ParametersInDenseLayout) {
  Model q = input("q", {-1, 3, 8}), k = input("k", {-1, 5, 4}), v = input("v", {-1, 5, 6});
  ModelState s = build(multi_head_attention(q, k, v, 2)).init(0);
  const auto& p = s.params.at("multi_head_attention_0");
  std::map<std::string, Shape> want{
      {"q_kernel", {8, 8}}, {"k_kernel", {4, 8}}, {"v_kernel", {6, 8}}, {"out_kernel", {8, 8}},
      {"q_bias", {8}},      {"k_bias", {8}},      {"v_bias", {8}},      {"out_bias", {8}}};
  ASSERT_EQ(p.size(), want.size());
  for (const auto& [name, shape] : want) EXPECT_EQ(p.at(name).shape(), shape) << name;
  EXPECT_EQ(p.at("q_bias").to_vector<float>(), std::vector<float>(8, 0.0f));  // zeros
  ModelState no_bias = build(multi_head_attention(q, k, v, 4, {.use_bias = false})).init(0);
  EXPECT_EQ(no_bias.params.at("multi_head_attention_0").size(), 4u);
  // 64 + 32 + 48 + 64 kernel weights and 4 biases of 8.
  EXPECT_THAT(summary(multi_head_attention(q, k, v, 2)),
              AllOf(HasSubstr("multi_head_attention_0 (multi_head_attention)"),
                    HasSubstr("num_heads=2"), HasSubstr("Total parameters: 240")));
}

// An example whose keys are all padding attends to nothing: its rows are out_bias. A padded
// key changes nothing for the others, as if it were cut from key and value.
TEST(MultiHeadAttention, KeyMaskHidesKeys) {
  Model q = input("q", {2, 3, 4}), kv = input("kv", {2, 5, 4});
  Model mask = input("key_mask", {2, 5}, DType::boolean);
  Model m = multi_head_attention(q, kv, kv, 2,
                                 {.key_mask = mask, .bias_initializer = initializers::normal()});
  auto [init, predict] = build(m);
  ModelState s = init(1);
  Tensor qt = rand32({2, 3, 4}, 1), kvt = rand32({2, 5, 4}, 2);
  // example 0: keys 0..3 real, key 4 padding; example 1: all padding.
  Tensor keys = Tensor::from<bool>(
      {true, true, true, true, false, false, false, false, false, false}, Shape{2, 5});
  Tensor y = predict(s, {{"q", qt}, {"kv", kvt}, {"key_mask", keys}});
  std::vector<float> out_bias =
      s.params.at("multi_head_attention_0").at("out_bias").to_vector<float>();
  ASSERT_NE(out_bias, std::vector<float>(4, 0.0f));
  for (std::int64_t r = 0; r < 3; ++r) EXPECT_EQ(rows(y, 3 + r, 1), out_bias) << "query " << r;

  Model q1 = input("q", {1, 3, 4}), kv1 = input("kv", {1, 4, 4});
  Tensor cut = Tensor::from<float>(rows(kvt, 0, 4), Shape{1, 4, 4});
  Tensor q0 = Tensor::from<float>(rows(qt, 0, 3), Shape{1, 3, 4});
  Tensor y1 = build(multi_head_attention(q1, kv1, kv1, 2)).predict(s, {{"q", q0}, {"kv", cut}});
  std::vector<float> got = rows(y, 0, 3), want = y1.to_vector<float>();
  for (std::size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-6) << i;
}

// Causal: output i depends on inputs 0..i only; self-attention is the same layer on x, x, x.
TEST(MultiHeadAttention, CausalSelfAttention) {
  Model x = input("x", {-1, 4, 6});
  Model causal = multi_head_attention(x, 3, {.causal = true});
  ModelState s = build(causal).init(2);
  Tensor a = rand32({1, 4, 6}, 3);
  std::vector<float> changed = a.to_vector<float>();
  for (std::size_t i = 12; i < 24; ++i) changed[i] += 0.5f;  // tokens 2 and 3
  Tensor b = Tensor::from<float>(changed, Shape{1, 4, 6});
  auto predict = build(causal).predict;
  Tensor ya = predict(s, a), yb = predict(s, b);
  EXPECT_EQ(rows(ya, 0, 2), rows(yb, 0, 2));
  EXPECT_NE(rows(ya, 2, 2), rows(yb, 2, 2));
  Tensor explicit_qkv = build(multi_head_attention(x, x, x, 3, {.causal = true})).predict(s, a);
  EXPECT_TRUE(equal(explicit_qkv, ya));
  Tensor open = build(multi_head_attention(x, 3)).predict(s, a);
  EXPECT_NE(rows(open, 0, 2), rows(ya, 0, 2));
}

TEST(MultiHeadAttention, DropoutOnlyInTrainMode) {
  Model x = input("x", {-1, 6, 4});
  Model m = multi_head_attention(x, 2, {.dropout = 0.5});
  auto [init, predict] = build(m);
  ModelState s = init(0);
  Tensor in = rand32({2, 6, 4}, 4);
  Tensor inference = predict(s, in);
  EXPECT_TRUE(equal(inference, build(multi_head_attention(x, 2)).predict(s, in)));
  Tensor t1 = predict.train(s, in, random::key(1)).output;
  EXPECT_FALSE(allclose(t1, inference, 1e-3, 1e-3));
  EXPECT_TRUE(equal(t1, predict.train(s, in, random::key(1)).output));
  EXPECT_FALSE(equal(t1, predict.train(s, in, random::key(2)).output));
  EXPECT_THAT(summary(m), HasSubstr("dropout=0.5"));
}

// Errors name the layer, its input shapes and what was expected; they come at build
// (options) or when the model is traced (shapes), init included.
TEST(MultiHeadAttention, Errors) {
  Model x = input("x", {-1, 4, 6});
  auto traced = [](const Model& m) { return [m] { build(m).init(default_input_types(m, 2)); }; };
  auto fails = [](const std::function<void()>& f, const std::string& a, const std::string& b) {
    EXPECT_THAT(f, ThrowsMessage<Error>(AllOf(HasSubstr(a), HasSubstr(b))));
  };
  const std::string layer = "layer 'multi_head_attention_0' (multi_head_attention) with input(s) ";
  fails([&] { multi_head_attention(x, 0); }, "multi_head_attention: num_heads must be positive",
        "got 0");
  fails([&] { multi_head_attention(x, 2, {.dropout = 1}); }, "dropout must be in [0, 1)", "got 1");
  fails([&] { multi_head_attention(x, Model(), x, 2); }, "must be defined models", "");
  fails(traced(multi_head_attention(x, 4)), layer + "f32[2][4][6], f32[2][4][6], f32[2][4][6]",
        "embed dim 6 (the query's last axis) is not divisible by num_heads 4");
  Model flat = input("flat", {-1, 6});
  fails(traced(multi_head_attention(flat, 2)), "expected query [N, Lq, E], key [N, Lk, kdim]",
        "got query [2][6], key [2][6], value [2][6]");
  Model k = input("k", {-1, 5, 3}), v = input("v", {-1, 4, 3}), v3 = input("v", {3, 5, 3});
  fails(traced(multi_head_attention(x, k, v, 2)), "same length (axis 1, Lk)",
        "query [2][4][6], key [2][5][3], value [2][4][3]");
  fails(traced(multi_head_attention(x, k, v3, 2)), "same batch size (axis 0)", "value [3][5][3]");
  Model km = input("km", {-1, 4}, DType::boolean);
  fails(traced(multi_head_attention(x, k, k, 2, {.key_mask = km})),
        "expected key_mask [N, Lk] = [2][5], got [2][4]", layer);
  Model kmf = input("km", {-1, 5});
  fails(traced(multi_head_attention(x, k, k, 2, {.key_mask = kmf})),
        "key_mask must be bool (true = attend), got f32[2][5]", layer);
  Model am = input("am", {4, 4}, DType::boolean);
  fails(traced(multi_head_attention(x, k, k, 2, {.attention_mask = am})),
        "expected attention_mask [Lq, Lk], [N, Lq, Lk] or [N, num_heads, Lq, Lk]",
        "[N, num_heads, Lq, Lk] = [2][2][4][5], got [4][4]");
  Model am5 = input("am", {-1, 3, 4, 5}, DType::boolean);
  fails(traced(multi_head_attention(x, k, k, 2, {.attention_mask = am5})),
        "expected attention_mask", "got [2][3][4][5]");
  Model ami = input("am", {4, 5}, DType::i32);
  fails(traced(multi_head_attention(x, k, k, 2, {.attention_mask = ami})),
        "attention_mask must be bool (true = attend) or floating-point", "i32[4][5]");
}

// model_from_json rebuilds the layer with its masks from the inputs its config names.
TEST(MultiHeadAttention, JsonNamesTheMaskInputs) {
  Model x = input("x", {-1, 4, 6}), km = input("km", {-1, 4}, DType::boolean);
  std::string json = model_to_json(multi_head_attention(x, 2, {.key_mask = km}));
  const std::string inputs = R"("inputs":["x","x","x","km"])";
  auto at = json.find(inputs);
  ASSERT_NE(at, std::string::npos) << json;
  EXPECT_EQ(model_to_json(model_from_json(json)), json);
  json.replace(at, inputs.size(), R"("inputs":["x","x","x"])");
  EXPECT_THAT(
      [&] { model_from_json(json); },
      ThrowsMessage<Error>(HasSubstr(
          "(multi_head_attention): expected 4 inputs (query, key, value, key_mask), got 3")));
}

}  // namespace
}  // namespace glia
