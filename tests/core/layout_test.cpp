// Layout ops, part one: broadcast, reshape, transpose and slice, with the Expr functions
// built on them (broadcast_to, squeeze, expand_dims, flatten, slice_axis).
// Inference is tested through Graph::add, numerics through trace + interpret.
#include "core/trace_helpers.hpp"

namespace glia {
namespace {

using namespace testing_helpers;

// ---- broadcast -----------------------------------------------------------------------

TEST(BroadcastInfer, TypesAndErrors) {
  EXPECT_EQ(infer(Op::broadcast, {{f32, {3}}}, BroadcastAttrs{{2, 3}, {1}}),
            (TensorType{f32, {2, 3}}));
  EXPECT_EQ(infer(Op::broadcast, {{i32, {}}}, BroadcastAttrs{{0, 4}, {}}),
            (TensorType{i32, {0, 4}}));
  EXPECT_THAT(
      [] {
        infer(Op::broadcast, {{f32, {3}}}, BroadcastAttrs{{2, 3}, {}});
      },
      ThrowsMessage<Error>(HasSubstr("dims needs one entry per axis")));
  EXPECT_THAT(
      [] {
        infer(Op::broadcast, {{f32, {2, 3}}}, BroadcastAttrs{{3, 2}, {1, 0}});
      },
      ThrowsMessage<Error>(HasSubstr("strictly increasing")));
  EXPECT_THAT(
      [] {
        infer(Op::broadcast, {{f32, {3}}}, BroadcastAttrs{{2, 4}, {1}});
      },
      ThrowsMessage<Error>(HasSubstr("cannot broadcast f32[3] to [2][4]")));
  EXPECT_THAT(
      [] {
        infer(Op::broadcast, {{f32, {3}}}, BroadcastAttrs{{3}, {1}});
      },
      ThrowsMessage<Error>(HasSubstr("out of range")));
}

TEST(Broadcast, InDimRepeatsAlongNewAxes) {
  // [2] to [2][3] along axis 0: each row holds one value.
  Tensor y = run([](auto& in) { return broadcast(in[0], {2, 3}, {0}); }, {f32s({5, 7}, {2})});
  expect_tensor(y, f32, {2, 3}, {5, 5, 5, 7, 7, 7});
}

TEST(Broadcast, ToNumpyStyle) {
  Tensor row = run(
      [](auto& in) {
        return broadcast_to(in[0], {2, 3});
      },
      {Tensor::from<std::int32_t>({1, 2, 3})});
  expect_tensor(row, i32, {2, 3}, {1, 2, 3, 1, 2, 3});
  Tensor col = run([](auto& in) { return broadcast_to(in[0], {2, 3}); }, {f32s({4, 9}, {2, 1})});
  expect_tensor(col, f32, {2, 3}, {4, 4, 4, 9, 9, 9});
  Tensor flags = run(
      [](auto& in) {
        return broadcast_to(in[0], {2, 2});
      },
      {Tensor::from<bool>({true, false})});
  expect_tensor(flags, boolean, {2, 2}, {1, 0, 1, 0});
  Tensor half = run([](auto& in) { return broadcast_to(in[0], {3}); }, {Tensor::scalar(1.5, f16)});
  expect_tensor(half, f16, {3}, {1.5, 1.5, 1.5});
  Tensor empty = run([](auto& in) { return broadcast_to(in[0], {0, 3}); }, {f32s({2}, {1})});
  expect_tensor(empty, f32, {0, 3}, {});
}

TEST(Broadcast, BinaryOpsBroadcastBothOperands) {
  // [2][1] + [3] -> [2][3]: out[i][j] = a[i] + b[j].
  Tensor y =
      run([](auto& in) { return in[0] + in[1]; }, {f32s({10, 20}, {2, 1}), f32s({1, 2, 3}, {3})});
  expect_tensor(y, f32, {2, 3}, {11, 12, 13, 21, 22, 23});
  EXPECT_EQ(broadcast_shapes({5, 1, 3}, {4, 1}, "t"), (Shape{5, 4, 3}));
  EXPECT_EQ(broadcast_shapes({0, 1}, {1, 7}, "t"), (Shape{0, 7}));
}

TEST(Broadcast, Errors) {
  expect_trace_error([](auto& in) { return broadcast_to(in[0], {4}); }, {{f32, {3}}},
                     "cannot broadcast");
  expect_trace_error([](auto& in) { return broadcast_to(in[0], {3}); }, {{f32, {2, 3}}},
                     "of lower rank");
  expect_trace_error([](auto& in) { return in[0] * in[1]; }, {{f32, {2, 3}}, {f32, {2}}},
                     "cannot be broadcast together");
  EXPECT_THAT([] { broadcast_shapes({2}, {3}, "myop"); },
              ThrowsMessage<Error>(HasSubstr("myop: shapes [2] and [3]")));
}

// ---- reshape, squeeze, expand_dims, flatten ------------------------------------------

TEST(ReshapeInfer, NumelMustMatch) {
  EXPECT_EQ(infer(Op::reshape, {{u8, {2, 3}}}, ReshapeAttrs{{3, 1, 2}}),
            (TensorType{u8, {3, 1, 2}}));
  EXPECT_THAT(
      [] {
        infer(Op::reshape, {{f32, {2, 3}}}, ReshapeAttrs{{4}});
      },
      ThrowsMessage<Error>(HasSubstr("cannot reshape f32[2][3] (6 elements) to [4]")));
}

TEST(Reshape, InfersMinusOneAndKeepsOrder) {
  Tensor y = run([](auto& in) { return reshape(in[0], {3, -1}); }, {counting({2, 3}, i64)});
  expect_tensor(y, i64, {3, 2}, {0, 1, 2, 3, 4, 5});
  Tensor z = run([](auto& in) { return reshape(in[0], {4, 1, 0}); }, {counting({0, 4})});
  expect_tensor(z, f32, {4, 1, 0}, {});
}

TEST(Reshape, IdentityEmitsNothing) {
  Graph g = trace(
      [](auto& in) {
        return std::vector<Expr>{reshape(in[0], {2, -1})};
      },
      {{f32, {2, 3}}});
  EXPECT_EQ(count_ops(g, Op::reshape), 0);
  EXPECT_EQ(g.outputs()[0], g.parameters()[0]);
}

TEST(Reshape, Errors) {
  expect_trace_error(
      [](auto& in) {
        return reshape(in[0], {-1, -1});
      },
      {{f32, {6}}}, "at most one dimension may be -1");
  expect_trace_error(
      [](auto& in) {
        return reshape(in[0], {4, -1});
      },
      {{f32, {6}}}, "cannot reshape f32[6] (6 elements) to [4, -1]");
  expect_trace_error([](auto& in) { return reshape(in[0], {5}); }, {{f32, {6}}},
                     "cannot reshape f32[6]");
  expect_trace_error(
      [](auto& in) {
        return reshape(in[0], {-2, -3});
      },
      {{f32, {6}}}, "is negative");
  // As in numpy, -1 beside a 0 is ambiguous.
  expect_trace_error(
      [](auto& in) {
        return reshape(in[0], {0, -1});
      },
      {{f32, {0, 4}}}, "cannot reshape f32[0][4]");
}

TEST(Squeeze, DropsSizeOneAxes) {
  Graph all = trace([](auto& in) { return std::vector<Expr>{squeeze(in[0])}; }, {{f32, {1, 3, 1}}});
  EXPECT_EQ(all.type(all.outputs()[0]), (TensorType{f32, {3}}));
  Graph last =
      trace([](auto& in) { return std::vector<Expr>{squeeze(in[0], {-1})}; }, {{f32, {1, 3, 1}}});
  EXPECT_EQ(last.type(last.outputs()[0]), (TensorType{f32, {1, 3}}));
  Tensor y = run([](auto& in) { return squeeze(in[0], {0}); }, {f32s({1, 2}, {1, 2})});
  expect_tensor(y, f32, {2}, {1, 2});
  expect_trace_error([](auto& in) { return squeeze(in[0], {1}); }, {{f32, {1, 3}}},
                     "axis 1 of f32[1][3] has size 3, expected 1");
  expect_trace_error([](auto& in) { return squeeze(in[0], {2}); }, {{f32, {1, 3}}}, "out of range");
}

TEST(ExpandDims, NegativeAxisCountsInOutputRank) {
  auto type_of = [](std::int64_t axis) {
    Graph g = trace([&](auto& in) { return std::vector<Expr>{expand_dims(in[0], axis)}; },
                    {{f32, {2, 3}}});
    return g.type(g.outputs()[0]).shape;
  };
  EXPECT_EQ(type_of(0), (Shape{1, 2, 3}));
  EXPECT_EQ(type_of(2), (Shape{2, 3, 1}));
  EXPECT_EQ(type_of(-1), (Shape{2, 3, 1}));
  EXPECT_EQ(type_of(-3), (Shape{1, 2, 3}));
  expect_trace_error([](auto& in) { return expand_dims(in[0], -4); }, {{f32, {2, 3}}},
                     "expand_dims: axis -4 is out of range");
}

TEST(Flatten, ToOneAxis) {
  Tensor y = run([](auto& in) { return flatten(in[0]); }, {counting({2, 3}, i32)});
  expect_tensor(y, i32, {6}, {0, 1, 2, 3, 4, 5});
}

// ---- transpose -----------------------------------------------------------------------

TEST(TransposeInfer, PermMustBePermutation) {
  EXPECT_EQ(infer(Op::transpose, {{f32, {2, 3, 4}}}, TransposeAttrs{{2, 0, 1}}),
            (TensorType{f32, {4, 2, 3}}));
  EXPECT_THAT(
      [] {
        infer(Op::transpose, {{f32, {2, 3}}}, TransposeAttrs{{0, 0}});
      },
      ThrowsMessage<Error>(HasSubstr("perm [0, 0] is not a permutation")));
  EXPECT_THAT(
      [] {
        infer(Op::transpose, {{f32, {2, 3}}}, TransposeAttrs{{0, 2}});
      },
      ThrowsMessage<Error>(HasSubstr("not a permutation")));
  EXPECT_THAT(
      [] {
        infer(Op::transpose, {{f32, {2, 3}}}, TransposeAttrs{{0}});
      },
      ThrowsMessage<Error>(HasSubstr("perm needs one entry per axis (2)")));
}

TEST(Transpose, DefaultReversesAxes) {
  // x[i][j] = 3i + j; y[j][i] = x[i][j].
  Tensor y = run([](auto& in) { return transpose(in[0]); }, {counting({2, 3}, f64)});
  expect_tensor(y, f64, {3, 2}, {0, 3, 1, 4, 2, 5});
}

TEST(Transpose, NegativePermEntries) {
  // perm {-1, 0, 1} == {2, 0, 1}: y[k][i][j] = x[i][j][k] = 12i + 4j + k.
  Tensor y = run([](auto& in) { return transpose(in[0], {-1, 0, 1}); }, {counting({2, 3, 4}, u8)});
  ASSERT_EQ(y.type(), (TensorType{u8, {4, 2, 3}}));
  std::vector<double> got = y.to_vector<double>();
  for (int k = 0; k < 4; ++k)
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 3; ++j) EXPECT_EQ(got[k * 6 + i * 3 + j], 12 * i + 4 * j + k);
}

TEST(Transpose, BoolAndZeroSize) {
  Tensor b = run([](auto& in) { return transpose(in[0]); },
                 {Tensor::from<bool>({true, true, false, false}, Shape{2, 2})});
  expect_tensor(b, boolean, {2, 2}, {1, 0, 1, 0});
  Tensor e = run([](auto& in) { return transpose(in[0]); }, {counting({0, 3})});
  expect_tensor(e, f32, {3, 0}, {});
}

TEST(Transpose, IdentityEmitsNothingAndBadPermThrows) {
  Graph g = trace(
      [](auto& in) {
        return std::vector<Expr>{transpose(in[0], {0, -2, 2})};
      },
      {{f32, {2, 3, 4}}});
  EXPECT_EQ(count_ops(g, Op::transpose), 0);
  expect_trace_error(
      [](auto& in) {
        return transpose(in[0], {1, 1});
      },
      {{f32, {2, 3}}}, "not a permutation");
  expect_trace_error([](auto& in) { return transpose(in[0], {0}); }, {{f32, {2, 3}}},
                     "needs one entry per axis");
  expect_trace_error(
      [](auto& in) {
        return transpose(in[0], {0, 2});
      },
      {{f32, {2, 3}}}, "axis 2 is out of range");
}

// ---- slice ---------------------------------------------------------------------------

TEST(SliceInfer, BoundsAndStrides) {
  // ceil((7 - 1) / 4) = 2, ceil((3 - 0) / 1) = 3
  EXPECT_EQ(infer(Op::slice, {{f32, {7, 3}}}, SliceAttrs{{1, 0}, {7, 3}, {4, 1}}),
            (TensorType{f32, {2, 3}}));
  EXPECT_EQ(infer(Op::slice, {{f32, {7}}}, SliceAttrs{{2}, {2}, {3}}), (TensorType{f32, {0}}));
  EXPECT_THAT(
      [] {
        infer(Op::slice, {{f32, {7}}}, SliceAttrs{{3}, {2}, {1}});
      },
      ThrowsMessage<Error>(HasSubstr("needs 0 <= start <= limit <= 7")));
  EXPECT_THAT(
      [] {
        infer(Op::slice, {{f32, {7}}}, SliceAttrs{{0}, {8}, {1}});
      },
      ThrowsMessage<Error>(HasSubstr("got start 0, limit 8")));
  EXPECT_THAT(
      [] {
        infer(Op::slice, {{f32, {7}}}, SliceAttrs{{-1}, {2}, {1}});
      },
      ThrowsMessage<Error>(HasSubstr("start <= limit")));
  EXPECT_THAT(
      [] {
        infer(Op::slice, {{f32, {7}}}, SliceAttrs{{0}, {7}, {0}});
      },
      ThrowsMessage<Error>(HasSubstr("stride >= 1")));
  EXPECT_THAT(
      [] {
        infer(Op::slice, {{f32, {7}}}, SliceAttrs{{0}, {7}, {}});
      },
      ThrowsMessage<Error>(HasSubstr("strides needs one entry per axis")));
}

TEST(Slice, Strided) {
  Tensor y = run([](auto& in) { return slice(in[0], {1}, {8}, {3}); }, {counting({10}, i32)});
  expect_tensor(y, i32, {3}, {1, 4, 7});
  // x[i][j] = 5i + j; rows 1, 3 and columns 1, 3 (start -4 == 1).
  Tensor z = run(
      [](auto& in) {
        return slice(in[0], {1, -4}, {4, 5}, {2, 2});
      },
      {counting({4, 5}, f32)});
  expect_tensor(z, f32, {2, 2}, {6, 8, 16, 18});
}

TEST(Slice, NegativeLimitAndHalfFloats) {
  Tensor y = run([](auto& in) { return slice(in[0], {-3}, {-1}); }, {counting({5}, bf16)});
  expect_tensor(y, bf16, {2}, {2, 3});
  Tensor h = run([](auto& in) { return slice(in[0], {0}, {4}, {2}); }, {counting({5}, f16)});
  expect_tensor(h, f16, {2}, {0, 2});
}

TEST(Slice, ZeroSize) {
  Tensor y = run([](auto& in) { return slice(in[0], {2, 0}, {2, 3}); }, {counting({4, 3})});
  expect_tensor(y, f32, {0, 3}, {});
  Tensor z = run([](auto& in) { return slice(in[0], {0, 0}, {0, 2}); }, {counting({0, 3})});
  expect_tensor(z, f32, {0, 2}, {});
}

TEST(Slice, IdentityEmitsNothingAndErrors) {
  Graph g = trace(
      [](auto& in) {
        return std::vector<Expr>{slice(in[0], {0, -3}, {2, 3})};
      },
      {{f32, {2, 3}}});
  EXPECT_EQ(count_ops(g, Op::slice), 0);
  expect_trace_error([](auto& in) { return slice(in[0], {0}, {4}); }, {{f32, {3}}},
                     "start 0 and limit 4 are out of range");
  expect_trace_error([](auto& in) { return slice(in[0], {-4}, {2}); }, {{f32, {3}}},
                     "out of range");
  expect_trace_error([](auto& in) { return slice(in[0], {2}, {1}); }, {{f32, {3}}}, "out of order");
  expect_trace_error([](auto& in) { return slice(in[0], {0}, {3}, {0}); }, {{f32, {3}}},
                     "strides must be >= 1");
  expect_trace_error([](auto& in) { return slice(in[0], {0}, {3}); }, {{f32, {3, 2}}},
                     "start [0] needs one entry per axis");
}

TEST(SliceAxis, AlongOneAxis) {
  // x[i][j] = 4i + j; columns 1 and 2.
  Tensor y = run([](auto& in) { return slice_axis(in[0], 1, 2, -1); }, {counting({3, 4}, i64)});
  expect_tensor(y, i64, {3, 2}, {1, 2, 5, 6, 9, 10});
  // 3 elements from index -4 of 0..5 with stride 2: 2, 4.
  Tensor z = run([](auto& in) { return slice_axis(in[0], -4, 3, 0, 2); }, {counting({6}, i64)});
  expect_tensor(z, i64, {2}, {2, 4});
  expect_trace_error([](auto& in) { return slice_axis(in[0], 2, 3, 0); }, {{f32, {4}}},
                     "do not fit axis 0");
  expect_trace_error([](auto& in) { return slice_axis(in[0], 0, 1, 1); }, {{f32, {4}}},
                     "out of range");
}

}  // namespace
}  // namespace glia
