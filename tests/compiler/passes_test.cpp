// The IR passes: each rewrite of simplify on a small graph (the ops left, and the values
// unchanged against the interpreted original), constant folding, CSE, and optimize as
// compile_graph and jit run it.
#include <cmath>
#include <limits>

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

// Nodes other than parameters: what the passes can remove.
int computed(const Graph& g) {
  return static_cast<int>(g.size() - static_cast<std::int64_t>(g.parameters().size()));
}

Graph simplified(const Graph& g) {
  Graph out = glia::prune(glia::simplify(g));
  glia::verify(out);
  return out;
}

// The same outputs, bit for bit, from the interpreter on both graphs.
void expect_same_results(const Graph& before, const Graph& after,
                         const std::vector<Tensor>& inputs) {
  std::vector<Tensor> a = glia::interpret(before, inputs);
  std::vector<Tensor> b = glia::interpret(after, inputs);
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i)
    EXPECT_TRUE(glia::equal(a[i], b[i])) << "output " << i << ": " << a[i] << " vs " << b[i];
}

Graph traced(const std::function<Expr(const Expr&)>& fn, glia::TensorType type) {
  return glia::trace([&](const std::vector<Expr>& in) { return std::vector<Expr>{fn(in[0])}; },
                     {type});
}

const Tensor kX = glia::testing::f32s({1, -2, 3, -4, 5, -6}, {2, 3});

}  // namespace

TEST(Simplify, IdentityLayoutOpsAndStopGradientAreRemoved) {
  Graph g("identities");
  ValueId x = g.add_parameter({glia::f32, {2, 3}}, "x");
  ValueId v = g.add(Op::reshape, {x}, glia::ReshapeAttrs{{2, 3}});
  v = g.add(Op::transpose, {v}, glia::TransposeAttrs{{0, 1}});
  v = g.add(Op::broadcast, {v}, glia::BroadcastAttrs{{2, 3}, {0, 1}});
  v = g.add(Op::cast, {v}, glia::CastAttrs{glia::f32});
  v = g.add(Op::slice, {v}, glia::SliceAttrs{{0, 0}, {2, 3}, {1, 1}});
  ValueId zero = g.add(Op::constant, {}, glia::ConstantAttrs{Tensor::scalar(7)});
  v = g.add(Op::pad, {v, zero}, glia::PadAttrs{{0, 0}, {0, 0}, {0, 0}});
  v = g.add(Op::stop_gradient, {v});
  v = g.add(Op::reduce_sum, {v}, glia::ReduceAttrs{{}, false});
  v = g.add(Op::concatenate, {v}, glia::AxisAttrs{1});
  g.set_outputs({v});
  Graph s = simplified(g);
  EXPECT_EQ(computed(s), 0) << glia::to_text(s);
  EXPECT_EQ(s.outputs(), std::vector<ValueId>{s.parameters()[0]});
  expect_same_results(g, s, {kX});
}

TEST(Simplify, NonIdentityLayoutOpsStay) {
  Graph g("layouts");
  ValueId x = g.add_parameter({glia::f32, {2, 3}}, "x");
  ValueId seven = g.add(Op::constant, {}, glia::ConstantAttrs{Tensor::scalar(7)});
  g.set_outputs({
      g.add(Op::transpose, {x}, glia::TransposeAttrs{{1, 0}}),
      g.add(Op::slice, {x}, glia::SliceAttrs{{0, 1}, {2, 3}, {1, 1}}),
      g.add(Op::slice, {x}, glia::SliceAttrs{{0, 0}, {2, 3}, {1, 2}}),
      g.add(Op::pad, {x, seven}, glia::PadAttrs{{0, 1}, {0, -1}, {0, 0}}),  // same shape, shifted
      g.add(Op::reverse, {x}, glia::AxesAttrs{{1}}),
      g.add(Op::cast, {x}, glia::CastAttrs{glia::f64}),
      g.add(Op::reduce_sum, {x}, glia::ReduceAttrs{{1}, true}),
  });
  Graph s = simplified(g);
  EXPECT_EQ(computed(s), computed(g)) << glia::to_text(s);
  expect_same_results(g, s, {kX});
}

TEST(Simplify, ReverseOfSizeOneAxesIsRemoved) {
  Graph g("reverse");
  ValueId x = g.add_parameter({glia::f32, {1, 6, 1}}, "x");
  g.set_outputs({g.add(Op::reverse, {x}, glia::AxesAttrs{{0, 2}})});
  EXPECT_EQ(computed(simplified(g)), 0);
}

TEST(Simplify, AddingZeroAndMultiplyingByOneAreRemoved) {
  for (glia::DType dtype : {glia::f32, glia::i32, glia::f16}) {
    Graph g = traced(
        [](const Expr& x) {
          Expr y = glia::divide(glia::subtract(glia::multiply(glia::add(x, 0), 1), 0), 1);
          return glia::add(0, glia::multiply(1, y));
        },
        {dtype, {2, 3}});
    EXPECT_GE(computed(g), 6);  // each number is a constant broadcast to x's shape
    Graph s = simplified(g);
    EXPECT_EQ(computed(s), 0) << glia::to_text(s);
    expect_same_results(g, s, {kX.cast(dtype)});
  }
}

TEST(Simplify, KeepsArithmeticThatIsNotAnIdentity) {
  // x * 0 is NaN for inf and NaN; 0 - x, 1 / x and x + 1 are no identities either.
  Graph g = traced([](const Expr& x) { return ((x * 0.0 + (0.0 - x)) + 1.0 / x) + 1.0; },
                   {glia::f32, {3}});
  Graph s = simplified(g);
  EXPECT_EQ(count_ops(s, Op::multiply), 1);
  EXPECT_EQ(count_ops(s, Op::subtract), 1);
  EXPECT_EQ(count_ops(s, Op::divide), 1);
  EXPECT_EQ(count_ops(s, Op::add), 3);
  double inf = std::numeric_limits<double>::infinity();
  Tensor x = glia::testing::f32s({inf, std::nan(""), 2});
  Tensor y = glia::interpret(s, std::vector{x})[0];
  EXPECT_TRUE(std::isnan(y.element(0)));  // inf * 0 = NaN
  EXPECT_TRUE(std::isnan(y.element(1)));
  EXPECT_FLOAT_EQ(y.element(2), 0 - 2 + 0.5 + 1);
}

TEST(Simplify, MultiplyByZeroKeepsNaNThroughCompileGraph) {
  Graph g = traced([](const Expr& x) { return x * 0.0; }, {glia::f32, {3}});
  auto exe = glia::compile_graph(g, "interp");
  EXPECT_THAT(exe->describe(), HasSubstr("multiply"));
  double inf = std::numeric_limits<double>::infinity();
  Tensor y = exe->run(std::vector{glia::testing::f32s({inf, std::nan(""), -3})})[0];
  EXPECT_TRUE(std::isnan(y.element(0)));
  EXPECT_TRUE(std::isnan(y.element(1)));
  EXPECT_EQ(y.element(2), 0.0);
}

TEST(Simplify, DoubleNegationCancels) {
  Graph g2 = traced([](const Expr& x) { return -(-x); }, {glia::f32, {2, 3}});
  EXPECT_EQ(computed(simplified(g2)), 0);
  Graph g3 = traced([](const Expr& x) { return -(-(-x)); }, {glia::f32, {2, 3}});
  Graph s3 = simplified(g3);
  EXPECT_EQ(computed(s3), 1);
  EXPECT_EQ(count_ops(s3, Op::neg), 1);
  expect_same_results(g3, s3, {kX});
}

TEST(Simplify, ReshapeChainsBecomeOneReshape) {
  Graph g = traced(
      [](const Expr& x) {
        return glia::reshape(glia::reshape(x, {6}), {3, 2});
      },
      {glia::f32, {2, 3}});
  Graph s = simplified(g);
  EXPECT_EQ(computed(s), 1);
  EXPECT_THAT(glia::to_text(s), HasSubstr("reshape %0 [shape=[3, 2]] : f32[3][2]"));
  expect_same_results(g, s, {kX});
  // Back to the original shape: nothing is left.
  Graph back = traced(
      [](const Expr& x) {
        return glia::reshape(glia::reshape(x, {3, 1, 2}), {2, 3});
      },
      {glia::f32, {2, 3}});
  EXPECT_EQ(computed(simplified(back)), 0);
}

TEST(Simplify, TransposeChainsComposeTheirPermutations) {
  Tensor x = glia::testing::counting({2, 3, 4});
  // Axes (a, b, c) -> (b, a, c) -> (b, c, a): one transpose with perm [1, 2, 0].
  Graph g = traced(
      [](const Expr& e) {
        return glia::transpose(glia::transpose(e, {1, 0, 2}), {0, 2, 1});
      },
      x.type());
  Graph s = simplified(g);
  EXPECT_EQ(computed(s), 1);
  EXPECT_THAT(glia::to_text(s), HasSubstr("transpose %0 [perm=[1, 2, 0]] : f32[3][4][2]"));
  expect_same_results(g, s, {x});
  // A permutation followed by its inverse: nothing is left.
  Graph inverse = traced(
      [](const Expr& e) {
        return glia::transpose(glia::transpose(e, {1, 2, 0}), {2, 0, 1});
      },
      x.type());
  EXPECT_EQ(computed(simplified(inverse)), 0);
}

TEST(Simplify, BroadcastChainsBecomeOneBroadcast) {
  Graph g("broadcasts");
  ValueId x = g.add_parameter({glia::f32, {3}}, "x");
  ValueId b = g.add(Op::broadcast, {x}, glia::BroadcastAttrs{{2, 3}, {1}});
  g.set_outputs({g.add(Op::broadcast, {b}, glia::BroadcastAttrs{{4, 2, 3}, {1, 2}})});
  Graph s = simplified(g);
  EXPECT_EQ(computed(s), 1);
  EXPECT_THAT(glia::to_text(s), HasSubstr("broadcast %0 [shape=[4, 2, 3], dims=[2]]"));
  expect_same_results(g, s, {glia::testing::f32s({1, 2, 3})});
}

TEST(Simplify, SelectOnAConstantPredicatePicksABranch) {
  Graph g("select");
  ValueId a = g.add_parameter({glia::f32, {3}}, "a");
  ValueId b = g.add_parameter({glia::f32, {3}}, "b");
  ValueId yes = g.add(Op::constant, {}, glia::ConstantAttrs{Tensor::scalar(1, glia::boolean)});
  ValueId all = g.add(Op::broadcast, {yes}, glia::BroadcastAttrs{{3}, {}});
  ValueId no = g.add(Op::not_, {all});
  g.set_outputs({g.add(Op::select, {all, a, b}), g.add(Op::select, {no, a, b})});
  Graph s = simplified(g);
  EXPECT_EQ(count_ops(s, Op::select), 0);
  EXPECT_EQ(s.outputs(), (std::vector<ValueId>{s.parameters()[0], s.parameters()[1]}));
}

TEST(Simplify, AReductionReshapedToKeepItsAxesKeepsThem) {
  // What autograd writes: reduce without keep_axes, then reshape to [2][1].
  Tensor x = glia::testing::counting({2, 3});
  Graph g = traced(
      [](const Expr& e) {
        return glia::reshape(glia::sum(e, {1}), {2, 1});
      },
      x.type());
  Graph s = simplified(g);
  EXPECT_EQ(computed(s), 1) << glia::to_text(s);
  EXPECT_THAT(glia::to_text(s), HasSubstr("reduce_sum %0 [axes=[1], keep_axes=true] : f32[2][1]"));
  EXPECT_EQ(glia::testing::values(glia::interpret(s, std::vector{x})[0]),
            (glia::testing::V{0 + 1 + 2, 3 + 4 + 5}));
  Graph arg = traced(
      [](const Expr& e) {
        return glia::reshape(glia::argmax(e, 1), {2, 1});
      },
      x.type());
  EXPECT_THAT(glia::to_text(simplified(arg)), HasSubstr("keep_axes=true] : i64[2][1]"));
  // Used elsewhere too: one reduction without keep_axes is cheaper than two.
  Graph shared = glia::trace(
      [](const std::vector<Expr>& in) {
        Expr s = glia::sum(in[0], {1});
        return std::vector<Expr>{glia::reshape(s, {2, 1}), s};
      },
      {x.type()});
  Graph kept = simplified(shared);
  EXPECT_EQ(count_ops(kept, Op::reduce_sum), 1);
  EXPECT_EQ(count_ops(kept, Op::reshape), 1);
  expect_same_results(shared, kept, {x});
}

// A reduction over axes of extent 1 reduces each element alone: with keep_axes it is the
// operand itself, without it a reshape; softmax over such an axis keeps no reduction. An
// axis of more elements keeps its reduction.
TEST(Simplify, ReductionsOverSingleElementsAreReshapes) {
  const Tensor x =
      glia::testing::f32s({1.5f, -2, std::numeric_limits<float>::quiet_NaN(), 4}, {2, 1, 2, 1});
  Graph g("unit_reductions");
  ValueId p = g.add_parameter(x.type(), "x");
  g.set_outputs({
      g.add(Op::reduce_sum, {p}, glia::ReduceAttrs{{1, 3}, true}),
      g.add(Op::reduce_max, {p}, glia::ReduceAttrs{{1}, false}),
      g.add(Op::reduce_min, {p}, glia::ReduceAttrs{{3}, false}),
      g.add(Op::reduce_prod, {p}, glia::ReduceAttrs{{1, 3}, false}),
      g.add(Op::reduce_sum, {p}, glia::ReduceAttrs{{1, 2}, true}),  // axis 2 has two
  });
  Graph s = simplified(g);
  EXPECT_EQ(count_ops(s, Op::reduce_sum), 1) << glia::to_text(s);
  EXPECT_EQ(
      count_ops(s, Op::reduce_max) + count_ops(s, Op::reduce_min) + count_ops(s, Op::reduce_prod),
      0)
      << glia::to_text(s);
  EXPECT_EQ(s.outputs()[0], s.parameters()[0]);
  EXPECT_EQ(glia::to_text(s).find("reduce_sum %0 [axes=[1, 2]") != std::string::npos, true)
      << glia::to_text(s);
  expect_same_results(g, s, {x});  // the NaN included: max and min keep it
  std::vector<Tensor> out = glia::interpret(s, std::vector{x});
  EXPECT_EQ(out[1].shape(), (glia::Shape{2, 2, 1}));
  EXPECT_EQ(out[3].shape(), (glia::Shape{2, 2}));

  Graph softmax = traced([](const Expr& e) { return glia::softmax(e, 1); }, {glia::f32, {3, 1}});
  Graph kept = simplified(softmax);
  EXPECT_EQ(count_ops(kept, Op::reduce_max) + count_ops(kept, Op::reduce_sum), 0)
      << glia::to_text(kept);
  const Tensor logits = glia::testing::f32s({-3, 0.5f, 80}, {3, 1});
  expect_same_results(softmax, kept, {logits});
  EXPECT_EQ(glia::testing::values(glia::interpret(kept, std::vector{logits})[0]),
            (glia::testing::V{1, 1, 1}));
}

// The gradient of slicing a tensor into parts (lstm's gates): the parts' pads and adds
// become one concatenate (no pad left when the parts tile the whole); parts that leave
// a gap keep one pad; overlapping parts keep their add.
TEST(Simplify, AddedPadsOfNeighbouringPartsBecomeOneConcatenate) {
  Tensor x = glia::testing::counting({3, 8});
  auto gates_gradient = [](std::int64_t parts, std::int64_t width) {
    return [=](const Expr& z) {
      Expr loss = glia::scalar(0.0, glia::DType::f32);
      for (std::int64_t k = 0; k < parts; ++k)
        loss = loss + glia::sum(glia::tanh(glia::slice_axis(z, k * width, width, 1)) *
                                static_cast<double>(k + 1));
      return glia::gradients(loss, {z})[0];
    };
  };
  Graph g = traced(gates_gradient(4, 2), {glia::f32, {3, 8}});
  Graph s = simplified(g);
  EXPECT_EQ(count_ops(s, Op::pad), 0) << glia::to_text(s);
  EXPECT_EQ(count_ops(s, Op::concatenate), 1) << glia::to_text(s);
  EXPECT_EQ(count_ops(s, Op::add), 0) << glia::to_text(s);
  expect_same_results(g, s, {x});
  // Three parts of width 2 of 8 columns: one pad of the joined parts is left.
  Graph partial = traced(gates_gradient(3, 2), {glia::f32, {3, 8}});
  Graph sp = simplified(partial);
  EXPECT_EQ(count_ops(sp, Op::pad), 1) << glia::to_text(sp);
  expect_same_results(partial, sp, {x});
  // Overlapping parts: the pads and the add stay.
  Graph overlap = traced(
      [](const Expr& z) {
        Expr loss = glia::sum(glia::tanh(glia::slice_axis(z, 0, 5, 1))) +
                    glia::sum(glia::slice_axis(z, 3, 5, 1) * 2.0);
        return glia::gradients(loss, {z})[0];
      },
      {glia::f32, {3, 8}});
  Graph so = simplified(overlap);
  EXPECT_EQ(count_ops(so, Op::concatenate), 0) << glia::to_text(so);
  EXPECT_EQ(count_ops(so, Op::add), 1) << glia::to_text(so);
  expect_same_results(overlap, so, {x});
}
