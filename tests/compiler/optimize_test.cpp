// Constant folding, common-subexpression elimination and the optimize pipeline as
// compile_graph and jit run it. Values are compared with the interpreted original or
// with hand-computed numbers.
#include <cmath>

#include "core/test_util.hpp"
#include "glia/autograd.hpp"
#include "glia/compiler.hpp"

namespace {

using glia::Expr;
using glia::Graph;
using glia::Op;
using glia::Tensor;
using glia::ValueId;
using glia::testing::count_ops;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::ThrowsMessage;

// Nodes equal to an earlier node (op, inputs in order, attributes): what CSE merges.
int duplicates(const Graph& g) {
  int n = 0;
  for (std::int64_t i = 0; i < g.size(); ++i) {
    const glia::Node& a = g.nodes()[static_cast<std::size_t>(i)];
    if (a.op == Op::parameter) continue;
    for (std::int64_t j = 0; j < i; ++j) {
      const glia::Node& b = g.nodes()[static_cast<std::size_t>(j)];
      if (a.op == b.op && a.inputs == b.inputs && glia::attrs_equal(a.attrs, b.attrs)) {
        ++n;
        break;
      }
    }
  }
  return n;
}

void expect_same_results(const Graph& before, const Graph& after,
                         const std::vector<Tensor>& inputs) {
  std::vector<Tensor> a = glia::interpret(before, inputs);
  std::vector<Tensor> b = glia::interpret(after, inputs);
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i)
    EXPECT_TRUE(glia::allclose(a[i], b[i], 1e-6, 1e-7))
        << "output " << i << ": " << a[i] << " vs " << b[i];
}

Graph traced(const std::function<Expr(const Expr&)>& fn, glia::TensorType type) {
  return glia::trace([&](const std::vector<Expr>& in) { return std::vector<Expr>{fn(in[0])}; },
                     {type});
}

}  // namespace

TEST(ConstantFolding, EvaluatesConstantSubgraphs) {
  Tensor c = glia::testing::f32s({1, 2, 3});
  Graph g = traced([&](const Expr& x) { return x + glia::exp(Expr(c)) * 2.0; }, {glia::f32, {3}});
  Graph s = glia::optimize(g);
  EXPECT_EQ(count_ops(s, Op::exp), 0);
  EXPECT_EQ(count_ops(s, Op::multiply), 0);
  EXPECT_EQ(count_ops(s, Op::add), 1);
  EXPECT_EQ(count_ops(s, Op::constant), 1);
  Tensor y = glia::interpret(s, std::vector{glia::testing::f32s({10, 20, 30})})[0];
  for (int i = 0; i < 3; ++i)
    EXPECT_NEAR(y.element(i), 10.0 * (i + 1) + 2 * std::exp(i + 1.0), 1e-4);
}

TEST(ConstantFolding, ReducesABroadcastConstant) {
  // sum over 10 x 10 twos, with x times it: one constant 200 remains.
  Graph g = traced(
      [](const Expr& x) {
        return x * glia::sum(glia::full({10, 10}, 2.0));
      },
      {glia::f32, {}});
  Graph s = glia::optimize(g);
  EXPECT_EQ(count_ops(s, Op::reduce_sum), 0);
  EXPECT_EQ(count_ops(s, Op::multiply), 1);
  EXPECT_EQ(glia::interpret(s, std::vector{Tensor::scalar(1.5)})[0].item<double>(), 300.0);
}

TEST(ConstantFolding, SplatsStaySplatsAtAnySize) {
  // exp of a broadcast zero over 2^20 elements: a broadcast one, not a 4 MB constant.
  Graph g = glia::trace(
      [](const std::vector<Expr>&) {
        return std::vector<Expr>{glia::exp(glia::zeros({1024, 1024})) + 1.0};
      },
      {});
  Graph s = glia::optimize(g);
  EXPECT_EQ(s.size(), 2) << glia::to_text(s);
  EXPECT_EQ(count_ops(s, Op::broadcast), 1);
  EXPECT_THAT(glia::to_text(s), HasSubstr("constant [value=[2]] : f32"));
  Tensor y = glia::interpret(s, {})[0];
  EXPECT_EQ(y.shape(), (glia::Shape{1024, 1024}));
  EXPECT_EQ(y.element(12345), 2.0);
}

TEST(ConstantFolding, LeavesLargeResultsRandomBitsAndFailingKernels) {
  Tensor big = Tensor::iota({300, 300}, {}, glia::f32);
  Graph g = glia::trace(
      [&](const std::vector<Expr>& in) {
        Expr bits = glia::random::bits(Expr(glia::random::key(7)), {4});
        Expr bad = glia::take(glia::testing::f32s({1, 2}), Expr(Tensor::from<std::int64_t>({5})));
        return std::vector<Expr>{glia::exp(Expr(big)), bits, bad + in[0]};
      },
      {{glia::f32, {1}}});
  Graph s = glia::optimize(g);
  EXPECT_EQ(count_ops(s, Op::exp), 1);  // 90,000 elements: more than the fold limit
  EXPECT_EQ(count_ops(s, Op::random_bits), 1);
  EXPECT_EQ(count_ops(s, Op::gather), 1);  // its error belongs to run time
  auto exe = glia::compile_graph(g, "interp");
  EXPECT_THROW(exe->run(std::vector{glia::testing::f32s({0})}), glia::Error);
}

TEST(Cse, MergesDuplicatedSubtrees) {
  Graph g("twice");
  ValueId x = g.add_parameter({glia::f32, {3}}, "x");
  ValueId y = g.add_parameter({glia::f32, {3}}, "y");
  ValueId e1 = g.add(Op::exp, {g.add(Op::add, {x, y})});
  ValueId e2 = g.add(Op::exp, {g.add(Op::add, {y, x})});  // commuted
  ValueId d1 = g.add(Op::subtract, {x, y});
  ValueId d2 = g.add(Op::subtract, {y, x});  // not the same value
  g.set_outputs({g.add(Op::multiply, {e1, e2}), g.add(Op::multiply, {d1, d2})});
  Graph s = glia::prune(glia::eliminate_common_subexpressions(g));
  glia::verify(s);
  EXPECT_EQ(count_ops(s, Op::add), 1);
  EXPECT_EQ(count_ops(s, Op::exp), 1);
  EXPECT_EQ(count_ops(s, Op::subtract), 2);
  EXPECT_EQ(s.parameters().size(), 2u);
  expect_same_results(g, s, {glia::testing::f32s({1, 2, 3}), glia::testing::f32s({0.5, -1, 2})});
}

TEST(Cse, ComparesConstantsByValueAndNeverMergesParameters) {
  Graph g("constants");
  ValueId a = g.add_parameter({glia::f32, {2}}, "a");
  ValueId b = g.add_parameter({glia::f32, {2}}, "b");
  auto constant = [&](std::vector<float> v) {
    return g.add(Op::constant, {}, glia::ConstantAttrs{Tensor::from<float>(v)});
  };
  ValueId c1 = constant({1, 2});
  ValueId c2 = constant({1, 2});
  ValueId c3 = constant({2, 1});
  g.set_outputs({g.add(Op::add, {a, c1}), g.add(Op::add, {a, c2}), g.add(Op::add, {a, c3}),
                 g.add(Op::add, {b, c1})});
  Graph s = glia::prune(glia::eliminate_common_subexpressions(g));
  EXPECT_EQ(count_ops(s, Op::constant), 2);
  EXPECT_EQ(count_ops(s, Op::add), 3);
  EXPECT_EQ(count_ops(s, Op::parameter), 2);
  EXPECT_EQ(s.outputs()[0], s.outputs()[1]);
  expect_same_results(g, s, {glia::testing::f32s({1, 1}), glia::testing::f32s({3, 4})});
}

TEST(Cse, MergesTheDuplicatesOfASoftmaxGradient) {
  glia::TensorType t{glia::f32, {2, 3}};
  Graph g = glia::trace(
      [](const std::vector<Expr>& in) {
        const Expr& y = in[1];
        return std::vector{
            glia::grad([&y](const Expr& x) { return glia::sum(glia::softmax(x) * y); })(in[0])};
      },
      {t, t}, "softmax_grad", {"x", "y"});
  g = glia::prune(g);
  ASSERT_GT(duplicates(g), 0) << glia::to_text(g);
  Graph s = glia::prune(glia::eliminate_common_subexpressions(g));
  glia::verify(s);
  EXPECT_EQ(duplicates(s), 0) << glia::to_text(s);
  EXPECT_LT(count_ops(s, Op::broadcast), count_ops(g, Op::broadcast));
  Tensor x = glia::testing::f32s({0.5, -1, 2, 0, 1, -3}, {2, 3});
  Tensor y = glia::testing::f32s({1, 2, 3, -1, 0, 1}, {2, 3});
  expect_same_results(g, s, {x, y});
  Graph o = glia::optimize(g);
  EXPECT_LE(o.size(), s.size());
  expect_same_results(g, o, {x, y});
}

TEST(Optimize, OutputsThatAreParametersOrConstantsStillWork) {
  Graph g("outputs");
  ValueId x = g.add_parameter({glia::f32, {2}}, "x");
  ValueId zero = g.add(Op::constant, {}, glia::ConstantAttrs{Tensor::scalar(0)});
  ValueId zeros = g.add(Op::broadcast, {zero}, glia::BroadcastAttrs{{2}, {}});
  ValueId c = g.add(Op::constant, {}, glia::ConstantAttrs{glia::testing::f32s({4, 5})});
  g.set_outputs({x, g.add(Op::add, {x, zeros}), c, g.add(Op::neg, {g.add(Op::neg, {c})}), x});
  Graph s = glia::optimize(g);
  EXPECT_EQ(s.outputs()[0], s.outputs()[1]);
  EXPECT_EQ(s.outputs()[2], s.outputs()[3]);
  auto exe = glia::compile_graph(g, "interp");
  std::vector<Tensor> out = exe->run(std::vector{glia::testing::f32s({1, 2})});
  ASSERT_EQ(out.size(), 5u);
  for (int i : {0, 1, 4}) EXPECT_EQ(glia::testing::values(out[i]), (glia::testing::V{1, 2}));
  for (int i : {2, 3}) EXPECT_EQ(glia::testing::values(out[i]), (glia::testing::V{4, 5}));
}

TEST(Optimize, CompileGraphRunsItUnlessTurnedOff) {
  Graph g =
      traced([](const Expr& x) { return glia::exp(glia::stop_grad(x)) * 1.0; }, {glia::f32, {3}});
  ASSERT_EQ(count_ops(g, Op::stop_gradient), 1);
  auto optimized = glia::compile_graph(g, "interp");
  EXPECT_THAT(optimized->describe(), Not(HasSubstr("stop_gradient")));
  EXPECT_THAT(optimized->describe(), Not(HasSubstr("multiply")));
  glia::CompileOptions plain;
  plain.optimize = false;
  auto unoptimized = glia::compile_graph(g, "interp", plain);
  EXPECT_THAT(unoptimized->describe(), HasSubstr("stop_gradient"));
  EXPECT_THAT(unoptimized->describe(), HasSubstr("multiply"));
  Tensor x = glia::testing::f32s({0, 1, -1});
  EXPECT_TRUE(glia::equal(optimized->run(std::vector{x})[0], unoptimized->run(std::vector{x})[0]));
}

TEST(Optimize, JitCompilesTheOptimizedGraph) {
  auto f = glia::jit([](const Expr& x) {
    return -(-glia::reshape(glia::reshape(x, {6}), {2, 3}));
  });
  Tensor x = glia::testing::f32s({1, 2, 3, 4, 5, 6}, {2, 3});
  EXPECT_TRUE(glia::equal(f(x), x));
  std::string described = f.compiled(x)->executable->describe();
  EXPECT_THAT(described, Not(HasSubstr("neg")));
  EXPECT_THAT(described, Not(HasSubstr("reshape")));
  EXPECT_THAT(f.graph_text(x), HasSubstr("neg"));  // the traced graph is kept as traced
}

TEST(Optimize, VerifyNamesThePassThatBrokeTheGraph) {
  // A graph whose node type is wrong: verify fails before any pass runs.
  Graph g("broken");
  ValueId x = g.add_parameter({glia::f32, {2}}, "x");
  glia::Node bad{Op::exp, {x}, glia::NoAttrs{}, {glia::f32, {3}}};
  g.set_outputs({g.append(bad)});
  EXPECT_THAT([&] { glia::optimize(g); }, ThrowsMessage<glia::Error>(HasSubstr("after prune")));
}
