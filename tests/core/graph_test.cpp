// The Graph IR: building, verification of malformed graphs, the text dump and the
// fingerprint.
#include "core/test_util.hpp"

namespace glia {
namespace {

Graph affine_graph(float scale) {
  Graph g("affine");
  ValueId x = g.add_parameter({f32, {3}}, "x");
  ValueId c = g.add(Op::constant, {}, ConstantAttrs{Tensor::full({3}, scale)});
  ValueId y = g.add(Op::multiply, {x, c});
  g.set_outputs({g.add(Op::add, {y, x})});
  return g;
}

TEST(Graph, BuildsAndInfersTypes) {
  Graph g = affine_graph(2);
  EXPECT_EQ(g.size(), 4);
  EXPECT_EQ(g.parameters(), (std::vector<ValueId>{0}));
  EXPECT_EQ(g.type(2), (TensorType{f32, {3}}));
  EXPECT_NO_THROW(verify(g));
  auto out = interpret(g, std::vector<Tensor>{Tensor::from<float>({1, 2, 3})});
  EXPECT_EQ(out[0].to_vector<float>(), (std::vector<float>{3, 6, 9}));
}

TEST(Graph, AddRejectsBadNodes) {
  Graph g;
  ValueId x = g.add_parameter({f32, {3}});
  ValueId i = g.add_parameter({i32, {3}});
  EXPECT_GLIA_ERROR(g.add(Op::add, {x}), "add takes 2 input(s), got 1");
  EXPECT_GLIA_ERROR(g.add(Op::add, {x, 7}), "input %7 is not defined before use");
  EXPECT_GLIA_ERROR(g.add(Op::add, {x, i}),
                    "add: operands must have one shape and dtype, got f32[3], i32[3]");
  EXPECT_GLIA_ERROR(g.add(Op::exp, {i}), "exp: expected a floating-point dtype");
  EXPECT_GLIA_ERROR(g.add(Op::cast, {x}), "cast expects cast attributes, got none");
  EXPECT_GLIA_ERROR(g.add(Op::concatenate, {}, AxisAttrs{0}),
                    "concatenate takes one or more inputs");
  EXPECT_GLIA_ERROR(g.add(Op::parameter, {}), "use add_parameter");
  EXPECT_GLIA_ERROR(g.set_outputs({5}), "output %5 is not a value");
}

TEST(Graph, VerifyRejectsMalformedGraphs) {
  {  // a node whose stored type disagrees with inference
    Graph g;
    ValueId x = g.add_parameter({f32, {3}});
    g.append(Node{Op::exp, {x}, NoAttrs{}, {f32, {4}}});
    g.set_outputs({1});
    EXPECT_GLIA_ERROR(verify(g), "exp has type f32[4] but its inputs give f32[3]");
  }
  {  // use before definition
    Graph g;
    g.add_parameter({f32, {3}});
    g.append(Node{Op::neg, {2}, NoAttrs{}, {f32, {3}}});
    g.append(Node{Op::neg, {0}, NoAttrs{}, {f32, {3}}});
    g.set_outputs({1});
    EXPECT_GLIA_ERROR(verify(g), "node %1: neg: input %2 is not defined before use");
  }
  {  // wrong attribute kind
    Graph g;
    ValueId x = g.add_parameter({f32, {3}});
    g.append(Node{Op::neg, {x}, CastAttrs{f64}, {f32, {3}}});
    g.set_outputs({1});
    EXPECT_GLIA_ERROR(verify(g), "neg expects none attributes, got cast");
  }
  {  // no outputs
    Graph g;
    g.add_parameter({f32, {3}});
    EXPECT_GLIA_ERROR(verify(g), "has no outputs");
  }
  {  // a parameter node that is not registered as a parameter
    Graph g;
    g.append(Node{Op::parameter, {}, ParameterAttrs{0, {f32, {1}}, ""}, {f32, {1}}});
    g.set_outputs({0});
    EXPECT_GLIA_ERROR(verify(g), "not listed among the graph's parameters");
  }
}

TEST(Graph, TextDumpIsReadable) {
  Graph g = affine_graph(2);
  EXPECT_EQ(to_text(g),
            "graph affine(%0: f32[3] x) -> (f32[3])\n"
            "  %1 = constant [value=[2, 2, 2]] : f32[3]\n"
            "  %2 = multiply %0, %1 : f32[3]\n"
            "  %3 = add %2, %0 : f32[3]\n"
            "  return %3\n");
}

TEST(Graph, FingerprintIsStableAndSensitive) {
  EXPECT_EQ(fingerprint(affine_graph(2)), fingerprint(affine_graph(2)));
  EXPECT_NE(fingerprint(affine_graph(2)), fingerprint(affine_graph(3)));  // constant bytes
  Graph other("renamed");
  ValueId x = other.add_parameter({f32, {3}}, "x");
  ValueId c = other.add(Op::constant, {}, ConstantAttrs{Tensor::full({3}, 2.0)});
  ValueId y = other.add(Op::multiply, {x, c});
  other.set_outputs({other.add(Op::subtract, {y, x})});
  EXPECT_NE(fingerprint(affine_graph(2)), fingerprint(other));  // one op differs
  // The graph's name does not enter the fingerprint, its parameter types do.
  Graph renamed = affine_graph(2);
  Graph g2("other_name");
  ValueId x2 = g2.add_parameter({f32, {3}}, "x");
  ValueId c2 = g2.add(Op::constant, {}, ConstantAttrs{Tensor::full({3}, 2.0)});
  g2.set_outputs({g2.add(Op::add, {g2.add(Op::multiply, {x2, c2}), x2})});
  EXPECT_EQ(fingerprint(renamed), fingerprint(g2));
  Graph g3("wide");
  ValueId x3 = g3.add_parameter({f64, {3}}, "x");
  ValueId c3 = g3.add(Op::constant, {}, ConstantAttrs{Tensor::full({3}, 2.0, f64)});
  g3.set_outputs({g3.add(Op::add, {g3.add(Op::multiply, {x3, c3}), x3})});
  EXPECT_NE(fingerprint(renamed), fingerprint(g3));
}

TEST(Interpreter, ChecksInputs) {
  Graph g = affine_graph(2);
  EXPECT_GLIA_ERROR(interpret(g, std::vector<Tensor>{}), "takes 1 input(s), got 0");
  EXPECT_GLIA_ERROR(interpret(g, std::vector<Tensor>{Tensor::zeros({4})}),
                    "input 0 expected f32[3], got f32[4]");
  EXPECT_GLIA_ERROR(interpret(g, std::vector<Tensor>{Tensor()}), "input 0 is undefined");
}

}  // namespace
}  // namespace glia

namespace glia {
namespace {

TEST(Graph, PruneDropsDeadNodesButKeepsParameters) {
  Graph g("dead");
  ValueId x = g.add_parameter({f32, {2}}, "x");
  ValueId unused = g.add_parameter({f32, {2}}, "unused");
  g.add(Op::exp, {x});  // dead
  ValueId y = g.add(Op::neg, {x});
  g.add(Op::add, {y, unused});  // dead
  g.set_outputs({y});
  Graph p = prune(g);
  EXPECT_EQ(p.size(), 3);
  EXPECT_EQ(p.parameters().size(), 2u);
  EXPECT_NO_THROW(verify(p));
  EXPECT_EQ(to_text(p),
            "graph dead(%0: f32[2] x, %1: f32[2] unused) -> (f32[2])\n"
            "  %2 = neg %0 : f32[2]\n"
            "  return %2\n");
}

}  // namespace
}  // namespace glia
