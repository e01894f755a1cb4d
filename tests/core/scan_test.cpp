// Tests of scan, the loop node: its results against loops written here, reverse order,
// constants, stored carries, nested loops, loops without sequences, text and fingerprints,
// graph size independent of the length, and the errors of ill-fitting bodies.
#include "glia/core/scan.hpp"
#include "core/test_util.hpp"
#include "expect_error.hpp"

namespace glia {
namespace {

using namespace glia::testing;
using Vs = std::vector<Expr>;

// A running sum: the carry is the sum so far, the output the sum after each row.
ScanResult running_sum(const Expr& xs, bool reverse = false) {
  return scan(
      [](const Vs& c, const Vs& x, const Vs&) {
        return ScanResult{{c[0] + x[0]}, {c[0] + x[0]}};
      },
      {zeros({xs.dim(1)})}, {xs}, {}, {reverse});
}

TEST(Scan, RunningSumMatchesALoop) {
  Tensor xs = Tensor::from<float>({1, 2, 3, 4, 5, 6, 7, 8}, Shape{4, 2});
  auto outs = interpret(trace(
                            [](const Vs& in) {
                              ScanResult r = running_sum(in[0]);
                              return Vs{r.carries[0], r.outputs[0]};
                            },
                            {xs.type()}),
                        std::vector<Tensor>{xs});
  expect_tensor(outs[0], f32, Shape{2}, std::vector<double>{16, 20});
  expect_tensor(outs[1], f32, Shape{4, 2}, std::vector<double>{1, 2, 4, 6, 9, 12, 16, 20});
}

TEST(Scan, ReverseRunsFromTheLastRowAndKeepsRowsInPlace) {
  Tensor xs = Tensor::from<float>({1, 2, 3, 4}, Shape{4, 1});
  Tensor ys = run_expr([](const Vs& in) { return running_sum(in[0], true).outputs[0]; }, {xs});
  expect_tensor(ys, f32, Shape{4, 1}, std::vector<double>{10, 9, 7, 4});
}

TEST(Scan, ConstantsAndSeveralCarries) {
  // a' = a * w + x, b' = b + a'; outputs a' * b'. Written out for 3 steps.
  Tensor xs = Tensor::from<double>({0.5, -1, 2}, Shape{3});
  Tensor w = Tensor::scalar(3, DType::f64);
  auto fn = [](const Vs& in) {
    ScanResult r = scan(
        [](const Vs& c, const Vs& x, const Vs& k) {
          Expr a = c[0] * k[0] + x[0];
          Expr b = c[1] + a;
          return ScanResult{{a, b}, {a * b}};
        },
        {scalar(1, DType::f64), scalar(0, DType::f64)}, {in[0]}, {in[1]});
    return Vs{r.carries[0], r.carries[1], r.outputs[0]};
  };
  auto outs = interpret(trace(fn, {xs.type(), w.type()}), std::vector<Tensor>{xs, w});
  double a = 1, b = 0;
  std::vector<double> ys;
  for (double x : {0.5, -1.0, 2.0}) {
    a = a * 3 + x;
    b += a;
    ys.push_back(a * b);
  }
  EXPECT_DOUBLE_EQ(outs[0].item<double>(), a);
  EXPECT_DOUBLE_EQ(outs[1].item<double>(), b);
  expect_near(outs[2], ys, 1e-12);
}

TEST(Scan, StoredCarriesAreWhatEachStepReceived) {
  Tensor xs = Tensor::from<float>({1, 2, 3}, Shape{3, 1});
  Tensor stored = run_expr(
      [](const Vs& in) {
        ScanResult r = running_sum(in[0]);
        const Node& node = r.carries[0].node();
        Vs inputs;
        for (ValueId id : node.inputs) inputs.emplace_back(r.carries[0].graph(), id);
        // One carry and one output: result 2 is the carry as each step received it.
        return scan_result(inputs, std::get<ScanAttrs>(node.attrs), 2);
      },
      {xs});
  expect_tensor(stored, f32, Shape{3, 1}, std::vector<double>{0, 1, 3});
}

TEST(Scan, LoopWithoutSequencesTakesItsLength) {
  Tensor out = run_expr(
      [](const Vs&) {
        ScanResult r = scan(
            [](const Vs& c, const Vs&, const Vs&) {
              return ScanResult{{multiply(c[0], 2)}, {}};
            },
            {scalar(1, DType::i64)}, {}, {}, {.length = 10});
        return r.carries[0];
      },
      {});
  EXPECT_EQ(out.item<std::int64_t>(), 1024);
}

TEST(Scan, NestedLoops) {
  // The outer loop adds the row sums of each [2, 2] slice, computed by an inner loop.
  Tensor xs = Tensor::from<float>({1, 2, 3, 4, 5, 6, 7, 8}, Shape{2, 2, 2});
  Tensor out = run_expr(
      [](const Vs& in) {
        ScanResult r = scan(
            [](const Vs& c, const Vs& x, const Vs&) {
              ScanResult inner = scan(
                  [](const Vs& d, const Vs& row, const Vs&) {
                    return ScanResult{{d[0] + sum(row[0])}, {}};
                  },
                  {c[0]}, {x[0]});
              return ScanResult{inner.carries, {inner.carries[0]}};
            },
            {scalar(0)}, {in[0]});
        return r.outputs[0];
      },
      {xs});
  expect_tensor(out, f32, Shape{2}, std::vector<double>{10, 36});
}

TEST(Scan, GraphSizeDoesNotGrowWithTheLength) {
  auto size_for = [](std::int64_t length) {
    Graph g = trace_expr([](const Vs& in) { return running_sum(in[0]).outputs[0]; },
                         {{f32, {length, 8}}});
    return std::pair{g.size(), std::get<ScanAttrs>(g.node(g.outputs()[0]).attrs).body->size()};
  };
  EXPECT_EQ(size_for(5), size_for(500));
}

TEST(Scan, TextShowsTheBodyAndFingerprintsTellBodiesApart) {
  auto make = [](double factor) {
    return trace_expr(
        [factor](const Vs& in) {
          return scan(
                     [factor](const Vs& c, const Vs& x, const Vs&) {
                       return ScanResult{{c[0] * factor + x[0]}, {}};
                     },
                     {zeros({2})}, {in[0]})
              .carries[0];
        },
        {{f32, {3, 2}}});
  };
  Graph a = make(2), b = make(3), a2 = make(2);
  std::string text = to_text(a);
  EXPECT_NE(text.find("scan %"), std::string::npos) << text;
  EXPECT_NE(text.find("graph scan_body("), std::string::npos) << text;
  EXPECT_EQ(fingerprint(a), fingerprint(a2));
  EXPECT_NE(fingerprint(a), fingerprint(b));
  EXPECT_TRUE(same_structure(a, a2));
  EXPECT_FALSE(same_structure(a, b));
  verify(a);
}

TEST(Scan, ZeroStepsReturnTheInitialCarry) {
  Tensor xs(f32, Shape{0, 2});
  auto outs = interpret(trace(
                            [](const Vs& in) {
                              ScanResult r = scan(
                                  [](const Vs& c, const Vs& x, const Vs&) {
                                    return ScanResult{{c[0] + x[0]}, {x[0]}};
                                  },
                                  {ones({2})}, {in[0]});
                              return Vs{r.carries[0], r.outputs[0]};
                            },
                            {xs.type()}),
                        std::vector<Tensor>{xs});
  expect_tensor(outs[0], f32, Shape{2}, std::vector<double>{1, 1});
  EXPECT_EQ(outs[1].shape(), (Shape{0, 2}));
}

TEST(Scan, IllFittingBodiesAreErrors) {
  auto traced = [](const std::function<Expr(const Vs&)>& fn, std::vector<TensorType> types) {
    return [fn, types] { trace_expr(fn, types); };
  };
  // A carry that changes type.
  expect_error_parts(traced(
                         [](const Vs& in) {
                           return scan(
                                      [](const Vs& c, const Vs&, const Vs&) {
                                        return ScanResult{{sum(c[0])}, {}};
                                      },
                                      {in[0]}, {}, {}, {.length = 2})
                               .carries[0];
                         },
                         {{f32, {3}}}),
                     {"scan: the body returned carry 0 as f32", "f32[3]"});
  // Sequences of different lengths.
  expect_error_parts(traced(
                         [](const Vs& in) {
                           return scan(
                                      [](const Vs& c, const Vs&, const Vs&) {
                                        return ScanResult{{c[0]}, {}};
                                      },
                                      {scalar(0)}, {in[0], in[1]})
                               .carries[0];
                         },
                         {{f32, {3, 2}}, {f32, {4, 2}}}),
                     {"sequence 1", "f32[4][2]", "3 rows"});
  // No sequences and no length.
  expect_error(traced(
                   [](const Vs& in) {
                     return scan(
                                [](const Vs& c, const Vs&, const Vs&) {
                                  return ScanResult{{c[0]}, {}};
                                },
                                {in[0]}, {})
                         .carries[0];
                   },
                   {{f32, {3}}}),
               "options.length");
  // A value of the enclosing trace used inside the body.
  expect_error(traced(
                   [](const Vs& in) {
                     Expr outer = in[0];
                     return scan(
                                [outer](const Vs& c, const Vs&, const Vs&) {
                                  return ScanResult{{c[0] + outer}, {}};
                                },
                                {zeros({2})}, {in[1]})
                         .carries[0];
                   },
                   {{f32, {2}}, {f32, {3, 2}}}),
               "different traces");
}

TEST(Scan, NodesOfOneLoopAreRecognised) {
  Graph g = trace(
      [](const Vs& in) {
        ScanResult r = running_sum(in[0]);
        ScanResult other = running_sum(in[0], true);
        return Vs{r.carries[0], r.outputs[0], other.outputs[0]};
      },
      {{f32, {3, 2}}});
  const Node& a = g.node(g.outputs()[0]);
  const Node& b = g.node(g.outputs()[1]);
  const Node& c = g.node(g.outputs()[2]);
  EXPECT_TRUE(same_loop(a, b));
  EXPECT_FALSE(same_loop(a, c));
}

}  // namespace
}  // namespace glia
