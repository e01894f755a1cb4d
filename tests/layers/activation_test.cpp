// The 22 activations: values against their textbook definitions evaluated in long double
// (wide enough that exp(1e4) does not overflow, so the reference needs no tricks), finite
// values and gradients at +-1e4, gradients against finite differences, by_name, the
// activation layer and dense's activation option.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <numbers>

#include "autograd/gradcheck.hpp"
#include "glia/layers.hpp"

namespace glia {
namespace {

using ::testing::HasSubstr;
using ::testing::ThrowsMessage;
using LD = long double;
using Ref = std::function<LD(LD)>;
using Act = std::function<Expr(const Expr&)>;

static_assert(std::numeric_limits<LD>::max_exponent10 > 4400,
              "the references evaluate exp(1e4) in long double");

const std::vector<double> kPoints = {-1e4, -20, -3,  -1.5, -0.5, -1e-3, 0,
                                     1e-3, 0.5, 1.5, 3,    20,   1e4};

// f applied to a vector of the given dtype, returned as doubles.
std::vector<double> run(const Act& f, const std::vector<double>& xs, DType dtype = DType::f64) {
  Tensor t = Tensor::from<double>(xs).cast(dtype);
  Graph g =
      trace([&](const std::vector<Expr>& in) { return std::vector<Expr>{f(in[0])}; }, {t.type()});
  return interpret(g, std::vector<Tensor>{t})[0].to_vector<double>();
}

testing::GradCheckOptions checked(std::vector<bool> which) {
  testing::GradCheckOptions o;
  o.check = std::move(which);
  return o;
}

struct Case {
  std::string name;
  Act fn;
  Ref ref;
  bool finite_at_1e4 = true;
};

LD softplus_ref(LD x) { return std::log(1 + std::exp(x)); }
LD sigmoid_ref(LD x) { return 1 / (1 + std::exp(-x)); }
LD relu6_ref(LD x) { return std::min<LD>(std::max<LD>(x, 0), 6); }

std::vector<Case> cases() {
  const LD kAlpha = 1.6732632423543772L, kScale = 1.0507009873554805L;
  return {
      {"celu", [](const Expr& x) { return activations::celu(x); },
       [](LD x) { return std::max<LD>(0, x) + std::min<LD>(0, std::exp(x) - 1); }},
      {"celu(2)", [](const Expr& x) { return activations::celu(x, 2.0); },
       [](LD x) { return std::max<LD>(0, x) + std::min<LD>(0, 2 * (std::exp(x / 2) - 1)); }},
      {"elu", [](const Expr& x) { return activations::elu(x); },
       [](LD x) { return x > 0 ? x : std::exp(x) - 1; }},
      {"elu(0.5)", [](const Expr& x) { return activations::elu(x, 0.5); },
       [](LD x) { return x > 0 ? x : 0.5L * (std::exp(x) - 1); }},
      {"exp", [](const Expr& x) { return activations::exp(x); }, [](LD x) { return std::exp(x); },
       false},
      {"gelu", [](const Expr& x) { return activations::gelu(x); },
       [](LD x) { return 0.5L * x * (1 + std::erf(x / std::sqrt(2.0L))); }},
      {"gelu(tanh)", [](const Expr& x) { return activations::gelu(x, true); },
       [](LD x) {
         LD c = std::sqrt(2 / std::numbers::pi_v<LD>);
         return 0.5L * x * (1 + std::tanh(c * (x + 0.044715L * x * x * x)));
       }},
      {"hard_sigmoid", [](const Expr& x) { return activations::hard_sigmoid(x); },
       [](LD x) { return relu6_ref(x + 3) / 6; }},
      {"hard_sigmoid(0.2,0.5)",
       [](const Expr& x) { return activations::hard_sigmoid(x, 0.2, 0.5); },
       [](LD x) { return std::clamp<LD>(0.2L * x + 0.5L, 0, 1); }},
      {"hard_silu", [](const Expr& x) { return activations::hard_silu(x); },
       [](LD x) { return x * relu6_ref(x + 3) / 6; }},
      {"hard_tanh", [](const Expr& x) { return activations::hard_tanh(x); },
       [](LD x) { return std::clamp<LD>(x, -1, 1); }},
      {"leaky_relu", [](const Expr& x) { return activations::leaky_relu(x); },
       [](LD x) { return std::max<LD>(0, x) + 0.01L * std::min<LD>(0, x); }},
      {"leaky_relu(0.2)", [](const Expr& x) { return activations::leaky_relu(x, 0.2); },
       [](LD x) { return std::max<LD>(0, x) + 0.2L * std::min<LD>(0, x); }},
      {"linear", [](const Expr& x) { return activations::linear(x); }, [](LD x) { return x; }},
      {"log_sigmoid", [](const Expr& x) { return activations::log_sigmoid(x); },
       [](LD x) { return std::log(sigmoid_ref(x)); }},
      {"mish", [](const Expr& x) { return activations::mish(x); },
       [](LD x) { return x * std::tanh(softplus_ref(x)); }},
      {"relu", [](const Expr& x) { return activations::relu(x); },
       [](LD x) { return std::max<LD>(0, x); }},
      {"relu6", [](const Expr& x) { return activations::relu6(x); }, relu6_ref},
      {"sigmoid", [](const Expr& x) { return activations::sigmoid(x); }, sigmoid_ref},
      {"silu", [](const Expr& x) { return activations::silu(x); },
       [](LD x) { return x * sigmoid_ref(x); }},
      {"selu", [](const Expr& x) { return activations::selu(x); },
       [=](LD x) {
         return kScale * (std::max<LD>(0, x) + std::min<LD>(0, kAlpha * (std::exp(x) - 1)));
       }},
      {"softplus", [](const Expr& x) { return activations::softplus(x); }, softplus_ref},
      {"softsign", [](const Expr& x) { return activations::softsign(x); },
       [](LD x) { return x / (1 + std::abs(x)); }},
      {"tanh", [](const Expr& x) { return activations::tanh(x); },
       [](LD x) { return std::tanh(x); }},
  };
}

TEST(Activations, ElementwiseMatchDefinitionsInF64) {
  for (const Case& c : cases()) {
    std::vector<double> got = run(c.fn, kPoints);
    for (std::size_t i = 0; i < kPoints.size(); ++i) {
      double want = static_cast<double>(c.ref(kPoints[i]));
      if (!c.finite_at_1e4 && std::abs(kPoints[i]) > 100) continue;
      EXPECT_NEAR(got[i], want, 1e-12 * std::max(1.0, std::abs(want)))
          << c.name << " at " << kPoints[i];
    }
  }
}

TEST(Activations, FiniteAndAccurateInF32) {
  for (const Case& c : cases()) {
    std::vector<double> got = run(c.fn, kPoints, DType::f32);
    for (std::size_t i = 0; i < kPoints.size(); ++i) {
      if (!c.finite_at_1e4 && kPoints[i] > 100) continue;
      double want = static_cast<double>(c.ref(static_cast<float>(kPoints[i])));
      EXPECT_TRUE(std::isfinite(got[i])) << c.name << " at " << kPoints[i];
      EXPECT_NEAR(got[i], want, 2e-6 * std::max(1.0, std::abs(want)))
          << c.name << " at " << kPoints[i];
    }
  }
  // exp overflows by definition.
  EXPECT_TRUE(
      std::isinf(run([](const Expr& x) { return activations::exp(x); }, {1e4}, DType::f32)[0]));
}

// The derivatives at +-1e4 are the asymptotes' slopes, never NaN (no inf * 0 in a branch
// that is not taken).
TEST(Activations, GradientsFiniteAtLargeInputs) {
  Tensor x = Tensor::from<float>({-1e4f, 1e4f});
  for (const Case& c : cases()) {
    if (!c.finite_at_1e4) continue;
    std::vector<Tensor> g = testing::analytic_gradients(
        [&](const std::vector<Expr>& in) { return sum(c.fn(in[0])); }, {x}, {true});
    std::vector<double> d = g[0].to_vector<double>();
    // Slopes of the asymptotes, from the definitions.
    double step = 1e-2;
    for (int i = 0; i < 2; ++i) {
      LD p = x.to_vector<float>()[static_cast<std::size_t>(i)];
      double want = static_cast<double>((c.ref(p + step) - c.ref(p - step)) / (2 * step));
      EXPECT_TRUE(std::isfinite(d[static_cast<std::size_t>(i)])) << c.name << " at " << p;
      EXPECT_NEAR(d[static_cast<std::size_t>(i)], want, 1e-4) << c.name << " at " << p;
    }
  }
}

TEST(Activations, GradientsMatchFiniteDifferences) {
  // Points away from the kinks at 0 (and at +-3, 6 for the hard functions).
  Tensor x = Tensor::from<double>({-2.7, -1.3, -0.4, 0.2, 0.9, 2.1, 4.5});
  for (const Case& c : cases()) {
    if (c.name == "exp") continue;  // covered below with moderate values only
    testing::expect_gradients_match(
        [&](const std::vector<Expr>& in) { return sum(c.fn(in[0]) * in[1]); },
        {x, testing::random_tensor({7}, -1, 1, 3)}, checked({true, false}));
  }
  testing::expect_gradients_match(
      [](const std::vector<Expr>& in) { return sum(activations::exp(in[0])); }, {x});
}

TEST(Activations, SoftmaxFamilyAlongAxes) {
  std::vector<double> v = {1, 2, 3, -1e4, 0, 1e4};
  Tensor t = Tensor::from<double>(v, Shape{2, 3});
  auto eval = [&](const Act& f, DType dtype) {
    Tensor in = t.cast(dtype);
    Graph g =
        trace([&](const std::vector<Expr>& a) { return std::vector<Expr>{f(a[0])}; }, {in.type()});
    return interpret(g, std::vector<Tensor>{in})[0];
  };
  for (DType dtype : {DType::f64, DType::f32}) {
    Tensor lse = eval([](const Expr& x) { return activations::log_sumexp(x); }, dtype);
    ASSERT_EQ(lse.shape(), (Shape{2, 1}));  // keeps the axis
    Tensor sm = eval([](const Expr& x) { return activations::softmax(x); }, dtype);
    Tensor lsm = eval([](const Expr& x) { return activations::log_softmax(x); }, dtype);
    for (int r = 0; r < 2; ++r) {
      LD s = 0;
      for (int k = 0; k < 3; ++k) s += std::exp(static_cast<LD>(v[r * 3 + k]));
      double want_lse = static_cast<double>(std::log(s));
      EXPECT_NEAR(lse.to_vector<double>()[r], want_lse, 1e-6 * std::max(1.0, std::abs(want_lse)));
      for (int k = 0; k < 3; ++k) {
        LD z = static_cast<LD>(v[r * 3 + k]);
        double p = static_cast<double>(std::exp(z) / s);
        double lp = static_cast<double>(z - std::log(s));
        EXPECT_NEAR(sm.to_vector<double>()[r * 3 + k], p, 1e-6);
        EXPECT_NEAR(lsm.to_vector<double>()[r * 3 + k], lp, 1e-6 * std::max(1.0, std::abs(lp)));
      }
    }
  }
  // axis 0: each column normalised.
  Tensor sm0 = eval([](const Expr& x) { return activations::softmax(x, 0); }, DType::f64);
  Tensor lse0 = eval([](const Expr& x) { return activations::log_sumexp(x, 0); }, DType::f64);
  EXPECT_EQ(lse0.shape(), (Shape{1, 3}));
  EXPECT_NEAR(sm0.to_vector<double>()[0], 1.0, 1e-12);  // exp(-1e4) vanishes beside e
  EXPECT_NEAR(sm0.to_vector<double>()[1], std::exp(2.0) / (std::exp(2.0) + 1), 1e-12);
  EXPECT_NEAR(lse0.to_vector<double>()[1], std::log(std::exp(2.0) + 1), 1e-12);
  EXPECT_NEAR(lse0.to_vector<double>()[2], 1e4, 1e-9);
}

TEST(Activations, ByNameCoversAllTwentyTwo) {
  ASSERT_EQ(activations::names().size(), 22u);
  std::vector<double> xs = {-2.5, -0.3, 0.0, 0.7, 4.0};
  std::map<std::string, Act> direct;
  for (const Case& c : cases()) direct[c.name] = c.fn;
  direct["log_sumexp"] = [](const Expr& x) { return activations::log_sumexp(x); };
  direct["log_softmax"] = [](const Expr& x) { return activations::log_softmax(x); };
  direct["softmax"] = [](const Expr& x) { return activations::softmax(x); };
  for (const std::string& name : activations::names()) {
    ASSERT_TRUE(direct.count(name)) << name;
    EXPECT_EQ(run([&](const Expr& x) { return activations::by_name(name, x); }, xs),
              run(direct[name], xs))
        << name;
  }
  EXPECT_THAT([] { run([](const Expr& x) { return activations::by_name("swish", x); }, {1}); },
              ThrowsMessage<Error>(HasSubstr("unknown activation 'swish' (known: celu, elu")));
}

// relu's gradient passes the cotangent where the output is positive and nothing elsewhere,
// at 0 too (Axon's custom gradient and PyTorch's; max(x, 0)'s own rule would give half).
TEST(Activations, ReluGradientIsZeroAtZero) {
  Tensor x = Tensor::from<float>({-2.0f, -0.0f, 0.0f, 1e-30f, 3.0f});
  Tensor w = Tensor::from<float>({1.0f, 2.0f, 3.0f, 4.0f, 5.0f});
  Graph g = trace(
      [](const std::vector<Expr>& in) {
        return std::vector<Expr>{gradients(sum(activations::relu(in[0]) * in[1]), {in[0]})[0]};
      },
      {x.type(), w.type()});
  EXPECT_EQ(interpret(g, std::vector<Tensor>{x, w})[0].to_vector<float>(),
            (std::vector<float>{0, 0, 0, 4, 5}));
}

TEST(Activations, IntegerInputs) {
  Tensor t = Tensor::from<std::int32_t>({-2, 0, 3});
  auto eval = [&](const Act& f) {
    Graph g =
        trace([&](const std::vector<Expr>& a) { return std::vector<Expr>{f(a[0])}; }, {t.type()});
    return interpret(g, std::vector<Tensor>{t})[0];
  };
  Tensor r = eval([](const Expr& x) { return activations::relu(x); });
  EXPECT_EQ(r.dtype(), DType::i32);
  EXPECT_EQ(r.to_vector<int>(), (std::vector<int>{0, 0, 3}));
  Tensor s = eval([](const Expr& x) { return activations::sigmoid(x); });
  EXPECT_EQ(s.dtype(), DType::f32);
  EXPECT_NEAR(s.to_vector<double>()[2], 1 / (1 + std::exp(-3.0)), 1e-6);
}

TEST(ActivationLayer, PredictsAndIsNamedByActivation) {
  Model x = input("data", {-1, 4});
  Model y = activation(x, "gelu");
  EXPECT_EQ(y.node().type, "gelu");
  std::vector<ResolvedLayer> layers =
      resolve_layers(activation(y, "tanh", ActivationOptions{"out"}));
  ASSERT_EQ(layers.size(), 3u);
  EXPECT_EQ(layers[1].name, "gelu_0");
  EXPECT_EQ(layers[2].name, "out");
  PredictFn predict = build(y).predict;
  ModelState s;  // no parameters
  std::vector<float> v = {-2, -0.5, 0.5, 3, 1, 0, -1, 10};
  Tensor out = predict(s, Tensor::from<float>(v, Shape{2, 4}));
  ASSERT_EQ(out.shape(), (Shape{2, 4}));
  for (std::size_t i = 0; i < v.size(); ++i)
    EXPECT_NEAR(out.to_vector<float>()[i], 0.5 * v[i] * (1 + std::erf(v[i] / std::sqrt(2.0))),
                1e-6);
  EXPECT_THAT([&] { activation(x, "gelu2"); },
              ThrowsMessage<Error>(HasSubstr("activation: unknown activation 'gelu2'")));
}

TEST(ActivationLayer, DenseActivationOption) {
  Model x = input("data", {-1, 3});
  DenseOptions o;
  o.activation = "softplus";
  Model y = dense(x, 2, o);
  auto [init, predict] = build(y);
  ModelState s = init();
  s.params["dense_0"]["bias"] = Tensor::from<float>({0.5f, -1.0f});
  std::vector<float> in = {1, -2, 3, 0.5f, 0.25f, -4};
  Tensor out = predict(s, Tensor::from<float>(in, Shape{2, 3}));
  std::vector<float> k = s.params.at("dense_0").at("kernel").to_vector<float>();
  std::vector<float> b = {0.5f, -1.0f};
  for (int r = 0; r < 2; ++r)
    for (int o = 0; o < 2; ++o) {
      double z = b[static_cast<std::size_t>(o)];
      for (int i = 0; i < 3; ++i) z += in[r * 3 + i] * k[static_cast<std::size_t>(i * 2 + o)];
      EXPECT_NEAR(out.to_vector<float>()[r * 2 + o], std::log1p(std::exp(z)), 1e-5);
    }
  o.activation = "nope";
  EXPECT_THAT([&] { dense(x, 2, o); },
              ThrowsMessage<Error>(HasSubstr("dense: unknown activation 'nope'")));
}

}  // namespace
}  // namespace glia
