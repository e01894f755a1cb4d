// scaled_dot_product_attention: values against plain loops (masks, bias, causal, scale,
// broadcast leading axes) on the interpreter and the default backend, rows with nothing to
// attend to (0, not NaN, and a finite gradient), dropout, and the errors.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>

#include "autograd/gradcheck.hpp"
#include "glia/compiler/jit.hpp"
#include "glia/layers/attention.hpp"

#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace glia {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::ThrowsMessage;
using Fn = std::function<Expr(const std::vector<Expr>&)>;

constexpr double kInf = std::numeric_limits<double>::infinity();

struct Dims {
  std::int64_t batch, lq, lk, e, ev;
};
using Allowed = std::function<bool(std::int64_t b, std::int64_t i, std::int64_t j)>;
using Bias = std::function<double(std::int64_t b, std::int64_t i, std::int64_t j)>;

// softmax(q k^T scale + bias over the allowed keys) v by loops over [batch, L, E] slices;
// a query with no allowed key (or only -inf scores) gives a row of zeros.
std::vector<double> by_loops(const Tensor& q, const Tensor& k, const Tensor& v, Dims d,
                             double scale, const Allowed& allowed, const Bias& bias = {}) {
  std::vector<double> out(static_cast<std::size_t>(d.batch * d.lq * d.ev), 0.0);
  for (std::int64_t b = 0; b < d.batch; ++b)
    for (std::int64_t i = 0; i < d.lq; ++i) {
      std::vector<double> s(static_cast<std::size_t>(d.lk), -kInf);
      double top = -kInf;
      for (std::int64_t j = 0; j < d.lk; ++j) {
        if (!allowed(b, i, j)) continue;
        double dot = 0;
        for (std::int64_t e = 0; e < d.e; ++e)
          dot += q.element((b * d.lq + i) * d.e + e) * k.element((b * d.lk + j) * d.e + e);
        s[j] = dot * scale + (bias ? bias(b, i, j) : 0.0);
        top = std::max(top, s[j]);
      }
      if (top == -kInf) continue;
      double total = 0;
      for (double& x : s) total += (x = std::exp(x - top));
      for (std::int64_t j = 0; j < d.lk; ++j)
        for (std::int64_t c = 0; c < d.ev; ++c)
          out[static_cast<std::size_t>((b * d.lq + i) * d.ev + c)] +=
              s[j] / total * v.element((b * d.lk + j) * d.ev + c);
    }
  return out;
}

// fn on the interpreter and on the default backend, each result checked against `want`.
void expect_values(const Fn& fn, const std::vector<Tensor>& args, const std::vector<double>& want,
                   double tol) {
  for (const std::string& backend : {std::string("interp"), default_backend()}) {
    SCOPED_TRACE("backend " + backend);
    auto f = jit(fn, JitOptions{.backend = backend});
    std::vector<double> got = f(args).to_vector<double>();
    ASSERT_EQ(got.size(), want.size());
    for (std::size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], tol) << "at " << i;
  }
}

Tensor rand(const Shape& s, unsigned seed) { return testing::random_tensor(s, -1.5, 1.5, seed); }

TEST(ScaledDotProductAttention, MatchesLoops) {
  Dims d{6, 3, 5, 4, 2};  // leading axes [2, 3] flattened to 6 in the loops
  Tensor q = rand({2, 3, 3, 4}, 1), k = rand({2, 3, 5, 4}, 2), v = rand({2, 3, 5, 2}, 3);
  expect_values([](const auto& in) { return scaled_dot_product_attention(in[0], in[1], in[2]); },
                {q, k, v}, by_loops(q, k, v, d, 0.5, [](auto...) { return true; }), 1e-12);
  expect_values(
      [](const auto& in) {
        return scaled_dot_product_attention(in[0], in[1], in[2], {.scale = -0.75});
      },
      {q.cast(DType::f32), k.cast(DType::f32), v.cast(DType::f32)},
      by_loops(q, k, v, d, -0.75, [](auto...) { return true; }), 1e-5);
}

TEST(ScaledDotProductAttention, CausalIsTopLeftAndCombinesWithMaskAndBias) {
  Dims d{2, 3, 5, 2, 3};
  Tensor q = rand({2, 3, 2}, 4), k = rand({2, 5, 2}, 5), v = rand({2, 5, 3}, 6);
  // mask [2, 1, 5]: example 0 hides key 0, example 1 key 1; bias [3, 5] with one -inf.
  Tensor mask = Tensor::from<bool>({false, true, true, true, true, true, false, true, true, true},
                                   Shape{2, 1, 5});
  std::vector<double> bias_values(15);
  for (int i = 0; i < 15; ++i) bias_values[i] = 0.1 * (i % 4) - 0.2;
  bias_values[5 + 2] = -kInf;  // query 1, key 2
  Tensor bias = Tensor::from<double>(bias_values, Shape{3, 5});
  expect_values(
      [](const auto& in) {
        return scaled_dot_product_attention(in[0], in[1], in[2], {.causal = true});
      },
      {q, k, v},
      by_loops(q, k, v, d, 1 / std::sqrt(2.0), [](auto, auto i, auto j) { return j <= i; }), 1e-12);
  expect_values(
      [](const auto& in) {
        return scaled_dot_product_attention(in[0], in[1], in[2],
                                            {.mask = in[3], .bias = in[4], .causal = true});
      },
      {q, k, v, mask, bias},
      by_loops(
          q, k, v, d, 1 / std::sqrt(2.0),
          [&](auto b, auto i, auto j) {
            return j <= i && j != b && bias_values[i * 5 + j] > -kInf;
          },
          [&](auto, auto i, auto j) { return bias_values[i * 5 + j]; }),
      1e-12);
}

// `times` copies of t one after the other, as a tensor of `shape`.
Tensor tiled(const Tensor& t, int times, const Shape& shape) {
  std::vector<double> all, once = t.to_vector<double>();
  for (int i = 0; i < times; ++i) all.insert(all.end(), once.begin(), once.end());
  return Tensor::from<double>(all, shape);
}

TEST(ScaledDotProductAttention, LeadingAxesBroadcast) {
  // k and v shared by the batch of 3: the loops see them at batch index 0.
  Tensor q = rand({3, 2, 4}, 7), k = rand({1, 4, 4}, 8), v = rand({4, 3}, 9);
  Tensor k3 = tiled(k, 3, {3, 4, 4}), v3 = tiled(v, 3, {3, 4, 3});
  expect_values([](const auto& in) { return scaled_dot_product_attention(in[0], in[1], in[2]); },
                {q, k, v}, by_loops(q, k3, v3, {3, 2, 4, 4, 3}, 0.5, [](auto...) { return true; }),
                1e-12);
}

// A query whose keys are all masked out (by the mask, or by -inf in the bias) gives a row of
// zeros where PyTorch gives NaN; the other rows are unaffected and every gradient is finite.
TEST(ScaledDotProductAttention, RowsWithNothingToAttendToGiveZeros) {
  Dims d{1, 3, 4, 2, 2};
  Tensor q = rand({1, 3, 2}, 10), k = rand({1, 4, 2}, 11), v = rand({1, 4, 2}, 12);
  // query 0 sees keys 1 and 3; query 1 sees none; query 2's bias is -inf on every key.
  Tensor mask = Tensor::from<bool>(
      {false, true, false, true, false, false, false, false, true, true, true, true}, Shape{3, 4});
  Tensor bias =
      Tensor::from<double>({0, 0.5, 0, -1, 0, 0, 0, 0, -kInf, -kInf, -kInf, -kInf}, Shape{3, 4});
  Fn fn = [](const auto& in) {
    return scaled_dot_product_attention(in[0], in[1], in[2], {.mask = in[3], .bias = in[4]});
  };
  std::vector<double> want = by_loops(
      q, k, v, d, 1 / std::sqrt(2.0), [](auto, auto i, auto j) { return i == 0 && j % 2 == 1; },
      [&](auto, auto i, auto j) { return bias.element(i * 4 + j); });
  for (std::size_t i = 2; i < want.size(); ++i) ASSERT_EQ(want[i], 0.0);  // rows 1 and 2
  expect_values(fn, {q, k, v, mask, bias}, want, 1e-12);
  std::vector<Tensor> grads = testing::analytic_gradients(
      [&](const auto& in) {
        return sum(fn(in) * Expr(rand({1, 3, 2}, 13)));
      },
      {q, k, v, mask, bias}, {true, true, true, false, true});
  for (const Tensor& g : grads)
    for (double x : g.to_vector<double>()) EXPECT_TRUE(std::isfinite(x)) << g;
  EXPECT_THAT(grads[0].to_vector<double>(),
              ::testing::ElementsAre(::testing::Ne(0.0), ::testing::Ne(0.0), 0, 0, 0, 0));
}

TEST(ScaledDotProductAttention, DropoutDropsAndRescalesWeights) {
  // v = I (Lk = Ev): the output is the attention weights themselves.
  const std::int64_t lk = 16;
  Tensor q = rand({2, 8, 4}, 14), k = rand({2, lk, 4}, 15);
  std::vector<double> eye(lk * lk, 0.0);
  for (std::int64_t i = 0; i < lk; ++i) eye[i * lk + i] = 1;
  Tensor v = Tensor::from<double>(eye, Shape{lk, lk});
  Tensor key = random::key(3);
  auto run = [&](double rate, const Tensor& kk) {
    return jit([rate](const std::vector<Expr>& in) {
             return scaled_dot_product_attention(in[0], in[1], in[2],
                                                 {.dropout_rate = rate, .key = in[3]});
           })(std::vector<Tensor>{q, k, v, kk})
        .to_vector<double>();
  };
  std::vector<double> plain = run(0, key), dropped = run(0.25, key);
  int zeros = 0;
  for (std::size_t i = 0; i < plain.size(); ++i) {
    if (dropped[i] == 0) {
      ++zeros;
      continue;
    }
    EXPECT_NEAR(dropped[i], plain[i] / 0.75, 1e-12) << "at " << i;
  }
  // 256 weights, a quarter dropped on average: 64 +- 7 (binomial sd).
  EXPECT_GT(zeros, 30);
  EXPECT_LT(zeros, 100);
  EXPECT_EQ(run(0.25, key), dropped);  // the same key, the same drops
  EXPECT_NE(run(0.25, random::key(4)), dropped);
}

std::function<void()> traced(const std::vector<TensorType>& types, Fn fn) {
  return [types, fn] { trace([&](const auto& in) { return std::vector<Expr>{fn(in)}; }, types); };
}

TEST(ScaledDotProductAttention, Errors) {
  TensorType q{DType::f32, {2, 3, 4}}, k{DType::f32, {2, 5, 4}}, v{DType::f32, {2, 5, 6}};
  auto sdpa = [](const auto& in) { return scaled_dot_product_attention(in[0], in[1], in[2]); };
  auto fails = [](const std::function<void()>& f, const std::string& a, const std::string& b) {
    EXPECT_THAT(f, ThrowsMessage<Error>(AllOf(HasSubstr("scaled_dot_product_attention: "),
                                              HasSubstr(a), HasSubstr(b))));
  };
  fails(traced({{DType::f32, {4}}, k, v}, sdpa), "expected query [..., Lq, E]",
        "query f32[4], key f32[2][5][4], value f32[2][5][6]");
  fails(traced({q, {DType::f32, {2, 5, 3}}, v}, sdpa), "same last axis (E)", "key f32[2][5][3]");
  fails(traced({q, k, {DType::f32, {2, 4, 6}}}, sdpa), "same length (axis -2, Lk)",
        "value f32[2][4][6]");
  fails(traced({q, k, {DType::f64, {2, 5, 6}}}, sdpa), "one floating-point dtype", "f64[2][5][6]");
  fails(traced({q, {DType::f32, {3, 5, 4}}, v}, sdpa), "cannot be broadcast",
        "the leading axes of query f32[2][3][4], key f32[3][5][4]");
  auto with = [](AttentionOptions o) {
    return [o](const auto& in) {
      AttentionOptions p = o;
      if (in.size() > 3) (in[3].dtype() == DType::u32 ? p.key : p.mask) = in[3];
      if (in.size() > 4) p.bias = in[4];
      return scaled_dot_product_attention(in[0], in[1], in[2], p);
    };
  };
  fails(traced({q, k, v, {DType::f32, {3, 5}}}, with({})), "the mask must be bool", "f32[3][5]");
  fails(traced({q, k, v, {DType::boolean, {3, 4}}}, with({})),
        "the mask bool[3][4] does not broadcast to the scores [..., Lq, Lk] [2][3][5]", "query");
  fails(traced({q, k, v, {DType::boolean, {1, 2, 3, 5}}}, with({})), "does not broadcast", "");
  fails(traced({q, k, v, {DType::boolean, {3, 5}}, {DType::boolean, {3, 5}}}, with({})),
        "the bias must be floating-point", "bool[3][5]");
  fails(traced({q, k, v, {DType::boolean, {3, 5}}, {DType::f32, {5, 5}}}, with({})),
        "the bias f32[5][5] does not broadcast", "");
  fails(traced({q, k, v}, with({.dropout_rate = 1})), "dropout_rate must be in [0, 1), got 1", "");
  fails(traced({q, k, v}, with({.dropout_rate = 0.5})), "dropout needs a u32[2] random key",
        "none");
  fails(traced({q, k, v, {DType::u32, {3}}}, with({.dropout_rate = 0.5})),
        "dropout needs a u32[2] random key", "u32[3]");
}

}  // namespace
}  // namespace glia
