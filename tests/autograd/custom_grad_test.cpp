// stop_grad and custom_grad: the value is unchanged, the gradient is the one given
// (straight-through estimator, clipped gradient, a rule that reuses forward values),
// and a rule returning the wrong number or types of cotangents is a glia::Error.
#include <vector>

#include "autograd/grad_test_util.hpp"

namespace glia {
namespace {

using ::testing::AllOf;
using testing::expect_values;
using ::testing::HasSubstr;
using testing::map_values;
using testing::run;
using ::testing::ThrowsMessage;

Tensor vec(std::vector<double> v) { return Tensor::from<double>(v); }

TEST(StopGrad, ValueUnchangedGradientBlocked) {
  Tensor x = vec({1.5, -2});
  auto out = run(
      [](const std::vector<Expr>& in) {
        auto f = [](const Expr& x) { return sum(stop_grad(x) * x); };
        auto [value, g] = value_and_grad(f)(in[0]);
        return std::vector<Expr>{stop_grad(in[0]), value, g};
      },
      {x});
  expect_values(out[0], {1.5, -2});
  expect_values(out[1], {2.25 + 4});
  expect_values(out[2], {1.5, -2});  // x, not 2x
}

TEST(StopGrad, WholeFunctionStoppedGivesZeros) {
  Tensor x = vec({0.5, 1});
  auto out = run(
      [](const std::vector<Expr>& in) {
        return std::vector<Expr>{grad([](const Expr& x) { return sum(stop_grad(exp(x))); })(in[0])};
      },
      {x});
  expect_values(out[0], {0, 0});
}

TEST(CustomGrad, StraightThroughRound) {
  Tensor x = vec({0.4, 1.6, -2.5}), w = vec({2, -1, 3});
  auto out = run(
      [](const std::vector<Expr>& in) {
        const Expr& w = in[1];
        auto quantized = [&w](const Expr& x) {
          Expr q = custom_grad(round(x), {x}, [](const Expr& ct) { return std::vector{ct}; });
          return sum(q * w);
        };
        auto plain = [&w](const Expr& x) { return sum(round(x) * w); };
        auto [value, g] = value_and_grad(quantized)(in[0]);
        return std::vector<Expr>{value, g, grad(plain)(in[0])};
      },
      {x, w});
  expect_values(out[0], {0 * 2 + 2 * -1 + -3 * 3.0});  // round half away from zero
  expect_values(out[1], {2, -1, 3});                   // the identity's gradient
  expect_values(out[2], {0, 0, 0});                    // round's own gradient
}

TEST(CustomGrad, ClippedGradient) {
  Tensor x = vec({1, 2, 3, 4}), w = vec({3, -0.5, -4, 0.25});
  auto out = run(
      [](const std::vector<Expr>& in) {
        const Expr& w = in[1];
        auto f = [&w](const Expr& x) {
          Expr c = custom_grad(x, {x}, [](const Expr& ct) { return std::vector{clip(ct, -1, 1)}; });
          return sum(c * w);
        };
        auto [value, g] = value_and_grad(f)(in[0]);
        return std::vector<Expr>{value, g};
      },
      {x, w});
  expect_values(out[0], {3 - 1 - 12 + 1});
  expect_values(out[1], {1, -0.5, -1, 0.25});
}

TEST(CustomGrad, RuleUsesValuesOfTheForwardPass) {
  // softplus(x) = log(1 + e^x), whose derivative e^x / (1 + e^x) reuses e = e^x.
  Tensor x = vec({-2, 0, 3});
  auto out = run(
      [](const std::vector<Expr>& in) {
        auto f = [](const Expr& x) {
          Expr e = exp(x);
          Expr y = custom_grad(log1p(e), {x},
                               [e](const Expr& ct) { return std::vector{ct * e / (e + 1.0)}; });
          return sum(y);
        };
        auto [value, g] = value_and_grad(f)(in[0]);
        return std::vector<Expr>{value, g};
      },
      {x});
  double v = 0;
  for (double a : {-2.0, 0.0, 3.0}) v += std::log1p(std::exp(a));
  expect_values(out[0], {v});
  expect_values(out[1], map_values(x, [](double a) { return 1 / (1 + std::exp(-a)); }));
}

TEST(CustomGrad, SeveralInputsAndNoGradientForOne) {
  Tensor x = vec({2, 3}), y = vec({5, -1});
  auto out = run(
      [](const std::vector<Expr>& in) {
        auto f = [](const std::vector<Expr>& v) {
          const Expr &x = v[0], &y = v[1];
          // The product, differentiated only in x (an undefined Expr: nothing for y).
          Expr p = custom_grad(x * y, {x, y}, [y](const Expr& ct) {
            return std::vector{ct * y, Expr()};
          });
          return sum(p) + sum(y * 2.0);
        };
        return grad(f)(in);
      },
      {x, y});
  expect_values(out[0], {5, -1});
  expect_values(out[1], {2, 2});  // only the path outside the custom gradient
}

TEST(CustomGrad, IsDifferentiableAgain) {
  // A custom rule written with Expr ops is itself differentiated by a second grad:
  // x^2 with the rule 2x ct has second derivative 2.
  Tensor x = vec({1, -4});
  auto out = run(
      [](const std::vector<Expr>& in) {
        auto f = [](const Expr& x) {
          return sum(
              custom_grad(x * x, {x}, [x](const Expr& ct) { return std::vector{ct * x * 2.0}; }));
        };
        auto df = [&](const Expr& x) { return sum(grad(f)(x)); };
        return std::vector<Expr>{grad(f)(in[0]), grad(df)(in[0])};
      },
      {x});
  expect_values(out[0], {2, -8});
  expect_values(out[1], {2, 2});
}

void expect_grad_error(const std::vector<Tensor>& inputs, const CustomVjp& vjp,
                       const std::string& message) {
  auto fn = [&](const std::vector<Expr>& in) {
    auto f = [&](const Expr& x) { return sum(custom_grad(exp(x), {x}, vjp)); };
    return std::vector<Expr>{grad(f)(in[0])};
  };
  EXPECT_THAT([&] { run(fn, inputs); }, ThrowsMessage<Error>(HasSubstr(message)));
}

TEST(CustomGrad, WrongNumberOfCotangentsIsAnError) {
  Tensor x = vec({1, 2, 3});
  expect_grad_error(
      {x},
      [](const Expr& ct) {
        return std::vector{ct, ct};
      },
      "custom_grad: the vjp returned 2 cotangents for 1 inputs");
  expect_grad_error(
      {x}, [](const Expr&) { return std::vector<Expr>{}; },
      "custom_grad: the vjp returned 0 cotangents for 1 inputs");
}

TEST(CustomGrad, WrongCotangentTypeIsAnError) {
  Tensor x = vec({1, 2, 3});
  expect_grad_error(
      {x}, [](const Expr& ct) { return std::vector{sum(ct)}; },
      "custom_grad: cotangent 0 is f64, expected f64[3]");
  expect_grad_error(
      {x}, [](const Expr& ct) { return std::vector{cast(ct, DType::f32)}; },
      "custom_grad: cotangent 0 is f32[3], expected f64[3]");
  Graph other;
  Expr foreign;
  {
    TraceScope scope(other);
    foreign = parameter({DType::f64, {3}});
  }
  expect_grad_error(
      {x}, [&](const Expr&) { return std::vector{foreign}; },
      "custom_grad: cotangent 0 is a value of another trace");
}

TEST(CustomGrad, BadArgumentsAreErrors) {
  Tensor x = vec({1, 2});
  EXPECT_THAT(
      [&] {
        run(
            [](const std::vector<Expr>& in) {
              return std::vector{custom_grad(in[0], {in[0]}, {})};
            },
            {x});
      },
      ThrowsMessage<Error>(HasSubstr("custom_grad: the vjp function is empty")));
  EXPECT_THAT(
      [&] {
        run(
            [](const std::vector<Expr>& in) {
              return std::vector{custom_grad(in[0], {in[0], Expr()}, [](const Expr& ct) {
                return std::vector{ct, ct};
              })};
            },
            {x});
      },
      ThrowsMessage<Error>(HasSubstr("custom_grad: input 1 is not a value of the same trace")));
  Graph other;
  Expr foreign;
  {
    TraceScope scope(other);
    foreign = parameter({DType::f64, {2}});
  }
  EXPECT_THAT(
      [&] {
        run(
            [&](const std::vector<Expr>& in) {
              return std::vector{
                  custom_grad(in[0], {foreign}, [](const Expr& ct) { return std::vector{ct}; })};
            },
            {x});
      },
      ThrowsMessage<Error>(HasSubstr("custom_grad: input 0 is not a value of the same trace")));
  EXPECT_THAT([&] { custom_grad(Expr(), {}, [](const Expr&) { return std::vector<Expr>{}; }); },
              ThrowsMessage<Error>(HasSubstr("custom_grad: the value is an undefined Expr")));
  EXPECT_THAT([&] { stop_grad(Expr()); },
              ThrowsMessage<Error>(HasSubstr("stop_grad: the operand is an undefined Expr")));
}

}  // namespace
}  // namespace glia
