// Indexing ops: gather (Expr take) and scatter_add. Inference is tested through
// Graph::add, numerics through trace + interpret against hand-computed values.
#include "core/test_util.hpp"

namespace glia {
namespace {

using namespace glia::testing;

Tensor i32s(const std::vector<std::int32_t>& v, Shape s) { return Tensor::from(v, s); }
Tensor i64s(const std::vector<std::int64_t>& v) { return Tensor::from(v); }

// ---- gather --------------------------------------------------------------------------

TEST(GatherInfer, Types) {
  // x[2][5][3], indices [4][2] on axis 1 -> [2] + [4][2] + [3].
  EXPECT_EQ(infer_op(Op::gather, {{f32, {2, 5, 3}}, {i32, {4, 2}}}, AxisAttrs{1}),
            (TensorType{f32, {2, 4, 2, 3}}));
  EXPECT_EQ(infer_op(Op::gather, {{boolean, {5}}, {u8, {}}}, AxisAttrs{0}),
            (TensorType{boolean, {}}));
  EXPECT_EQ(infer_op(Op::gather, {{f16, {3, 2}}, {u32, {0}}}, AxisAttrs{0}),
            (TensorType{f16, {0, 2}}));
}

TEST(GatherInfer, Errors) {
  EXPECT_GLIA_ERROR(infer_op(Op::gather, {{f32, {5}}, {f32, {2}}}, AxisAttrs{0}),
                    "gather: indices must have an integer dtype (u8, u32, i32, i64), got f32[5], "
                    "f32[2]");
  EXPECT_GLIA_ERROR(infer_op(Op::gather, {{f32, {5}}, {boolean, {2}}}, AxisAttrs{0}),
                    "integer dtype");
  EXPECT_GLIA_ERROR(infer_op(Op::gather, {{f32, {5}}, {i32, {2}}}, AxisAttrs{1}),
                    "gather: axis 1 is out of range for rank 1");
  EXPECT_GLIA_ERROR(infer_op(Op::gather, {{f32, {}}, {i32, {2}}}, AxisAttrs{0}),
                    "at least one axis");
}

TEST(Take, OneAxis) {
  Tensor y = run_expr([](auto& in) { return take(in[0], in[1]); },
                      {f32s({10, 20, 30, 40}, {4}), i64s({3, 0, 3})});
  expect_tensor(y, f32, {3}, {40, 10, 40});
}

TEST(Take, TwoDimIndicesOnMiddleAxis) {
  // x[a][b][c] = 6a + 2b + c; out[a][i][j][c] = x[a][idx[i][j]][c].
  std::vector<std::int32_t> idx = {2, 0, 1, 1};
  Tensor y = run_expr([](auto& in) { return take(in[0], in[1], 1); },
                      {counting({2, 3, 2}, f32), i32s(idx, {2, 2})});
  ASSERT_EQ(y.type(), (TensorType{f32, {2, 2, 2, 2}}));
  std::vector<double> got = y.to_vector<double>();
  for (int a = 0; a < 2; ++a)
    for (int k = 0; k < 4; ++k)
      for (int c = 0; c < 2; ++c) EXPECT_EQ(got[a * 8 + k * 2 + c], 6 * a + 2 * idx[k] + c);
}

TEST(Take, NegativeAxisAndDtypes) {
  // x[i][j] = 3i + j; columns 2 and 0.
  Tensor cols = run_expr([](auto& in) { return take(in[0], in[1], -1); },
                         {counting({2, 3}, i64), Tensor::from<std::uint8_t>({2, 0})});
  expect_tensor(cols, i64, {2, 2}, {2, 0, 5, 3});
  Tensor flags =
      run_expr([](auto& in) { return take(in[0], in[1]); },
               {Tensor::from<bool>({false, true}), Tensor::from<std::uint32_t>({1, 1, 0})});
  expect_tensor(flags, boolean, {3}, {1, 1, 0});
  Tensor half = run_expr([](auto& in) { return take(in[0], in[1]); },
                         {f32s({0.5, 1.5}, {2}).cast(bf16), i64s({1})});
  expect_tensor(half, bf16, {1}, {1.5});
  Tensor scalar_index = run_expr([](auto& in) { return take(in[0], in[1]); },
                                 {f32s({1, 2, 3, 4}, {2, 2}).cast(f64), Tensor::scalar(1, i32)});
  expect_tensor(scalar_index, f64, {2}, {3, 4});
}

TEST(Take, ZeroSize) {
  Tensor none = run_expr([](auto& in) { return take(in[0], in[1]); },
                         {counting({3, 2}), Tensor::from<std::int32_t>({})});
  expect_tensor(none, f32, {0, 2}, {});
  Tensor empty_rows =
      run_expr([](auto& in) { return take(in[0], in[1], 1); }, {counting({0, 3}), i64s({2, 1})});
  expect_tensor(empty_rows, f32, {0, 2}, {});
}

TEST(Take, OutOfRangeThrowsAtRunTime) {
  Graph g = trace_expr([](auto& in) { return take(in[0], in[1], 1); }, {{f32, {2, 3}}, {i32, {2}}});
  std::vector<Tensor> high = {counting({2, 3}), Tensor::from<std::int32_t>({0, 3})};
  EXPECT_GLIA_ERROR(interpret(g, high),
                    "index 3 (at position 1 of the indices) is out of "
                    "range for axis 1 of size 3");
  std::vector<Tensor> negative = {counting({2, 3}), Tensor::from<std::int32_t>({-1, 0})};
  EXPECT_GLIA_ERROR(interpret(g, negative), "index -1");
}

TEST(Take, TraceErrors) {
  EXPECT_GLIA_ERROR(
      trace_expr([](auto& in) { return take(in[0], in[1]); }, {{f32, {3}}, {f32, {2}}}),
      "integer dtype");
  EXPECT_GLIA_ERROR(
      trace_expr([](auto& in) { return take(in[0], in[1], 2); }, {{f32, {3, 2}}, {i32, {2}}}),
      "take: axis 2 is out of range");
  EXPECT_GLIA_ERROR(
      trace_expr([](auto& in) { return take(in[0], in[1]); }, {{f32, {}}, {i32, {2}}}),
      "cannot take from a scalar");
}

// ---- scatter_add ---------------------------------------------------------------------

TEST(ScatterAddInfer, TypesAndErrors) {
  EXPECT_EQ(infer_op(Op::scatter_add, {{f32, {2, 5}}, {i64, {3}}, {f32, {2, 3}}}, AxisAttrs{1}),
            (TensorType{f32, {2, 5}}));
  EXPECT_GLIA_ERROR(
      infer_op(Op::scatter_add, {{f32, {2, 5}}, {i64, {3}}, {f32, {3, 2}}}, AxisAttrs{1}),
      "updates must have shape [2][3]");
  EXPECT_GLIA_ERROR(infer_op(Op::scatter_add, {{f32, {5}}, {i64, {3}}, {f64, {3}}}, AxisAttrs{0}),
                    "updates must have the target's dtype f32");
  EXPECT_GLIA_ERROR(
      infer_op(Op::scatter_add, {{boolean, {5}}, {i64, {3}}, {boolean, {3}}}, AxisAttrs{0}),
      "bool targets cannot be added to");
  EXPECT_GLIA_ERROR(infer_op(Op::scatter_add, {{f32, {5}}, {f32, {3}}, {f32, {3}}}, AxisAttrs{0}),
                    "scatter_add: indices must have an integer dtype");
  EXPECT_GLIA_ERROR(infer_op(Op::scatter_add, {{f32, {5}}, {u8, {3}}, {f32, {3}}}, AxisAttrs{1}),
                    "axis 1 is out of range");
}

TEST(ScatterAdd, RepeatedIndicesAccumulate) {
  Tensor y = run_expr([](auto& in) { return scatter_add(in[0], in[1], in[2]); },
                      {f32s({0, 0, 0, 0, 0}, {5}), i64s({1, 3, 1}), f32s({1, 2, 10}, {3})});
  expect_tensor(y, f32, {5}, {0, 11, 0, 2, 0});
}

TEST(ScatterAdd, AlongLastAxisI32) {
  // target all ones; columns 2, 2, 0 of each row get the row's updates.
  // row 0: [1 + 3, 1, 1 + 1 + 2], row 1: [1 + 6, 1, 1 + 4 + 5]
  Tensor y = run_expr([](auto& in) { return scatter_add(in[0], in[1], in[2], -1); },
                      {Tensor::ones({2, 3}, i32), Tensor::from<std::uint32_t>({2, 2, 0}),
                       i32s({1, 2, 3, 4, 5, 6}, {2, 3})});
  expect_tensor(y, i32, {2, 3}, {4, 1, 4, 7, 1, 10});
}

TEST(ScatterAdd, TwoDimIndicesOnMiddleAxisF64) {
  // target [2][3][1] zeros, indices [[0, 2], [2, 2]]: updates [2][2][2][1].
  // a = 0: u = 1..4 -> slot 0 += 1, slot 2 += 2 + 3 + 4; a = 1: u = 5..8 likewise.
  Tensor updates = f32s({1, 2, 3, 4, 5, 6, 7, 8}, {2, 2, 2, 1}).cast(f64);
  Tensor y = run_expr([](auto& in) { return scatter_add(in[0], in[1], in[2], 1); },
                      {Tensor::zeros({2, 3, 1}, f64), i32s({0, 2, 2, 2}, {2, 2}), updates});
  expect_tensor(y, f64, {2, 3, 1}, {1, 0, 9, 5, 0, 21});
}

TEST(ScatterAdd, IntegerSumsWrapAround) {
  // u8: 250 + 3 + 7 = 260 = 4 (mod 256); i64 holds the same sum exactly.
  Tensor u = run_expr(
      [](auto& in) { return scatter_add(in[0], in[1], in[2]); },
      {Tensor::from<std::uint8_t>({250, 1}), i64s({0, 0}), Tensor::from<std::uint8_t>({3, 7})});
  expect_tensor(u, u8, {2}, {4, 1});
  Tensor l = run_expr(
      [](auto& in) { return scatter_add(in[0], in[1], in[2]); },
      {Tensor::from<std::int64_t>({250, -1}), i64s({0, 1}), Tensor::from<std::int64_t>({10, -5})});
  expect_tensor(l, i64, {2}, {260, -6});
}

TEST(ScatterAdd, HalfSumsAccumulateWide) {
  // In f16 1024 + 0.5 rounds back to 1024 (ties to even); summed wide, 1024 + 0.5 + 0.5
  // is 1025, which f16 holds exactly.
  Tensor y = run_expr([](auto& in) { return scatter_add(in[0], in[1], in[2]); },
                      {f32s({1024}, {1}).cast(f16), i64s({0, 0}), f32s({0.5, 0.5}, {2}).cast(f16)});
  expect_tensor(y, f16, {1}, {1025});
}

TEST(ScatterAdd, PromotesAndZeroSize) {
  Tensor y = run_expr([](auto& in) { return scatter_add(in[0], in[1], in[2]); },
                      {Tensor::from<std::int32_t>({1, 2}), i64s({1}), f32s({0.5}, {1})});
  expect_tensor(y, f32, {2}, {1, 2.5});
  Tensor none = run_expr([](auto& in) { return scatter_add(in[0], in[1], in[2]); },
                         {f32s({1, 2}, {2}), Tensor::from<std::int32_t>({}), f32s({}, {0})});
  expect_tensor(none, f32, {2}, {1, 2});
  Tensor empty = run_expr([](auto& in) { return scatter_add(in[0], in[1], in[2], 1); },
                          {counting({0, 2}), i64s({1, 1}), f32s({}, {0, 2})});
  expect_tensor(empty, f32, {0, 2}, {});
}

TEST(ScatterAdd, Errors) {
  Graph g = trace_expr([](auto& in) { return scatter_add(in[0], in[1], in[2]); },
                       {{f32, {4}}, {i64, {2}}, {f32, {2}}});
  std::vector<Tensor> bad = {counting({4}), i64s({1, 4}), f32s({1, 1}, {2})};
  EXPECT_GLIA_ERROR(interpret(g, bad),
                    "scatter_add: index 4 (at position 1 of the "
                    "indices) is out of range for axis 0 of size 4");
  EXPECT_GLIA_ERROR(trace_expr([](auto& in) { return scatter_add(in[0], in[1], in[2]); },
                               {{boolean, {4}}, {i64, {2}}, {boolean, {2}}}),
                    "bool targets");
  EXPECT_GLIA_ERROR(trace_expr([](auto& in) { return scatter_add(in[0], in[1], in[2]); },
                               {{f32, {4}}, {i64, {2}}, {f32, {3}}}),
                    "updates must have shape [2]");
  EXPECT_GLIA_ERROR(trace_expr([](auto& in) { return scatter_add(in[0], in[1], in[2], -2); },
                               {{f32, {4}}, {i64, {2}}, {f32, {2}}}),
                    "scatter_add: axis -2 is out of range");
}

}  // namespace
}  // namespace glia
