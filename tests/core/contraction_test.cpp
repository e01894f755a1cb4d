// dot_general in the op table (inference, reference kernel, errors) and the Expr
// functions built on it: dot, dot_general and matmul.
#include <cstdint>

#include "core/test_util.hpp"

namespace glia {
namespace {

using namespace glia::testing;

Tensor m32() { return Tensor::from<float>({7, 8, 9, 10, 11, 12}, Shape{3, 2}); }

// ---- dot_general ---------------------------------------------------------------------

TEST(DotGeneral, MatrixProduct) {
  // [[1,2,3],[4,5,6]] x [[7,8],[9,10],[11,12]] = [[58,64],[139,154]]
  Tensor y = run_op(Op::dot_general, {m23(), m32()}, DotAttrs{{1}, {0}, {}, {}});
  EXPECT_EQ(y.type(), (TensorType{f32, {2, 2}}));
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{58, 64, 139, 154}));
  // Contracting both axes: the sum of the element-wise product, 1*7 + 2*8 + ... = 217.
  Tensor t = Tensor::from<float>({7, 8, 9, 10, 11, 12}, Shape{2, 3});
  EXPECT_EQ(run_op(Op::dot_general, {m23(), t}, DotAttrs{{0, 1}, {0, 1}, {}, {}}).item<float>(),
            217);
  // No contraction at all: the outer product.
  Tensor u = Tensor::from<float>({1, 2}), v = Tensor::from<float>({3, 4, 5});
  EXPECT_EQ(run_op(Op::dot_general, {u, v}, DotAttrs{}).to_vector<float>(),
            (std::vector<float>{3, 4, 5, 6, 8, 10}));
}

TEST(DotGeneral, OutputIsBatchThenLhsFreeThenRhsFree) {
  EXPECT_EQ(
      infer_op(Op::dot_general, {{f32, {2, 3, 4}}, {f32, {5, 3}}}, DotAttrs{{1}, {1}, {}, {}}),
      (TensorType{f32, {2, 4, 5}}));
  EXPECT_EQ(
      infer_op(Op::dot_general, {{f32, {7, 2, 3}}, {f32, {3, 6, 7}}}, DotAttrs{{2}, {0}, {0}, {2}}),
      (TensorType{f32, {7, 2, 6}}));
}

TEST(DotGeneral, BatchAxesAnywhere) {
  // lhs batch axis 0: A0 = [[1,2],[3,4]], A1 = [[5,6],[7,8]].
  Tensor a = Tensor::from<float>({1, 2, 3, 4, 5, 6, 7, 8}, Shape{2, 2, 2});
  // rhs [k][m][batch]: B0 = identity, B1 = [[2,0],[0,0]].
  Tensor b = Tensor::from<float>({1, 2, 0, 0, 0, 0, 1, 0}, Shape{2, 2, 2});
  Tensor y = run_op(Op::dot_general, {a, b}, DotAttrs{{2}, {0}, {0}, {2}});
  EXPECT_EQ(y.shape(), (Shape{2, 2, 2}));
  // A0 B0 = A0; A1 B1 = [[10,0],[14,0]].
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{1, 2, 3, 4, 10, 0, 14, 0}));
}

TEST(DotGeneral, ZeroSizeDims) {
  Tensor y = run_op(Op::dot_general, {Tensor(f32, Shape{2, 0}), Tensor(f32, Shape{0, 3})},
                    DotAttrs{{1}, {0}, {}, {}});
  EXPECT_EQ(y.shape(), (Shape{2, 3}));
  EXPECT_EQ(y.to_vector<float>(), std::vector<float>(6, 0));
  EXPECT_EQ(run_op(Op::dot_general, {Tensor(f32, Shape{0, 4}), Tensor(f32, Shape{4, 3})},
                   DotAttrs{{1}, {0}, {}, {}})
                .shape(),
            (Shape{0, 3}));
}

TEST(DotGeneral, Dtypes) {
  DotAttrs mm{{1}, {0}, {}, {}};
  std::vector<float> want{58, 64, 139, 154};
  for (DType t : {i32, i64, f16, bf16, f64}) {
    Tensor y = run_op(Op::dot_general, {m23().cast(t), m32().cast(t)}, mm);
    EXPECT_EQ(y.dtype(), t);
    EXPECT_EQ(y.to_vector<float>(), want) << dtype_name(t);
  }
  // u8 wraps: 16*16 + 1*1 = 257 = 1 (mod 256).
  Tensor u = Tensor::from<std::uint8_t>({16, 1});
  EXPECT_EQ(run_op(Op::dot_general, {u, u}, DotAttrs{{0}, {0}, {}, {}}).item<int>(), 1);
  // i32 with negatives.
  Tensor s = Tensor::from<std::int32_t>({-3, 4}), r = Tensor::from<std::int32_t>({5, -6});
  EXPECT_EQ(run_op(Op::dot_general, {s, r}, DotAttrs{{0}, {0}, {}, {}}).item<int>(), -39);
  // f16 accumulates in double and rounds once: 2048 * 1 + 1 * 1 + 1 * 1 = 2050.
  Tensor h = Tensor::from<float>({2048, 1, 1}).cast(f16);
  Tensor ones = Tensor::from<float>({1, 1, 1}).cast(f16);
  EXPECT_EQ(run_op(Op::dot_general, {h, ones}, DotAttrs{{0}, {0}, {}, {}}).item<float>(), 2050);
}

TEST(DotGeneral, BadInputAtTheGraphLevel) {
  TensorType a{f32, {2, 3}}, b{f32, {4, 2}};
  EXPECT_GLIA_ERROR(
      infer_op(Op::dot_general, {a, b}, DotAttrs{{1}, {0}, {}, {}}),
      "dot_general of f32[2][3], f32[4][2]: contracting dimensions differ: lhs axis 1 "
      "has size 3, rhs axis 0 has size 4");
  EXPECT_GLIA_ERROR(infer_op(Op::dot_general, {a, b}, DotAttrs{{1}, {}, {}, {}}),
                    "1 lhs contracting axes but 0 rhs contracting axes");
  EXPECT_GLIA_ERROR(infer_op(Op::dot_general, {a, a}, DotAttrs{{}, {}, {0}, {}}),
                    "1 lhs batch axes but 0 rhs batch axes");
  EXPECT_GLIA_ERROR(infer_op(Op::dot_general, {a, b}, DotAttrs{{0}, {1}, {0}, {1}}),
                    "(lhs batch + contracting): axis 0 appears twice");
  EXPECT_GLIA_ERROR(infer_op(Op::dot_general, {a, b}, DotAttrs{{2}, {0}, {}, {}}),
                    "axis 2 is out of range for rank 2");
  EXPECT_GLIA_ERROR(infer_op(Op::dot_general, {a, {f32, {3, 5}}}, DotAttrs{{1}, {0}, {0}, {1}}),
                    "batch dimensions differ: lhs axis 0 has size 2, rhs axis 1 has size 5");
  EXPECT_GLIA_ERROR(infer_op(Op::dot_general, {a, {i32, {3, 2}}}, DotAttrs{{1}, {0}, {}, {}}),
                    "dot_general: operands must have one dtype");
  EXPECT_GLIA_ERROR(
      infer_op(Op::dot_general, {{boolean, {2}}, {boolean, {2}}}, DotAttrs{{0}, {0}, {}, {}}),
      "dot_general: expected a numeric dtype");
}

// ---- The Expr API --------------------------------------------------------------------

TEST(LinalgExpr, DotFollowsNumpyDot) {
  Tensor u = Tensor::from<float>({1, 2, 3}), v = Tensor::from<float>({4, 5, 6});
  Tensor inner = run_expr([](auto& in) { return dot(in[0], in[1]); }, {u, v});
  EXPECT_EQ(inner.type(), (TensorType{f32, {}}));
  EXPECT_EQ(inner.item<float>(), 32);
  EXPECT_EQ(run_expr([](auto& in) { return dot(in[0], in[1]); }, {m23(), u}).to_vector<float>(),
            (std::vector<float>{14, 32}));
  EXPECT_EQ(
      run_expr([](auto& in) { return dot(in[0], in[1]); }, {Tensor::from<float>({1, -1}), m23()})
          .to_vector<float>(),
      (std::vector<float>{-3, -3, -3}));
  EXPECT_EQ(run_expr([](auto& in) { return dot(in[0], in[1]); }, {m23(), m32()}).to_vector<float>(),
            (std::vector<float>{58, 64, 139, 154}));
  Tensor scaled = run_expr([](auto& in) { return dot(in[0], in[1]); }, {Tensor::scalar(2), m23()});
  EXPECT_EQ(scaled.to_vector<float>(), (std::vector<float>{2, 4, 6, 8, 10, 12}));
  // N-d: the last axis of a with the second-to-last of b; a's free axes, then b's.
  EXPECT_EQ(
      infer_expr([](auto& in) { return dot(in[0], in[1]); }, {{f32, {2, 3, 4}}, {f32, {5, 4, 6}}}),
      (TensorType{f32, {2, 3, 5, 6}}));
}

TEST(LinalgExpr, DotPromotesDtypes) {
  Tensor a = Tensor::from<std::int32_t>({1, 2}), b = Tensor::from<float>({0.5, 0.25});
  Tensor y = run_expr([](auto& in) { return dot(in[0], in[1]); }, {a, b});
  EXPECT_EQ(y.dtype(), f32);
  EXPECT_EQ(y.item<float>(), 1);
  Tensor c = Tensor::from<bool>({true, true, false});
  Tensor n = run_expr([](auto& in) { return dot(in[0], in[1]); }, {c, c});
  EXPECT_EQ(n.dtype(), i64);
  EXPECT_EQ(n.item<std::int64_t>(), 2);
}

TEST(LinalgExpr, DotGeneralWithNegativeAxes) {
  Tensor a = Tensor::from<float>({1, 2, 3, 4, 5, 6, 7, 8}, Shape{2, 2, 2});
  Tensor b = Tensor::from<float>({1, 2, 0, 0, 0, 0, 1, 0}, Shape{2, 2, 2});
  Tensor y =
      run_expr([](auto& in) { return dot_general(in[0], in[1], {-1}, {-3}, {-3}, {-1}); }, {a, b});
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{1, 2, 3, 4, 10, 0, 14, 0}));
  Tensor h = run_expr([](auto& in) { return dot_general(in[0], in[1], {1}, {0}); },
                      {m23().cast(f16), m32().cast(bf16)});
  EXPECT_EQ(h.dtype(), f32);
  EXPECT_EQ(h.to_vector<float>(), (std::vector<float>{58, 64, 139, 154}));
}

TEST(LinalgExpr, MatmulVectorsAndBatchBroadcast) {
  Tensor u = Tensor::from<float>({1, 2, 3});
  EXPECT_EQ(run_expr([](auto& in) { return matmul(in[0], in[1]); }, {u, m32()}).to_vector<float>(),
            (std::vector<float>{58, 64}));
  Tensor mv = run_expr([](auto& in) { return matmul(in[0], in[1]); }, {m23(), u});
  EXPECT_EQ(mv.shape(), (Shape{2}));
  EXPECT_EQ(mv.to_vector<float>(), (std::vector<float>{14, 32}));
  Tensor vv = run_expr([](auto& in) { return matmul(in[0], in[1]); }, {u, u});
  EXPECT_EQ(vv.shape(), Shape{});
  EXPECT_EQ(vv.item<float>(), 14);
  // a [2, 1, 2, 3] x b [3, 3, 2] -> [2, 3, 2, 2]; checked against loops over the batch.
  Tensor a = Tensor::from(pattern(12), Shape{2, 1, 2, 3});
  Tensor b = Tensor::from(pattern(18, 5), Shape{3, 3, 2});
  Tensor y = run_expr([](auto& in) { return matmul(in[0], in[1]); }, {a, b});
  ASSERT_EQ(y.shape(), (Shape{2, 3, 2, 2}));
  std::vector<float> av = a.to_vector<float>(), bv = b.to_vector<float>(), want;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int r = 0; r < 2; ++r)
        for (int c = 0; c < 2; ++c) {
          float s = 0;
          for (int k = 0; k < 3; ++k) s += av[i * 6 + r * 3 + k] * bv[j * 6 + k * 2 + c];
          want.push_back(s);
        }
  EXPECT_EQ(y.to_vector<float>(), want);
  // A batched left operand against a matrix.
  EXPECT_EQ(infer_expr([](auto& in) { return matmul(in[0], in[1]); },
                       {{f32, {4, 5, 2, 3}}, {f32, {3, 7}}}),
            (TensorType{f32, {4, 5, 2, 7}}));
}

TEST(LinalgExpr, BadInput) {
  TensorType a{f32, {2, 3}}, b{f32, {4, 5}};
  EXPECT_GLIA_ERROR(trace_expr([](auto& in) { return dot(in[0], in[1]); }, {a, b}),
                    "dot: cannot contract f32[2][3] with f32[4][5]: axis "
                    "1 of the first has size 3, axis 0 of the second has "
                    "size 4");
  EXPECT_GLIA_ERROR(
      trace_expr([](auto& in) { return dot_general(in[0], in[1], {-3}, {0}); }, {a, b}),
      "dot_general: axis -3 is out of range");
  EXPECT_GLIA_ERROR(
      trace_expr([](auto& in) { return dot_general(in[0], in[1], {1}, {0}); }, {a, b}),
      "contracting dimensions differ");
  EXPECT_GLIA_ERROR(trace_expr([](auto& in) { return matmul(in[0], in[1]); }, {a, b}),
                    "matmul: cannot multiply f32[2][3] by f32[4][5]: 3 columns against 4 rows");
  EXPECT_GLIA_ERROR(trace_expr([](auto& in) { return matmul(in[0], in[1]); }, {{f32, {}}, a}),
                    "matmul: operands must have rank >= 1");
  EXPECT_GLIA_ERROR(trace_expr([](auto& in) { return matmul(in[0], in[1]); },
                               {{f32, {2, 2, 3}}, {f32, {3, 3, 1}}}),
                    "matmul: shapes [2] and [3] cannot be broadcast");
}

}  // namespace
}  // namespace glia
