// Tests of lstm and gru: predictions against the gate equations written out here in
// doubles, the scan and unrolled forms agreeing, reverse order, initial states, the last
// step alone, graph size independent of the sequence length, gradients (f64, central
// differences) and bad input.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "autograd/gradcheck.hpp"
#include "glia/core/scan.hpp"
#include "glia/layers.hpp"
#include "layers/f64_params.hpp"

#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace glia {
namespace {

using testing::with_f64_params;

using ::testing::HasSubstr;
using ::testing::ThrowsMessage;
using Mat = std::vector<double>;  // row-major

double sigmoid_d(double v) { return 1 / (1 + std::exp(-v)); }

// The layer's equations (recurrent.hpp) for one example: xs [T, F] -> outputs [T, H].
Mat reference(const std::string& type, const Mat& xs, std::int64_t T, std::int64_t F,
              std::int64_t H, const Mat& k, const Mat& u, const Mat& b, const Mat& ub, Mat h, Mat c,
              bool reverse) {
  const std::int64_t G = type == "lstm" ? 4 : 3;
  Mat out(static_cast<std::size_t>(T * H));
  for (std::int64_t s = 0; s < T; ++s) {
    const std::int64_t t = reverse ? T - 1 - s : s;
    Mat xw(static_cast<std::size_t>(G * H)), hu(static_cast<std::size_t>(G * H));
    for (std::int64_t j = 0; j < G * H; ++j) {
      double a = b[j], r = ub.empty() ? 0 : ub[j];
      for (std::int64_t f = 0; f < F; ++f) a += xs[t * F + f] * k[f * G * H + j];
      for (std::int64_t i = 0; i < H; ++i) r += h[i] * u[i * G * H + j];
      xw[j] = a, hu[j] = r;
    }
    Mat nh(static_cast<std::size_t>(H));
    for (std::int64_t i = 0; i < H; ++i) {
      if (type == "lstm") {
        auto z = [&](int g) { return xw[g * H + i] + hu[g * H + i]; };
        double ig = sigmoid_d(z(0)), fg = sigmoid_d(z(1)), gg = std::tanh(z(2)),
               og = sigmoid_d(z(3));
        c[i] = fg * c[i] + ig * gg;
        nh[i] = og * std::tanh(c[i]);
      } else {
        double r = sigmoid_d(xw[i] + hu[i]), zg = sigmoid_d(xw[H + i] + hu[H + i]);
        double n = std::tanh(xw[2 * H + i] + r * hu[2 * H + i]);
        nh[i] = (1 - zg) * n + zg * h[i];
      }
    }
    h = nh;
    for (std::int64_t i = 0; i < H; ++i) out[t * H + i] = h[i];
  }
  return out;
}

struct Case {
  std::string type;
  bool reverse = false, unroll = false, with_state = false;
};

void check_against_reference(const Case& c) {
  SCOPED_TRACE(c.type + (c.reverse ? " reverse" : "") + (c.unroll ? " unrolled" : "") +
               (c.with_state ? " initial state" : ""));
  const std::int64_t N = 2, T = 5, F = 3, H = 4, G = c.type == "lstm" ? 4 : 3;
  Model x = input("x", {-1, T, F});
  RecurrentState init;
  if (c.with_state) {
    init.hidden = input("h0", {-1, H});
    if (c.type == "lstm") init.cell = input("c0", {-1, H});
  }
  RecurrentOptions o{.bias_initializer = initializers::uniform(0.5),
                     .reverse = c.reverse,
                     .unroll = c.unroll,
                     .name = "rnn"};
  Model m = c.type == "lstm" ? lstm(x, H, o, init) : gru(x, H, o, init);
  auto [init_fn, predict] = build(m);
  std::map<std::string, Tensor> in{{"x", testing::random_tensor({N, T, F}, -1, 1, 11).cast(f32)}};
  if (c.with_state) {
    in["h0"] = testing::random_tensor({N, H}, -1, 1, 12).cast(f32);
    if (c.type == "lstm") in["c0"] = testing::random_tensor({N, H}, -1, 1, 13).cast(f32);
  }
  std::map<std::string, TensorType> types;
  for (const auto& [k, v] : in) types[k] = v.type();
  ModelState s = init_fn(types, 3);
  auto p = [&](const std::string& n) { return s.params.at("rnn").at(n).to_vector<double>(); };
  Mat ub = c.type == "gru" ? p("recurrent_bias") : Mat{};
  Tensor out = predict(s, in);
  ASSERT_EQ(out.shape(), (Shape{N, T, H}));
  Mat xs = in["x"].to_vector<double>();
  for (std::int64_t n = 0; n < N; ++n) {
    Mat x1(xs.begin() + n * T * F, xs.begin() + (n + 1) * T * F);
    Mat h(static_cast<std::size_t>(H), 0.0), cs(static_cast<std::size_t>(H), 0.0);
    if (c.with_state) {
      Mat hv = in["h0"].to_vector<double>();
      h.assign(hv.begin() + n * H, hv.begin() + (n + 1) * H);
      if (c.type == "lstm") {
        Mat cv = in["c0"].to_vector<double>();
        cs.assign(cv.begin() + n * H, cv.begin() + (n + 1) * H);
      }
    }
    Mat want = reference(c.type, x1, T, F, H, p("kernel"), p("recurrent_kernel"), p("bias"), ub, h,
                         cs, c.reverse);
    Mat got = out.to_vector<double>();
    for (std::int64_t i = 0; i < T * H; ++i)
      EXPECT_NEAR(got[static_cast<std::size_t>(n * T * H + i)], want[static_cast<std::size_t>(i)],
                  1e-5)
          << "example " << n << " element " << i;
  }
  EXPECT_EQ(s.params.at("rnn").at("kernel").shape(), (Shape{F, G * H}));
  EXPECT_EQ(s.params.at("rnn").at("recurrent_kernel").shape(), (Shape{H, G * H}));
}

TEST(Recurrent, LstmMatchesTheGateEquations) {
  for (bool reverse : {false, true})
    for (bool unroll : {false, true})
      for (bool state : {false, true}) check_against_reference({"lstm", reverse, unroll, state});
}

TEST(Recurrent, GruMatchesTheGateEquations) {
  for (bool reverse : {false, true})
    for (bool unroll : {false, true})
      for (bool state : {false, true}) check_against_reference({"gru", reverse, unroll, state});
}

TEST(Recurrent, LastStepAloneIsTheSequencesLastRow) {
  Model x = input("x", {-1, 6, 2});
  Model seq = lstm(x, 3, {.name = "a"});
  Model last = lstm(x, 3, {.return_sequences = false, .name = "a"});
  ModelState s = build(seq).init(5);
  Tensor xs = testing::random_tensor({4, 6, 2}, -1, 1, 14).cast(f32);
  Tensor all = build(seq).predict(s, xs), one = build(last).predict(s, xs);
  ASSERT_EQ(one.shape(), (Shape{4, 3}));
  Mat a = all.to_vector<double>(), b = one.to_vector<double>();
  for (std::int64_t n = 0; n < 4; ++n)
    for (std::int64_t i = 0; i < 3; ++i) EXPECT_NEAR(b[n * 3 + i], a[(n * 6 + 5) * 3 + i], 1e-6);
}

TEST(Recurrent, GraphSizeDoesNotGrowWithTheSequence) {
  auto nodes = [](std::int64_t steps) {
    Model m = lstm(input("x", {-1, steps, 4}), 8, {.name = "l"});
    Graph g = trace(
        [&](const std::vector<Expr>& in) {
          ExprParamMap p{{"l", {{"kernel", in[1]}, {"recurrent_kernel", in[2]}, {"bias", in[3]}}}};
          return std::vector<Expr>{apply(m, p, {}, {{"x", in[0]}}).output};
        },
        {{f32, {2, steps, 4}}, {f32, {4, 32}}, {f32, {8, 32}}, {f32, {32}}});
    return g.size();
  };
  EXPECT_EQ(nodes(5), nodes(60));
}

// ---- Gradients (f64 parameters, central differences) ----------------------------------

void check_gradients(const std::string& type, bool reverse) {
  SCOPED_TRACE(type);
  const std::int64_t T = 3, F = 2, H = 3, G = type == "lstm" ? 4 : 3;
  Model x = input("x", {-1, T, F}, DType::f64);
  RecurrentOptions o{.reverse = reverse, .name = "r"};
  Model m = with_f64_params(type == "lstm" ? lstm(x, H, o) : gru(x, H, o));
  std::vector<Tensor> inputs{testing::random_tensor({2, T, F}, -1, 1, 21),
                             testing::random_tensor({F, G * H}, -0.8, 0.8, 22),
                             testing::random_tensor({H, G * H}, -0.8, 0.8, 23),
                             testing::random_tensor({G * H}, -0.5, 0.5, 24)};
  if (type == "gru") inputs.push_back(testing::random_tensor({G * H}, -0.5, 0.5, 25));
  Tensor w = testing::random_tensor({2, T, H}, -1, 1, 26);
  testing::expect_gradients_match(
      [&](const std::vector<Expr>& in) {
        std::map<std::string, Expr> p{
            {"kernel", in[1]}, {"recurrent_kernel", in[2]}, {"bias", in[3]}};
        if (type == "gru") p["recurrent_bias"] = in[4];
        return sum(apply(m, {{"r", p}}, {}, {{"x", in[0]}}).output * Expr(w));
      },
      inputs, {.tolerance = 1e-5});
}

TEST(RecurrentGradients, Lstm) {
  check_gradients("lstm", false);
  check_gradients("lstm", true);
}

TEST(RecurrentGradients, Gru) {
  check_gradients("gru", false);
  check_gradients("gru", true);
}

TEST(Recurrent, BadInputIsAnError) {
  EXPECT_THAT(
      [] {
        build(lstm(input("x", {-1, 4}), 3)).init(0);
      },
      ThrowsMessage<Error>(HasSubstr("lstm: expected a sequence [batch, time, features]")));
  EXPECT_THAT(
      [] {
        lstm(input("x", {-1, 4, 2}), 0);
      },
      ThrowsMessage<Error>(HasSubstr("lstm: units must be positive")));
  EXPECT_THAT(
      [] {
        gru(input("x", {-1, 4, 2}), 3, {.activation = "nope"});
      },
      ThrowsMessage<Error>(HasSubstr("gru")));
  EXPECT_THAT(
      [] {
        gru(input("x", {-1, 4, 2}), 3, {}, {.cell = input("c", {-1, 3})});
      },
      ThrowsMessage<Error>(HasSubstr("gru: has no cell state")));
  Model bad = lstm(input("x", {-1, 4, 2}), 3, {}, {.hidden = input("h", {-1, 5})});
  // The forward pass is traced when parameters are made: init reports it.
  EXPECT_THAT([&] { build(bad).init(0); },
              ThrowsMessage<Error>(
                  HasSubstr("lstm: the initial hidden state is f32[1][5], expected f32[1][3]")));
}

TEST(Recurrent, JsonRoundTripKeepsTheOptions) {
  Model m = gru(input("x", {-1, 5, 2}), 4,
                {.recurrent_activation = "hard_sigmoid", .use_bias = false, .reverse = true});
  Model back = model_from_json(model_to_json(m));
  EXPECT_EQ(model_to_json(back), model_to_json(m));
  ModelState s = build(m).init(2);
  Tensor x = testing::random_tensor({1, 5, 2}, -1, 1, 31).cast(f32);
  EXPECT_TRUE(allclose(build(m).predict(s, x), build(back).predict(s, x), 0, 0));
}

}  // namespace
}  // namespace glia
