// Reverse mode through loops beyond the per-op gradient check: second derivatives (the
// reverse loop differentiated again), a gradient graph whose size does not depend on the
// sequence length, and a loop of zero steps.
#include "autograd/gradcheck.hpp"
#include "glia/core/scan.hpp"

namespace glia::testing {
namespace {

using Vs = std::vector<Expr>;

// h' = tanh(h . w + x); outputs h'; in: h0, xs, w.
ScanResult rnn(const Vs& in) {
  return scan(
      [](const Vs& h, const Vs& x, const Vs& w) {
        return ScanResult{{tanh(dot(h[0], w[0]) + x[0])}, {h[0]}};
      },
      {in[0]}, {in[1]}, {in[2]});
}

Expr loss(const Vs& in) {
  ScanResult r = rnn(in);
  return sum(r.outputs[0] * r.outputs[0]) + sum(r.carries[0]);
}

TEST(ScanGradients, SecondOrderMatchesDifferencesOfTheFirst) {
  Tensor v = random_tensor({3, 3}, -1, 1, 61);
  expect_gradients_match(
      [v](const Vs& in) {
        Expr dw = gradients(loss(in), {in[2]})[0];
        return sum(dw * Expr(v));
      },
      {random_tensor({2, 3}, -1, 1, 62), random_tensor({4, 2, 3}, -1, 1, 63),
       random_tensor({3, 3}, -0.7, 0.7, 64)},
      {.eps = 1e-6, .tolerance = 1e-5});
}

TEST(ScanGradients, GradientGraphSizeDoesNotGrowWithTheLength) {
  auto size_for = [](std::int64_t length) {
    Graph g = trace(
        [](const Vs& in) {
          return gradients(loss(in), {in[0], in[1], in[2]});
        },
        {{DType::f64, {2, 3}}, {DType::f64, {length, 2, 3}}, {DType::f64, {3, 3}}});
    return g.size();
  };
  EXPECT_EQ(size_for(3), size_for(300));
}

TEST(ScanGradients, ZeroStepsPassTheFinalCarrysCotangentToTheInitialCarry) {
  Tensor h0 = random_tensor({2, 3}, -1, 1, 65);
  std::vector<Tensor> g =
      analytic_gradients([](const Vs& in) { return sum(rnn(in).carries[0] * 3.0); },
                         {h0, Tensor(DType::f64, Shape{0, 2, 3}), random_tensor({3, 3}, -1, 1, 66)},
                         {true, true, true});
  EXPECT_EQ(g[0].to_vector<double>(), std::vector<double>(6, 3.0));
  EXPECT_EQ(g[1].shape(), (Shape{0, 2, 3}));
  EXPECT_EQ(g[2].to_vector<double>(), std::vector<double>(9, 0.0));
}

// The recurrent kernel's gradient, a product h[t]^T . dz[t] each step, is one product over
// the stacked steps after the reverse loop, which then carries the hidden state's cotangent
// alone; a bias, whose per-step gradient is a sum, stays a carried sum. Values: the gradient
// checks (op_gradcheck_control_test.cpp, and second order above).
TEST(ScanGradients, AProductGradientIsSummedByOneProductAfterTheLoop) {
  Graph g = trace(
      [](const Vs& in) {
        ScanResult r = scan(
            [](const Vs& h, const Vs& x, const Vs& p) {
              return ScanResult{{tanh(dot(h[0], p[0]) + x[0] + p[1])}, {}};
            },
            {in[0]}, {in[1]}, {in[2], in[3]});
        return gradients(sum(r.carries[0]), {in[2], in[3]});
      },
      {{DType::f64, {2, 3}}, {DType::f64, {5, 2, 3}}, {DType::f64, {3, 3}}, {DType::f64, {3}}});
  std::vector<const Node*> loops;
  for (const Node& n : g.nodes())
    if (n.op == Op::scan && std::get<ScanAttrs>(n.attrs).body->name().ends_with("_grad"))
      loops.push_back(&n);
  ASSERT_FALSE(loops.empty()) << to_text(g);
  EXPECT_EQ(std::get<ScanAttrs>(loops[0]->attrs).carries, 2) << to_text(g);  // dh, d bias
  const Node& dw = g.node(g.outputs()[0]);
  ASSERT_EQ(dw.op, Op::dot_general) << to_text(g);
  EXPECT_EQ(std::get<DotAttrs>(dw.attrs).lhs_contract, (Ints{0, 1}));
  EXPECT_EQ(g.type(dw.inputs[0]).shape, (Shape{5, 2, 3}));
  EXPECT_EQ(g.node(g.outputs()[1]).op, Op::scan);  // the bias: a carried sum
}

// h' = tanh(z + x) with z = h . w also a step output: reverse mode reads the stored z.
Expr loss_with_kept_product(const Vs& in) {
  ScanResult r = scan(
      [](const Vs& h, const Vs& x, const Vs& w) {
        Expr z = dot(h[0], w[0]);
        return ScanResult{{tanh(z + x[0])}, {z}};
      },
      {in[0]}, {in[1]}, {in[2]});
  return sum(r.carries[0] * r.carries[0]);
}

// The body without its annotations, as compiling sees it: the custom gradient that routes
// a stored value's cotangent into its recomputed value keeps that value alive in the
// traced graph (prune keeps what annotations read) and is dropped by the compiler.
Graph without_annotations(const Graph& g) {
  Graph out(g.name());
  for (const Node& n : g.nodes()) {
    if (n.op == Op::parameter) {
      const auto& p = std::get<ParameterAttrs>(n.attrs);
      out.add_parameter(p.type, p.name);
    } else {
      out.append(n);
    }
  }
  out.set_outputs(g.outputs());
  return out;
}

// The backward loop takes the stored product as a row: compiled (its annotations dropped,
// then pruned), its body multiplies once (the hidden state's cotangent), not twice; first
// and second order stay exact.
TEST(ScanGradients, StoredStepOutputsAreReadNotRecomputed) {
  Graph g = trace([](const Vs& in) { return gradients(loss_with_kept_product(in), {in[0]}); },
                  {{DType::f64, {2, 3}}, {DType::f64, {4, 2, 3}}, {DType::f64, {3, 3}}});
  const Graph* backward = nullptr;
  for (const Node& n : g.nodes())
    if (n.op == Op::scan && std::get<ScanAttrs>(n.attrs).body->name().ends_with("_grad"))
      backward = &*std::get<ScanAttrs>(n.attrs).body;
  ASSERT_NE(backward, nullptr) << to_text(g);
  // Named: a range-for over prune(...).nodes() would read a destroyed temporary.
  const Graph pruned = prune(without_annotations(*backward));
  int products = 0;
  for (const Node& n : pruned.nodes()) products += n.op == Op::dot_general;
  EXPECT_EQ(products, 1) << to_text(pruned);
  std::vector<Tensor> at{random_tensor({2, 3}, -1, 1, 71), random_tensor({4, 2, 3}, -1, 1, 72),
                         random_tensor({3, 3}, -0.7, 0.7, 73)};
  expect_gradients_match(loss_with_kept_product, at);
  Tensor v = random_tensor({3, 3}, -1, 1, 74);
  expect_gradients_match(
      [v](const Vs& in) {
        return sum(gradients(loss_with_kept_product(in), {in[2]})[0] * Expr(v));
      },
      at, {.eps = 1e-6, .tolerance = 1e-5});
}

// A custom gradient inside a loop's body holds in the reverse loop (which inlines the
// body): here 3x the true gradient, where dropping it would give zeros.
TEST(ScanGradients, CustomGradientsInTheBodyHold) {
  Tensor xs = random_tensor({5, 2}, -1, 1, 75);
  std::vector<Tensor> g = analytic_gradients(
      [](const Vs& in) {
        ScanResult r = scan(
            [](const Vs& c, const Vs& x, const Vs&) {
              Expr y = custom_grad(x[0] * 1.0, {x[0]}, [](const Expr& ct) { return Vs{ct * 3.0}; });
              return ScanResult{{c[0] + y}, {}};
            },
            {zeros({2}, DType::f64)}, {in[0]}, {});
        return sum(r.carries[0]);
      },
      {xs}, {true});
  EXPECT_EQ(g[0].to_vector<double>(), std::vector<double>(10, 3.0));
}

}  // namespace
}  // namespace glia::testing

namespace glia::testing {
namespace {

// Two loops of one structure over the same inputs, one with a custom gradient in its body:
// each keeps its own gradient (3 and 0), not merged into one loop.
TEST(ScanGradients, LoopsDifferingInACustomGradientStayApart) {
  auto loop = [](const Expr& xs, const Expr& init, bool custom) {
    return scan(
               [custom](const Vs& c, const Vs& x, const Vs&) {
                 Expr y = x[0] * 1.0;
                 if (custom)
                   y = custom_grad(y, {x[0]}, [](const Expr& ct) { return Vs{ct * 3.0}; });
                 else
                   y = stop_grad(y);  // the same nodes, without the annotation
                 return ScanResult{{c[0] + y}, {}};
               },
               {init}, {xs}, {})
        .carries[0];
  };
  std::vector<Tensor> g = analytic_gradients(
      [&](const Vs& in) {
        Expr init = zeros({2}, DType::f64);  // one node: the loops share every input
        return sum(loop(in[0], init, true)) + sum(loop(in[0], init, false)) * 10.0;
      },
      {random_tensor({4, 2}, -1, 1, 76)}, {true});
  EXPECT_EQ(g[0].to_vector<double>(), std::vector<double>(8, 3.0));
}

}  // namespace
}  // namespace glia::testing
