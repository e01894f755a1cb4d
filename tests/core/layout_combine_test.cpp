// Layout ops, part two: pad, concatenate (and stack) and reverse. Inference is tested
// through Graph::add, numerics through trace + interpret against hand-computed values.
#include "core/test_util.hpp"

namespace glia {
namespace {

using namespace glia::testing;

PadAttrs pad_attrs(Ints low, Ints high, Ints interior) {
  return PadAttrs{std::move(low), std::move(high), std::move(interior)};
}

// ---- pad -----------------------------------------------------------------------------

TEST(PadInfer, TypesAndErrors) {
  // 3 elements, low -1, high 2, interior 1: -1 + 2 + 3 + 2 * 1 = 6.
  EXPECT_EQ(infer_op(Op::pad, {{f32, {3}}, {f32, {}}}, pad_attrs({-1}, {2}, {1})),
            (TensorType{f32, {6}}));
  EXPECT_EQ(infer_op(Op::pad, {{i32, {0}}, {i32, {}}}, pad_attrs({1}, {1}, {5})),
            (TensorType{i32, {2}}));
  EXPECT_GLIA_ERROR(infer_op(Op::pad, {{f32, {3}}, {f32, {1}}}, pad_attrs({0}, {0}, {0})),
                    "pad value must be a scalar of the operand's dtype");
  EXPECT_GLIA_ERROR(infer_op(Op::pad, {{f32, {3}}, {i32, {}}}, pad_attrs({0}, {0}, {0})),
                    "got f32[3], i32");
  EXPECT_GLIA_ERROR(infer_op(Op::pad, {{f32, {3}}, {f32, {}}}, pad_attrs({0}, {0}, {-1})),
                    "interior padding must be >= 0, got -1");
  EXPECT_GLIA_ERROR(infer_op(Op::pad, {{f32, {2}}, {f32, {}}}, pad_attrs({-3}, {0}, {0})),
                    "negative size -1");
  EXPECT_GLIA_ERROR(infer_op(Op::pad, {{f32, {2, 2}}, {f32, {}}}, pad_attrs({0}, {0, 0}, {0, 0})),
                    "low needs one entry per axis (2)");
}

TEST(Pad, EdgesWithANumber) {
  Tensor y = run_expr([](auto& in) { return pad(in[0], 0, {1}, {2}); }, {f32s({1, 2, 3}, {3})});
  expect_tensor(y, f32, {6}, {0, 1, 2, 3, 0, 0});
  Tensor u = run_expr([](auto& in) { return pad(in[0], 7, {0}, {1}); },
                      {Tensor::from<std::uint8_t>({1, 2})});
  expect_tensor(u, u8, {3}, {1, 2, 7});
  Tensor b =
      run_expr([](auto& in) { return pad(in[0], 0, {1}, {1}); }, {Tensor::from<bool>({true})});
  expect_tensor(b, boolean, {3}, {0, 1, 0});
}

TEST(Pad, Interior) {
  Tensor y = run_expr([](auto& in) { return pad(in[0], -1, {0}, {0}, {1}); },
                      {Tensor::from<std::int32_t>({1, 2, 3})});
  expect_tensor(y, i32, {5}, {1, -1, 2, -1, 3});
}

TEST(Pad, NegativeEdgesCrop) {
  // Interior-padded [1, 9, 2, 9, 3], minus one element in front, plus one 9 behind.
  Tensor y = run_expr([](auto& in) { return pad(in[0], 9, {-1}, {1}, {1}); },
                      {Tensor::from<std::int64_t>({1, 2, 3})});
  expect_tensor(y, i64, {5}, {9, 2, 9, 3, 9});
  Tensor z =
      run_expr([](auto& in) { return pad(in[0], 0, {-1}, {-2}); }, {f32s({1, 2, 3, 4}, {4})});
  expect_tensor(z, f32, {1}, {2});
  Tensor gone =
      run_expr([](auto& in) { return pad(in[0], 0, {-2}, {-1}); }, {f32s({1, 2, 3}, {3})});
  expect_tensor(gone, f32, {0}, {});
}

TEST(Pad, TwoAxesHalf) {
  // [[1, 2], [3, 4]]: one row of padding on top, interior and one trailing column.
  Tensor x = f32s({1, 2, 3, 4}, {2, 2}).cast(f16);
  Tensor y = run_expr([](auto& in) { return pad(in[0], 0.5, {1, 0}, {0, 1}, {0, 1}); }, {x});
  expect_tensor(y, f16, {3, 4}, {.5, .5, .5, .5, 1, .5, 2, .5, 3, .5, 4, .5});
}

TEST(Pad, ZeroSizeOperand) {
  Tensor y = run_expr([](auto& in) { return pad(in[0], 3, {1}, {1}, {2}); }, {f32s({}, {0})});
  expect_tensor(y, f32, {2}, {3, 3});
  Tensor z = run_expr([](auto& in) { return pad(in[0], 3, {0, 1}, {0, 0}); }, {counting({0, 2})});
  expect_tensor(z, f32, {0, 3}, {});
}

TEST(Pad, ExprValuePromotes) {
  Tensor y = run_expr([](auto& in) { return pad(in[0], scalar(0.5), {1}, {0}); },
                      {Tensor::from<std::int32_t>({1, 2})});
  expect_tensor(y, f32, {3}, {0.5, 1, 2});
}

TEST(Pad, IdentityEmitsNothingAndErrors) {
  Graph g = trace_expr([](auto& in) { return pad(in[0], 1.0, {0, 0}, {0, 0}); }, {{f32, {2, 3}}});
  EXPECT_EQ(g.outputs()[0], g.parameters()[0]);
  EXPECT_EQ(g.size(), 1);  // not even the pad value's constant
  EXPECT_GLIA_ERROR(
      trace_expr([](auto& in) { return pad(in[0], in[1], {1}, {1}); }, {{f32, {3}}, {f32, {1}}}),
      "pad value must be a scalar, got f32[1]");
  EXPECT_GLIA_ERROR(trace_expr([](auto& in) { return pad(in[0], 0, {1}, {1}); }, {{f32, {3, 2}}}),
                    "low [1] needs one entry per axis of f32[3][2]");
  EXPECT_GLIA_ERROR(
      trace_expr([](auto& in) { return pad(in[0], 0, {0}, {0}, {-2}); }, {{f32, {3}}}),
      "interior padding must be >= 0");
}

// ---- concatenate and stack -----------------------------------------------------------

TEST(ConcatenateInfer, TypesAndErrors) {
  EXPECT_EQ(infer_op(Op::concatenate, {{f32, {2, 3}}, {f32, {2, 1}}, {f32, {2, 0}}}, AxisAttrs{1}),
            (TensorType{f32, {2, 4}}));
  EXPECT_GLIA_ERROR(infer_op(Op::concatenate, {{f32, {2, 3}}, {f32, {3, 3}}}, AxisAttrs{1}),
                    "equal dimensions except on axis 1");
  EXPECT_GLIA_ERROR(infer_op(Op::concatenate, {{f32, {2}}, {i32, {2}}}, AxisAttrs{0}),
                    "one dtype, got f32[2], i32[2]");
  EXPECT_GLIA_ERROR(infer_op(Op::concatenate, {{f32, {2}}, {f32, {2, 1}}}, AxisAttrs{0}),
                    "one rank");
  EXPECT_GLIA_ERROR(infer_op(Op::concatenate, {{f32, {2}}, {f32, {2}}}, AxisAttrs{1}),
                    "axis 1 is out of range for rank 1");
  EXPECT_GLIA_ERROR(infer_op(Op::concatenate, {{f32, {}}, {f32, {}}}, AxisAttrs{0}),
                    "cannot concatenate scalars");
}

TEST(Concatenate, LastAxis) {
  Tensor y = run_expr([](auto& in) { return concatenate(in, -1); },
                      {f32s({1, 2}, {2, 1}), f32s({3, 4, 5, 6}, {2, 2})});
  expect_tensor(y, f32, {2, 3}, {1, 3, 4, 2, 5, 6});
}

TEST(Concatenate, MiddleAxisI64) {
  // x[a][0][c] = 2a + c, y[a][b][c] = 4a + 2b + c.
  Tensor y = run_expr([](auto& in) { return concatenate(in, 1); },
                      {counting({2, 1, 2}, i64), counting({2, 2, 2}, i64)});
  expect_tensor(y, i64, {2, 3, 2}, {0, 1, 0, 1, 2, 3, 2, 3, 4, 5, 6, 7});
}

TEST(Concatenate, BoolAndZeroSize) {
  Tensor b = run_expr([](auto& in) { return concatenate(in); },
                      {Tensor::from<bool>({true}), Tensor::from<bool>({false, true})});
  expect_tensor(b, boolean, {3}, {1, 0, 1});
  Tensor z = run_expr([](auto& in) { return concatenate(in); },
                      {f32s({1, 2}, {1, 2}), f32s({}, {0, 2}), f32s({3, 4}, {1, 2})});
  expect_tensor(z, f32, {2, 2}, {1, 2, 3, 4});
  Tensor e =
      run_expr([](auto& in) { return concatenate(in, 1); }, {f32s({}, {0, 1}), f32s({}, {0, 2})});
  expect_tensor(e, f32, {0, 3}, {});
}

TEST(Concatenate, PromotesDtypes) {
  Tensor y = run_expr([](auto& in) { return concatenate(in); },
                      {Tensor::from<std::int32_t>({1, 2}), Tensor::from<double>({0.5})});
  expect_tensor(y, f64, {3}, {1, 2, 0.5});
}

TEST(Concatenate, OneInputAndErrors) {
  Graph g = trace_expr([](auto& in) { return concatenate({in[0]}, 0); }, {{f32, {2}}});
  EXPECT_EQ(g.outputs()[0], g.parameters()[0]);
  EXPECT_GLIA_ERROR(concatenate({}), "at least one input");
  EXPECT_GLIA_ERROR(
      trace_expr([](auto& in) { return concatenate(in, 1); }, {{f32, {2, 3}}, {f32, {3, 3}}}),
      "equal dimensions except on axis 1");
  EXPECT_GLIA_ERROR(
      trace_expr([](auto& in) { return concatenate(in); }, {{f32, {2}}, {f32, {2, 1}}}),
      "one rank");
  EXPECT_GLIA_ERROR(
      trace_expr([](auto& in) { return concatenate(in, -3); }, {{f32, {2, 3}}, {f32, {2, 3}}}),
      "axis -3 is out of range");
  EXPECT_GLIA_ERROR(trace_expr([](auto& in) { return concatenate(in); }, {{f32, {}}, {f32, {}}}),
                    "cannot concatenate scalars");
}

TEST(Stack, NewAxis) {
  std::vector<Tensor> xs = {f32s({1, 2}, {2}), f32s({3, 4}, {2})};
  Tensor front = run_expr([](auto& in) { return stack(in); }, xs);
  expect_tensor(front, f32, {2, 2}, {1, 2, 3, 4});
  Tensor back = run_expr([](auto& in) { return stack(in, -1); }, xs);
  expect_tensor(back, f32, {2, 2}, {1, 3, 2, 4});
  Tensor mixed = run_expr([](auto& in) { return stack(in); },
                          {Tensor::from<std::int32_t>({1}), f32s({0.5}, {1})});
  expect_tensor(mixed, f32, {2, 1}, {1, 0.5});
  EXPECT_GLIA_ERROR(trace_expr([](auto& in) { return stack(in); }, {{f32, {2}}, {f32, {3}}}),
                    "stack: inputs must have one shape, got f32[2] and f32[3]");
  EXPECT_GLIA_ERROR(trace_expr([](auto& in) { return stack(in, 2); }, {{f32, {2}}, {f32, {2}}}),
                    "stack: axis 2 is out of range");
}

// ---- reverse -------------------------------------------------------------------------

TEST(ReverseInfer, AxesMustBeValid) {
  EXPECT_EQ(infer_op(Op::reverse, {{f32, {2, 3}}}, AxesAttrs{{0, 1}}), (TensorType{f32, {2, 3}}));
  EXPECT_GLIA_ERROR(infer_op(Op::reverse, {{f32, {2, 3}}}, AxesAttrs{{1, 1}}),
                    "axis 1 appears twice");
  EXPECT_GLIA_ERROR(infer_op(Op::reverse, {{f32, {2, 3}}}, AxesAttrs{{2}}),
                    "axis 2 is out of range for rank 2");
  EXPECT_GLIA_ERROR(infer_op(Op::reverse, {{f32, {2, 3}}}, AxesAttrs{{1, 0}}),
                    "axes must be sorted");
}

TEST(Reverse, AllAxesByDefault) {
  Tensor y = run_expr([](auto& in) { return reverse(in[0]); }, {counting({2, 3}, i64)});
  expect_tensor(y, i64, {2, 3}, {5, 4, 3, 2, 1, 0});
}

TEST(Reverse, NegativeAxis) {
  Tensor y = run_expr([](auto& in) { return reverse(in[0], {-1}); }, {counting({2, 3}, f32)});
  expect_tensor(y, f32, {2, 3}, {2, 1, 0, 5, 4, 3});
  Tensor h = run_expr([](auto& in) { return reverse(in[0], {0}); }, {counting({3, 1}, bf16)});
  expect_tensor(h, bf16, {3, 1}, {2, 1, 0});
  Tensor b =
      run_expr([](auto& in) { return reverse(in[0]); }, {Tensor::from<bool>({true, false, false})});
  expect_tensor(b, boolean, {3}, {0, 0, 1});
  Tensor e = run_expr([](auto& in) { return reverse(in[0], {1}); }, {counting({0, 3}, u8)});
  expect_tensor(e, u8, {0, 3}, {});
}

TEST(Reverse, SizeOneAxesEmitNothingAndErrors) {
  Graph g = trace_expr([](auto& in) { return reverse(in[0], {0}); }, {{f32, {1, 3}}});
  EXPECT_EQ(count_ops(g, Op::reverse), 0);
  EXPECT_GLIA_ERROR(trace_expr(
                        [](auto& in) {
                          return reverse(in[0], {1, -1});
                        },
                        {{f32, {2, 3}}}),
                    "name an axis of f32[2][3] twice");
  EXPECT_GLIA_ERROR(trace_expr([](auto& in) { return reverse(in[0], {2}); }, {{f32, {2, 3}}}),
                    "reverse: axis 2 is out of range");
}

}  // namespace
}  // namespace glia
