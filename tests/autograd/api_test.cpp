// grad / value_and_grad over traced functions: tensors and trees of them as the
// differentiated argument, the argument index, use inside other traced functions,
// and closure semantics (captured values are constants). Expected values are closed forms.
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "autograd/grad_test_util.hpp"

namespace glia {
namespace {

using testing::expect_values;
using testing::map_values;
using testing::run;
using Params = std::map<std::string, Expr>;

Tensor vec(std::vector<double> v) { return Tensor::from<double>(v); }

TEST(GradApi, TensorArgument) {
  Tensor x = vec({-1.5, 0.5, 2});
  auto out = run(
      [](const std::vector<Expr>& in) {
        auto vg = value_and_grad([](const Expr& a) { return sum(a * a * a); });
        auto [value, g] = vg(in[0]);
        return std::vector<Expr>{value, g};
      },
      {x});
  expect_values(out[0], {-3.375 + 0.125 + 8});
  EXPECT_EQ(out[1].type(), x.type());
  expect_values(out[1], {3 * 2.25, 3 * 0.25, 12});
}

TEST(GradApi, GradIsTheSecondPartOfValueAndGrad) {
  Tensor x = vec({0.3, -0.7});
  auto out = run(
      [](const std::vector<Expr>& in) {
        return std::vector<Expr>{grad([](const Expr& a) { return sum(exp(a)); })(in[0])};
      },
      {x});
  expect_values(out[0], {std::exp(0.3), std::exp(-0.7)});
}

TEST(GradApi, ParameterMapGivesAMapOfGradients) {
  Tensor w = vec({1, 2, 3}), b = vec({0.5, -1}), x = vec({4, 5, 6});
  std::string structure;
  auto out = run(
      [&](const std::vector<Expr>& in) {
        Params p{{"w", in[0]}, {"b", in[1]}};
        auto loss = [](const Params& q, const Expr& x) {
          return sum(q.at("w") * x) + sum(q.at("b") * q.at("b"));
        };
        Params g = grad(loss)(p, in[2]);
        structure = tree_structure(g);
        EXPECT_EQ(g.at("w").type(), in[0].type());
        EXPECT_EQ(g.at("b").type(), in[1].type());
        return std::vector<Expr>{g.at("w"), g.at("b")};
      },
      {w, b, x});
  EXPECT_EQ(structure, R"({"b":T,"w":T})");
  expect_values(out[0], {4, 5, 6});  // d/dw sum(w x) = x
  expect_values(out[1], {1, -2});    // d/db sum(b^2) = 2b
}

TEST(GradApi, VectorArgument) {
  Tensor a = vec({1, 2}), b = vec({3, -4}), c = vec({0, 1});
  auto out = run(
      [](const std::vector<Expr>& in) {
        auto f = [](const std::vector<Expr>& v) { return sum(v[0] * v[1]) + sum(exp(v[2])); };
        std::vector<Expr> g = grad(f)(in);
        EXPECT_EQ(g.size(), 3u);
        return g;
      },
      {a, b, c});
  expect_values(out[0], {3, -4});
  expect_values(out[1], {1, 2});
  expect_values(out[2], {1, std::exp(1.0)});
}

TEST(GradApi, TupleArgument) {
  Tensor a = vec({2}), b = vec({1, 3}), c = vec({-1, 0.5});
  auto out = run(
      [](const std::vector<Expr>& in) {
        using Arg = std::tuple<Expr, std::vector<Expr>>;
        auto f = [](const Arg& t) {
          const auto& [s, v] = t;
          return sum(s * v[0]) + sum(v[1] * v[1] * s);
        };
        Arg g = grad(f)(Arg{in[0], {in[1], in[2]}});
        const auto& [gs, gv] = g;
        return std::vector<Expr>{gs, gv[0], gv[1]};
      },
      {a, b, c});
  expect_values(out[0], {1 + 3 + 1 + 0.25});  // sum(v0) + sum(v1^2)
  expect_values(out[1], {2, 2});              // s
  expect_values(out[2], {-4, 2});             // 2 s v1
}

TEST(GradApi, NestedMapOfVectors) {
  Tensor w0 = vec({1, -1}), b0 = vec({0.5}), w1 = vec({2, 3});
  std::string structure;
  auto out = run(
      [&](const std::vector<Expr>& in) {
        using Tree = std::map<std::string, std::vector<Expr>>;
        Tree p{{"layer0", {in[0], in[1]}}, {"layer1", {in[2]}}};
        auto f = [](const Tree& q) {
          const auto &l0 = q.at("layer0"), &l1 = q.at("layer1");
          return sum(l0[0] * l1[0]) + sum(l0[1]) * sum(l1[0]);
        };
        Tree g = grad(f)(p);
        structure = tree_structure(g);
        return std::vector<Expr>{g.at("layer0")[0], g.at("layer0")[1], g.at("layer1")[0]};
      },
      {w0, b0, w1});
  EXPECT_EQ(structure, R"({"layer0":[T,T],"layer1":[T]})");
  expect_values(out[0], {2, 3});               // w1
  expect_values(out[1], {5});                  // sum(w1)
  expect_values(out[2], {1 + 0.5, -1 + 0.5});  // w0 + sum(b0)
}

TEST(GradApi, ArgumentIndexChoosesWhatIsDifferentiated) {
  Tensor x = vec({1, 2}), y = vec({3, 5});
  auto out = run(
      [](const std::vector<Expr>& in) {
        auto f = [](const Params& p, const Expr& y) { return sum(p.at("x") * p.at("x") * y); };
        Params p{{"x", in[0]}};
        Params gx = grad<0>(f)(p, in[1]);
        Expr gy = grad<1>(f)(p, in[1]);
        auto [value, gy2] = value_and_grad<1>(f)(p, in[1]);
        return std::vector<Expr>{gx.at("x"), gy, value, gy2};
      },
      {x, y});
  expect_values(out[0], {6, 20});  // 2 x y
  expect_values(out[1], {1, 4});   // x^2
  expect_values(out[2], {3 + 20});
  expect_values(out[3], {1, 4});
}

TEST(GradApi, UsableInsideAnotherTracedFunction) {
  // One gradient-descent step on f(w) = sum((w - t)^2), composed in the same trace.
  Tensor w = vec({1, 2, 3}), t = vec({0, 0, 1});
  auto step = [](const Expr& w, const Expr& t) {
    auto loss = [&t](const Expr& v) { return sum(square(v - t)); };
    return w - 0.25 * grad(loss)(w);
  };
  auto out = run(
      [&](const std::vector<Expr>& in) {
        Expr w1 = step(in[0], in[1]);
        Expr w2 = step(w1, in[1]);  // the result of a gradient feeds another
        return std::vector<Expr>{w1, w2, sum(w2)};
      },
      {w, t});
  // w - 0.25 * 2 (w - t) = (w + t) / 2
  expect_values(out[0], {0.5, 1, 2});
  expect_values(out[1], {0.25, 0.5, 1.5});
  expect_values(out[2], {2.25});
}

TEST(GradApi, CapturedValuesAreConstants) {
  Tensor x = vec({2, -3}), y = vec({5, 7});
  auto out = run(
      [](const std::vector<Expr>& in) {
        const Expr &x = in[0], &y = in[1];
        // f captures x itself: only the path through the argument counts, so the
        // gradient at a = x is x + y, not 2x + y.
        auto f = [&](const Expr& a) { return sum(a * y + a * x); };
        // The captured value also gets no gradient through a value that uses it.
        Expr xx = exp(x);
        auto h = [&](const Expr& a) { return sum(a * xx); };
        return std::vector<Expr>{grad(f)(x), grad(h)(x)};
      },
      {x, y});
  expect_values(out[0], {7, 4});
  expect_values(out[1], {std::exp(2.0), std::exp(-3.0)});
}

TEST(GradApi, NestedGradSeesTheOuterVariableThroughItsClosure) {
  // inner(x) = d/dy sum(x y^2) at y = x = 2 x^2, with x a constant of the inner grad but
  // a variable of the outer one: d/dx sum(x * inner(x)) = d/dx sum(2 x^3) = 6 x^2.
  // Treating the captured x as a constant of the outer grad too would give 2 x^2.
  Tensor x = vec({3, -2});
  auto out = run(
      [](const std::vector<Expr>& in) {
        auto outer = [](const Expr& x) {
          Expr inner = grad([&x](const Expr& y) { return sum(x * y * y); })(x);
          return sum(x * inner);
        };
        return std::vector<Expr>{grad(outer)(in[0])};
      },
      {x});
  expect_values(out[0], {54, 24});
}

TEST(GradApi, GradientAccumulatesOverUses) {
  Tensor x = vec({0.5, -1, 2});
  auto out = run(
      [](const std::vector<Expr>& in) {
        auto squared = [](const Expr& x) { return sum(x * x); };
        auto three = [](const Expr& x) { return sum(sin(x) + x * 3.0 + exp(x)); };
        auto diamond = [](const Expr& x) {
          Expr y = exp(x);
          return sum(y * y + y);
        };
        return std::vector<Expr>{grad(squared)(in[0]), grad(three)(in[0]), grad(diamond)(in[0])};
      },
      {x});
  expect_values(out[0], map_values(x, [](double v) { return 2 * v; }));
  expect_values(out[1], map_values(x, [](double v) { return std::cos(v) + 3 + std::exp(v); }));
  expect_values(out[2], map_values(x, [](double v) {
                  double y = std::exp(v);
                  return (2 * y + 1) * y;
                }));
}

TEST(GradApi, IgnoredInputGetsZerosAndItsComputationIsPruned) {
  Tensor x = vec({1, 2}), y = vec({3, 4, 5});
  auto fn = [](const std::vector<Expr>& in) {
    auto f = [](const Params& p) {
      Expr unused = exp(p.at("y"));  // never reaches the result
      (void)unused;
      return sum(p.at("x") * 3.0);
    };
    Params g = grad(f)(Params{{"x", in[0]}, {"y", in[1]}});
    return std::vector<Expr>{g.at("x"), g.at("y")};
  };
  auto out = run(fn, {x, y});
  expect_values(out[0], {3, 3});
  EXPECT_EQ(out[1].type(), y.type());
  expect_values(out[1], {0, 0, 0});
  Graph g = testing::traced(fn, {x, y});
  EXPECT_FALSE(testing::has_op(g, Op::exp)) << to_text(g);
  EXPECT_EQ(to_text(g).find(" exp "), std::string::npos);
}

TEST(GradApi, OnlyPathsToTheRequestedInputsAreDifferentiated) {
  // y's branch feeds the output but is not differentiated: its custom rule is never
  // called, and no exp survives in the gradient graph.
  Tensor x = vec({1, 2}), y = vec({0.5});
  int calls = 0;
  auto fn = [&](const std::vector<Expr>& in) {
    auto f = [&](const Expr& x, const Expr& y) {
      Expr e = custom_grad(exp(y), {y}, [&](const Expr& ct) {
        ++calls;
        return std::vector<Expr>{ct};
      });
      return sum(x * x) + sum(e);
    };
    return std::vector<Expr>{grad<0>(f)(in[0], in[1])};
  };
  Graph g = testing::traced(fn, {x, y});
  EXPECT_EQ(calls, 0);
  EXPECT_FALSE(testing::has_op(g, Op::exp)) << to_text(g);
  expect_values(interpret(g, std::vector{x, y})[0], {2, 4});
}

TEST(GradApi, ScalarIdentityAndInputsMadeAfterTheOutput) {
  Tensor x = Tensor::scalar(2.5, DType::f64);
  auto out = run(
      [](const std::vector<Expr>& in) {
        Expr one = grad([](const Expr& a) { return a; })(in[0]);
        Expr y = in[0] * in[0];
        Expr later = exp(in[0]);  // made after y: y cannot depend on it
        std::vector<Expr> g = gradients(y, {later, in[0]});
        return std::vector<Expr>{one, g[0], g[1]};
      },
      {x});
  expect_values(out[0], {1});
  expect_values(out[1], {0});
  expect_values(out[2], {5});
}

TEST(GradApi, EmptyTreeGivesAnEmptyTree) {
  Tensor x = vec({1});
  auto out = run(
      [](const std::vector<Expr>& in) {
        auto f = [](const Params&, const Expr& x) { return sum(x); };
        Params g = grad<0>(f)(Params{}, in[0]);
        EXPECT_TRUE(g.empty());
        return std::vector{grad<1>(f)(Params{}, in[0])};
      },
      {x});
  expect_values(out[0], {1});
}

TEST(GradApi, EveryFloatDtype) {
  for (DType dt : {DType::f16, DType::bf16, DType::f32, DType::f64}) {
    SCOPED_TRACE(dtype_name(dt));
    Tensor x = Tensor::from<double>({0.5, -1.5, 2}).cast(dt);
    auto out = run(
        [](const std::vector<Expr>& in) {
          auto [value, g] = value_and_grad([](const Expr& a) { return sum(a * a * 3.0); })(in[0]);
          return std::vector<Expr>{value, g};
        },
        {x});
    EXPECT_EQ(out[0].type(), (TensorType{dt, {}}));
    EXPECT_EQ(out[1].type(), x.type());
    expect_values(out[0], {3 * (0.25 + 2.25 + 4)}, 1e-2);
    expect_values(out[1], {3, -9, 12}, 1e-2);
  }
}

TEST(GradApi, MixedPrecision) {
  // An f32 argument computed on in f64: the gradient comes back as f32.
  Tensor x = Tensor::from<float>({1.5f, -0.5f});
  auto out = run(
      [](const std::vector<Expr>& in) {
        return std::vector{
            grad([](const Expr& a) { return sum(exp(cast(a, DType::f64))); })(in[0])};
      },
      {x});
  EXPECT_EQ(out[0].dtype(), DType::f32);
  expect_values(out[0], {std::exp(1.5), std::exp(-0.5)}, 1e-6);
}

}  // namespace
}  // namespace glia
