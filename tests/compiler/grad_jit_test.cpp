// grad and value_and_grad through jit: gradients of tensors and parameter maps compiled
// once per signature, a jitted training step that converges, a jitted function
// differentiated inside another, and second derivatives. Expected values are closed forms.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "glia/autograd.hpp"
#include "glia/compiler.hpp"

namespace {

using glia::Expr;
using glia::Tensor;
using ::testing::HasSubstr;
using Params = std::map<std::string, Expr>;
using TensorParams = std::map<std::string, Tensor>;

Tensor vec(std::vector<double> v) { return Tensor::from<double>(v); }

void expect_values(const Tensor& t, const std::vector<double>& want, double tol = 1e-9) {
  ASSERT_EQ(t.numel(), static_cast<std::int64_t>(want.size())) << t.type();
  for (std::size_t i = 0; i < want.size(); ++i)
    EXPECT_NEAR(t.element(static_cast<std::int64_t>(i)), want[i], tol * (1 + std::abs(want[i])))
        << "element " << i;
}

}  // namespace

TEST(GradJit, GradientOfATensorIsCompiledOnce) {
  auto df = glia::jit(glia::grad([](const Expr& x) { return glia::sum(x * x * x); }));
  Tensor x = vec({1, -2, 0.5});
  expect_values(df(x), {3, 12, 0.75});
  expect_values(df(vec({2, 0, -1})), {12, 0, 3});
  EXPECT_EQ(df.cache_stats().misses, 1);
  EXPECT_EQ(df.cache_stats().hits, 1);
  EXPECT_THAT(df.graph_text(x), HasSubstr("multiply"));
}

TEST(GradJit, ParameterMapInParameterMapOut) {
  auto loss = [](const Params& p, const Expr& x) {
    return glia::sum(glia::square(glia::dot(x, p.at("w")) + p.at("b")));
  };
  auto vg = glia::jit([loss](const Params& p, const Expr& x) {
    auto [value, g] = glia::value_and_grad(loss)(p, x);
    return std::tuple{value, g};
  });
  // x [2,2] . w [2] + b: residuals r = x w + b; loss = sum(r^2); dw = 2 x^T r; db = 2 sum(r).
  TensorParams p{{"w", vec({1, -1})}, {"b", vec({0.5})}};
  Tensor x = Tensor::from<double>({1, 2, 3, 5}, glia::Shape{2, 2});
  auto [value, g] = vg(p, x);
  double r0 = 1 - 2 + 0.5, r1 = 3 - 5 + 0.5;
  expect_values(value, {r0 * r0 + r1 * r1});
  ASSERT_EQ(g.size(), 2u);
  expect_values(g.at("w"), {2 * (1 * r0 + 3 * r1), 2 * (2 * r0 + 5 * r1)});
  expect_values(g.at("b"), {2 * (r0 + r1)});
  EXPECT_THAT(vg.signatures(), ::testing::Contains(R"(({"b": f64[1], "w": f64[2]}, f64[2][2]))"));
}

TEST(GradJit, TrainingStepConverges) {
  // Least squares fit of y = 2 t + 1 by gradient descent, one jitted step per iteration.
  auto step = glia::jit([](const Params& p, const Expr& t, const Expr& y) {
    auto loss = [&](const Params& q) {
      return glia::mean(glia::square(q.at("a") * t + q.at("c") - y));
    };
    auto [value, g] = glia::value_and_grad(loss)(p);
    Params next;
    for (const auto& [name, e] : p) next.emplace(name, e - 0.1 * g.at(name));
    return std::tuple{value, next};
  });
  Tensor t = vec({0, 1, 2, 3}), y = vec({1, 3, 5, 7});
  TensorParams p{{"a", vec({0})}, {"c", vec({0})}};
  double previous = INFINITY;
  for (int i = 0; i < 400; ++i) {
    auto [value, next] = step(p, t, y);
    double v = value.item<double>();
    EXPECT_LE(v, previous) << "step " << i;
    previous = v;
    p = next;
  }
  expect_values(p.at("a"), {2}, 1e-6);
  expect_values(p.at("c"), {1}, 1e-6);
  EXPECT_EQ(step.cache_stats().misses, 1);
  EXPECT_EQ(step.cache_stats().hits, 399);
}

TEST(GradJit, JittedFunctionDifferentiatedInsideAnother) {
  // Called with Exprs, a jitted function inlines into the trace, so grad sees its ops.
  auto f = glia::jit([](const Expr& x) { return glia::sum(glia::sin(x) * x); });
  auto df = glia::jit([f](const Expr& x) { return glia::grad(f)(x); });
  Tensor x = vec({0.5, -1, 2});
  Tensor got = df(x);
  std::vector<double> want;
  for (double v : {0.5, -1.0, 2.0}) want.push_back(std::cos(v) * v + std::sin(v));
  expect_values(got, want);
  expect_values(f(x), {std::sin(0.5) * 0.5 + std::sin(-1.0) * -1 + std::sin(2.0) * 2});
}

TEST(GradJit, SecondDerivative) {
  auto d2 = glia::jit([](const Expr& x) {
    auto first = [](const Expr& v) {
      return glia::sum(glia::grad([](const Expr& u) { return glia::sum(glia::tanh(u)); })(v));
    };
    return glia::grad(first)(x);
  });
  Tensor x = vec({-1, 0.25, 1.5});
  std::vector<double> want;
  for (double v : {-1.0, 0.25, 1.5}) {
    double t = std::tanh(v);
    want.push_back(-2 * t * (1 - t * t));
  }
  expect_values(d2(x), want);
}

TEST(GradJit, ErrorsSurfaceWhenTracing) {
  auto bad = glia::jit(glia::grad([](const Expr& x) { return x * 2.0; }));
  EXPECT_THAT(
      [&] {
        bad(vec({1, 2}));
      },
      ::testing::ThrowsMessage<glia::Error>(
          HasSubstr("grad: the output must be a scalar, got f64[2]")));
}
