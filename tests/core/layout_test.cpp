// Layout ops, part one: broadcast, reshape, transpose and slice, with the Expr functions
// built on them (broadcast_to, squeeze, expand_dims, flatten, slice_axis).
// Inference is tested through Graph::add, numerics through trace + interpret.
#include "core/test_util.hpp"

namespace glia {
namespace {

using namespace glia::testing;

// ---- broadcast -----------------------------------------------------------------------

TEST(BroadcastInfer, TypesAndErrors) {
  EXPECT_EQ(infer_op(Op::broadcast, {{f32, {3}}}, BroadcastAttrs{{2, 3}, {1}}),
            (TensorType{f32, {2, 3}}));
  EXPECT_EQ(infer_op(Op::broadcast, {{i32, {}}}, BroadcastAttrs{{0, 4}, {}}),
            (TensorType{i32, {0, 4}}));
  EXPECT_GLIA_ERROR(infer_op(Op::broadcast, {{f32, {3}}}, BroadcastAttrs{{2, 3}, {}}),
                    "dims needs one entry per axis");
  EXPECT_GLIA_ERROR(infer_op(Op::broadcast, {{f32, {2, 3}}}, BroadcastAttrs{{3, 2}, {1, 0}}),
                    "strictly increasing");
  EXPECT_GLIA_ERROR(infer_op(Op::broadcast, {{f32, {3}}}, BroadcastAttrs{{2, 4}, {1}}),
                    "cannot broadcast f32[3] to [2][4]");
  EXPECT_GLIA_ERROR(infer_op(Op::broadcast, {{f32, {3}}}, BroadcastAttrs{{3}, {1}}),
                    "out of range");
}

TEST(Broadcast, InDimRepeatsAlongNewAxes) {
  // [2] to [2][3] along axis 0: each row holds one value.
  Tensor y = run_expr([](auto& in) { return broadcast(in[0], {2, 3}, {0}); }, {f32s({5, 7}, {2})});
  expect_tensor(y, f32, {2, 3}, {5, 5, 5, 7, 7, 7});
}

TEST(Broadcast, ToNumpyStyle) {
  Tensor row = run_expr(
      [](auto& in) {
        return broadcast_to(in[0], {2, 3});
      },
      {Tensor::from<std::int32_t>({1, 2, 3})});
  expect_tensor(row, i32, {2, 3}, {1, 2, 3, 1, 2, 3});
  Tensor col = run_expr(
      [](auto& in) {
        return broadcast_to(in[0], {2, 3});
      },
      {f32s({4, 9}, {2, 1})});
  expect_tensor(col, f32, {2, 3}, {4, 4, 4, 9, 9, 9});
  Tensor flags = run_expr(
      [](auto& in) {
        return broadcast_to(in[0], {2, 2});
      },
      {Tensor::from<bool>({true, false})});
  expect_tensor(flags, boolean, {2, 2}, {1, 0, 1, 0});
  Tensor half =
      run_expr([](auto& in) { return broadcast_to(in[0], {3}); }, {Tensor::scalar(1.5, f16)});
  expect_tensor(half, f16, {3}, {1.5, 1.5, 1.5});
  Tensor empty = run_expr([](auto& in) { return broadcast_to(in[0], {0, 3}); }, {f32s({2}, {1})});
  expect_tensor(empty, f32, {0, 3}, {});
}

TEST(Broadcast, BinaryOpsBroadcastBothOperands) {
  // [2][1] + [3] -> [2][3]: out[i][j] = a[i] + b[j].
  Tensor y = run_expr([](auto& in) { return in[0] + in[1]; },
                      {f32s({10, 20}, {2, 1}), f32s({1, 2, 3}, {3})});
  expect_tensor(y, f32, {2, 3}, {11, 12, 13, 21, 22, 23});
  EXPECT_EQ(broadcast_shapes({5, 1, 3}, {4, 1}, "t"), (Shape{5, 4, 3}));
  EXPECT_EQ(broadcast_shapes({0, 1}, {1, 7}, "t"), (Shape{0, 7}));
}

TEST(Broadcast, Errors) {
  EXPECT_GLIA_ERROR(trace_expr([](auto& in) { return broadcast_to(in[0], {4}); }, {{f32, {3}}}),
                    "cannot broadcast");
  EXPECT_GLIA_ERROR(trace_expr([](auto& in) { return broadcast_to(in[0], {3}); }, {{f32, {2, 3}}}),
                    "of lower rank");
  EXPECT_GLIA_ERROR(trace_expr([](auto& in) { return in[0] * in[1]; }, {{f32, {2, 3}}, {f32, {2}}}),
                    "cannot be broadcast together");
  EXPECT_GLIA_ERROR(broadcast_shapes({2}, {3}, "myop"), "myop: shapes [2] and [3]");
}

// ---- reshape, squeeze, expand_dims, flatten ------------------------------------------

TEST(ReshapeInfer, NumelMustMatch) {
  EXPECT_EQ(infer_op(Op::reshape, {{u8, {2, 3}}}, ReshapeAttrs{{3, 1, 2}}),
            (TensorType{u8, {3, 1, 2}}));
  EXPECT_GLIA_ERROR(infer_op(Op::reshape, {{f32, {2, 3}}}, ReshapeAttrs{{4}}),
                    "cannot reshape f32[2][3] (6 elements) to [4]");
}

TEST(Reshape, InfersMinusOneAndKeepsOrder) {
  Tensor y = run_expr([](auto& in) { return reshape(in[0], {3, -1}); }, {counting({2, 3}, i64)});
  expect_tensor(y, i64, {3, 2}, {0, 1, 2, 3, 4, 5});
  Tensor z = run_expr([](auto& in) { return reshape(in[0], {4, 1, 0}); }, {counting({0, 4})});
  expect_tensor(z, f32, {4, 1, 0}, {});
}

TEST(Reshape, IdentityEmitsNothing) {
  Graph g = trace_expr([](auto& in) { return reshape(in[0], {2, -1}); }, {{f32, {2, 3}}});
  EXPECT_EQ(count_ops(g, Op::reshape), 0);
  EXPECT_EQ(g.outputs()[0], g.parameters()[0]);
}

TEST(Reshape, Errors) {
  auto traced_reshape = [](const Shape& from, const Ints& to) {
    return trace_expr([&](auto& in) { return reshape(in[0], to); }, {{f32, from}});
  };
  EXPECT_GLIA_ERROR(traced_reshape({6}, {-1, -1}), "at most one dimension may be -1");
  EXPECT_GLIA_ERROR(traced_reshape({6}, {4, -1}), "cannot reshape f32[6] (6 elements) to [4, -1]");
  EXPECT_GLIA_ERROR(traced_reshape({6}, {5}), "cannot reshape f32[6]");
  EXPECT_GLIA_ERROR(traced_reshape({6}, {-2, -3}), "is negative");
  // As in numpy, -1 beside a 0 is ambiguous.
  EXPECT_GLIA_ERROR(traced_reshape({0, 4}, {0, -1}), "cannot reshape f32[0][4]");
}

TEST(Squeeze, DropsSizeOneAxes) {
  EXPECT_EQ(infer_expr([](auto& in) { return squeeze(in[0]); }, {{f32, {1, 3, 1}}}),
            (TensorType{f32, {3}}));
  EXPECT_EQ(infer_expr([](auto& in) { return squeeze(in[0], {-1}); }, {{f32, {1, 3, 1}}}),
            (TensorType{f32, {1, 3}}));
  Tensor y = run_expr([](auto& in) { return squeeze(in[0], {0}); }, {f32s({1, 2}, {1, 2})});
  expect_tensor(y, f32, {2}, {1, 2});
  EXPECT_GLIA_ERROR(trace_expr([](auto& in) { return squeeze(in[0], {1}); }, {{f32, {1, 3}}}),
                    "axis 1 of f32[1][3] has size 3, expected 1");
  EXPECT_GLIA_ERROR(trace_expr([](auto& in) { return squeeze(in[0], {2}); }, {{f32, {1, 3}}}),
                    "out of range");
}

TEST(ExpandDims, NegativeAxisCountsInOutputRank) {
  auto type_of = [](std::int64_t axis) {
    return infer_expr([&](auto& in) { return expand_dims(in[0], axis); }, {{f32, {2, 3}}}).shape;
  };
  EXPECT_EQ(type_of(0), (Shape{1, 2, 3}));
  EXPECT_EQ(type_of(2), (Shape{2, 3, 1}));
  EXPECT_EQ(type_of(-1), (Shape{2, 3, 1}));
  EXPECT_EQ(type_of(-3), (Shape{1, 2, 3}));
  EXPECT_GLIA_ERROR(trace_expr([](auto& in) { return expand_dims(in[0], -4); }, {{f32, {2, 3}}}),
                    "expand_dims: axis -4 is out of range");
}

TEST(Flatten, ToOneAxis) {
  Tensor y = run_expr([](auto& in) { return flatten(in[0]); }, {counting({2, 3}, i32)});
  expect_tensor(y, i32, {6}, {0, 1, 2, 3, 4, 5});
}

// ---- transpose -----------------------------------------------------------------------

TEST(TransposeInfer, PermMustBePermutation) {
  EXPECT_EQ(infer_op(Op::transpose, {{f32, {2, 3, 4}}}, TransposeAttrs{{2, 0, 1}}),
            (TensorType{f32, {4, 2, 3}}));
  EXPECT_GLIA_ERROR(infer_op(Op::transpose, {{f32, {2, 3}}}, TransposeAttrs{{0, 0}}),
                    "perm [0, 0] is not a permutation");
  EXPECT_GLIA_ERROR(infer_op(Op::transpose, {{f32, {2, 3}}}, TransposeAttrs{{0, 2}}),
                    "not a permutation");
  EXPECT_GLIA_ERROR(infer_op(Op::transpose, {{f32, {2, 3}}}, TransposeAttrs{{0}}),
                    "perm needs one entry per axis (2)");
}

TEST(Transpose, DefaultReversesAxes) {
  // x[i][j] = 3i + j; y[j][i] = x[i][j].
  Tensor y = run_expr([](auto& in) { return transpose(in[0]); }, {counting({2, 3}, f64)});
  expect_tensor(y, f64, {3, 2}, {0, 3, 1, 4, 2, 5});
}

TEST(Transpose, NegativePermEntries) {
  // perm {-1, 0, 1} == {2, 0, 1}: y[k][i][j] = x[i][j][k] = 12i + 4j + k.
  Tensor y = run_expr(
      [](auto& in) {
        return transpose(in[0], {-1, 0, 1});
      },
      {counting({2, 3, 4}, u8)});
  ASSERT_EQ(y.type(), (TensorType{u8, {4, 2, 3}}));
  std::vector<double> got = y.to_vector<double>();
  for (int k = 0; k < 4; ++k)
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 3; ++j) EXPECT_EQ(got[k * 6 + i * 3 + j], 12 * i + 4 * j + k);
}

TEST(Transpose, BoolAndZeroSize) {
  Tensor b = run_expr([](auto& in) { return transpose(in[0]); },
                      {Tensor::from<bool>({true, true, false, false}, Shape{2, 2})});
  expect_tensor(b, boolean, {2, 2}, {1, 0, 1, 0});
  Tensor e = run_expr([](auto& in) { return transpose(in[0]); }, {counting({0, 3})});
  expect_tensor(e, f32, {3, 0}, {});
}

TEST(Transpose, IdentityEmitsNothingAndBadPermThrows) {
  Graph g = trace_expr([](auto& in) { return transpose(in[0], {0, -2, 2}); }, {{f32, {2, 3, 4}}});
  EXPECT_EQ(count_ops(g, Op::transpose), 0);
  auto traced_transpose = [](const Ints& perm) {
    return trace_expr([&](auto& in) { return transpose(in[0], perm); }, {{f32, {2, 3}}});
  };
  EXPECT_GLIA_ERROR(traced_transpose({1, 1}), "not a permutation");
  EXPECT_GLIA_ERROR(traced_transpose({0}), "needs one entry per axis");
  EXPECT_GLIA_ERROR(traced_transpose({0, 2}), "axis 2 is out of range");
}

// ---- slice ---------------------------------------------------------------------------

TEST(SliceInfer, BoundsAndStrides) {
  // ceil((7 - 1) / 4) = 2, ceil((3 - 0) / 1) = 3
  EXPECT_EQ(infer_op(Op::slice, {{f32, {7, 3}}}, SliceAttrs{{1, 0}, {7, 3}, {4, 1}}),
            (TensorType{f32, {2, 3}}));
  EXPECT_EQ(infer_op(Op::slice, {{f32, {7}}}, SliceAttrs{{2}, {2}, {3}}), (TensorType{f32, {0}}));
  EXPECT_GLIA_ERROR(infer_op(Op::slice, {{f32, {7}}}, SliceAttrs{{3}, {2}, {1}}),
                    "needs 0 <= start <= limit <= 7");
  EXPECT_GLIA_ERROR(infer_op(Op::slice, {{f32, {7}}}, SliceAttrs{{0}, {8}, {1}}),
                    "got start 0, limit 8");
  EXPECT_GLIA_ERROR(infer_op(Op::slice, {{f32, {7}}}, SliceAttrs{{-1}, {2}, {1}}),
                    "start <= limit");
  EXPECT_GLIA_ERROR(infer_op(Op::slice, {{f32, {7}}}, SliceAttrs{{0}, {7}, {0}}), "stride >= 1");
  EXPECT_GLIA_ERROR(infer_op(Op::slice, {{f32, {7}}}, SliceAttrs{{0}, {7}, {}}),
                    "strides needs one entry per axis");
}

TEST(Slice, Strided) {
  Tensor y = run_expr([](auto& in) { return slice(in[0], {1}, {8}, {3}); }, {counting({10}, i32)});
  expect_tensor(y, i32, {3}, {1, 4, 7});
  // x[i][j] = 5i + j; rows 1, 3 and columns 1, 3 (start -4 == 1).
  Tensor z = run_expr(
      [](auto& in) {
        return slice(in[0], {1, -4}, {4, 5}, {2, 2});
      },
      {counting({4, 5}, f32)});
  expect_tensor(z, f32, {2, 2}, {6, 8, 16, 18});
}

TEST(Slice, NegativeLimitAndHalfFloats) {
  Tensor y = run_expr([](auto& in) { return slice(in[0], {-3}, {-1}); }, {counting({5}, bf16)});
  expect_tensor(y, bf16, {2}, {2, 3});
  Tensor h = run_expr([](auto& in) { return slice(in[0], {0}, {4}, {2}); }, {counting({5}, f16)});
  expect_tensor(h, f16, {2}, {0, 2});
}

TEST(Slice, ZeroSize) {
  Tensor y = run_expr([](auto& in) { return slice(in[0], {2, 0}, {2, 3}); }, {counting({4, 3})});
  expect_tensor(y, f32, {0, 3}, {});
  Tensor z = run_expr([](auto& in) { return slice(in[0], {0, 0}, {0, 2}); }, {counting({0, 3})});
  expect_tensor(z, f32, {0, 2}, {});
}

TEST(Slice, IdentityEmitsNothingAndErrors) {
  Graph g = trace_expr([](auto& in) { return slice(in[0], {0, -3}, {2, 3}); }, {{f32, {2, 3}}});
  EXPECT_EQ(count_ops(g, Op::slice), 0);
  EXPECT_GLIA_ERROR(trace_expr([](auto& in) { return slice(in[0], {0}, {4}); }, {{f32, {3}}}),
                    "start 0 and limit 4 are out of range");
  EXPECT_GLIA_ERROR(trace_expr([](auto& in) { return slice(in[0], {-4}, {2}); }, {{f32, {3}}}),
                    "out of range");
  EXPECT_GLIA_ERROR(trace_expr([](auto& in) { return slice(in[0], {2}, {1}); }, {{f32, {3}}}),
                    "out of order");
  EXPECT_GLIA_ERROR(trace_expr([](auto& in) { return slice(in[0], {0}, {3}, {0}); }, {{f32, {3}}}),
                    "strides must be >= 1");
  EXPECT_GLIA_ERROR(trace_expr([](auto& in) { return slice(in[0], {0}, {3}); }, {{f32, {3, 2}}}),
                    "start [0] needs one entry per axis");
}

TEST(SliceAxis, AlongOneAxis) {
  // x[i][j] = 4i + j; columns 1 and 2.
  Tensor y =
      run_expr([](auto& in) { return slice_axis(in[0], 1, 2, -1); }, {counting({3, 4}, i64)});
  expect_tensor(y, i64, {3, 2}, {1, 2, 5, 6, 9, 10});
  // 3 elements from index -4 of 0..5 with stride 2: 2, 4.
  Tensor z =
      run_expr([](auto& in) { return slice_axis(in[0], -4, 3, 0, 2); }, {counting({6}, i64)});
  expect_tensor(z, i64, {2}, {2, 4});
  EXPECT_GLIA_ERROR(trace_expr([](auto& in) { return slice_axis(in[0], 2, 3, 0); }, {{f32, {4}}}),
                    "do not fit axis 0");
  EXPECT_GLIA_ERROR(trace_expr([](auto& in) { return slice_axis(in[0], 0, 1, 1); }, {{f32, {4}}}),
                    "out of range");
}

}  // namespace
}  // namespace glia
