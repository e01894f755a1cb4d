// Reductions: reduce_sum/prod/max/min and argmax/argmin in the op table (inference,
// reference kernels, errors) and the Expr reductions and statistics built on them.
#include <cmath>
#include <cstdint>
#include <limits>

#include "core/test_util.hpp"

namespace glia {
namespace {

using namespace glia::testing;

// ---- The op table ---------------------------------------------------------------------

TEST(Reduction, SumOverEachAxisOfA2x3) {
  EXPECT_EQ(run_op(Op::reduce_sum, {m23()}, ReduceAttrs{{1}, false}).to_vector<float>(),
            (std::vector<float>{6, 15}));
  EXPECT_EQ(run_op(Op::reduce_sum, {m23()}, ReduceAttrs{{0}, false}).to_vector<float>(),
            (std::vector<float>{5, 7, 9}));
  Tensor all = run_op(Op::reduce_sum, {m23()}, ReduceAttrs{{0, 1}, false});
  EXPECT_EQ(all.shape(), Shape{});
  EXPECT_EQ(all.item<float>(), 21);
}

TEST(Reduction, KeepAxesShapes) {
  TensorType x{f32, {2, 3, 4}};
  EXPECT_EQ(infer_op(Op::reduce_sum, {x}, ReduceAttrs{{1}, true}), (TensorType{f32, {2, 1, 4}}));
  EXPECT_EQ(infer_op(Op::reduce_max, {x}, ReduceAttrs{{0, 2}, true}), (TensorType{f32, {1, 3, 1}}));
  EXPECT_EQ(infer_op(Op::reduce_min, {x}, ReduceAttrs{{0, 2}, false}), (TensorType{f32, {3}}));
  EXPECT_EQ(infer_op(Op::argmax, {x}, ArgReduceAttrs{2, true}), (TensorType{i64, {2, 3, 1}}));
  EXPECT_EQ(infer_op(Op::argmin, {x}, ArgReduceAttrs{1, false}), (TensorType{i64, {2, 4}}));
  Tensor kept = run_op(Op::reduce_sum, {m23()}, ReduceAttrs{{1}, true});
  EXPECT_EQ(kept.shape(), (Shape{2, 1}));
  EXPECT_EQ(kept.to_vector<float>(), (std::vector<float>{6, 15}));
}

TEST(Reduction, EmptyAxesIsTheIdentity) {
  Tensor y = run_op(Op::reduce_prod, {m23()}, ReduceAttrs{{}, false});
  EXPECT_TRUE(equal(y, m23()));
}

TEST(Reduction, ProdMaxMin) {
  Tensor x = Tensor::from<float>({1, -2, 3, 4, 5, -6}, Shape{2, 3});
  EXPECT_EQ(run_op(Op::reduce_prod, {x}, ReduceAttrs{{1}, false}).to_vector<float>(),
            (std::vector<float>{-6, -120}));
  EXPECT_EQ(run_op(Op::reduce_max, {x}, ReduceAttrs{{0}, false}).to_vector<float>(),
            (std::vector<float>{4, 5, 3}));
  EXPECT_EQ(run_op(Op::reduce_min, {x}, ReduceAttrs{{1}, false}).to_vector<float>(),
            (std::vector<float>{-2, -6}));
}

TEST(Reduction, MiddleAxisOf3d) {
  // x[i][j][k] = 100 i + 10 j + k, shape [2][3][2]; summing j gives 300 i + 30 + 3 k.
  std::vector<std::int32_t> v;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 2; ++k) v.push_back(100 * i + 10 * j + k);
  Tensor x = Tensor::from(v, Shape{2, 3, 2});
  EXPECT_EQ(run_op(Op::reduce_sum, {x}, ReduceAttrs{{1}, false}).to_vector<std::int32_t>(),
            (std::vector<std::int32_t>{30, 33, 330, 333}));
  EXPECT_EQ(run_op(Op::reduce_max, {x}, ReduceAttrs{{0, 2}, false}).to_vector<std::int32_t>(),
            (std::vector<std::int32_t>{101, 111, 121}));
}

TEST(Reduction, ZeroSizeAxesGiveTheIdentity) {
  Tensor x(f32, Shape{2, 0});
  EXPECT_EQ(run_op(Op::reduce_sum, {x}, ReduceAttrs{{1}, false}).to_vector<float>(),
            (std::vector<float>{0, 0}));
  EXPECT_EQ(run_op(Op::reduce_prod, {x}, ReduceAttrs{{1}, false}).to_vector<float>(),
            (std::vector<float>{1, 1}));
  EXPECT_EQ(run_op(Op::reduce_max, {x}, ReduceAttrs{{1}, false}).to_vector<double>(),
            (std::vector<double>{-kInf, -kInf}));
  EXPECT_EQ(run_op(Op::reduce_min, {x}, ReduceAttrs{{1}, false}).to_vector<double>(),
            (std::vector<double>{kInf, kInf}));
  // Reducing the other axis gives an empty result.
  EXPECT_EQ(run_op(Op::reduce_sum, {x}, ReduceAttrs{{0}, false}).shape(), (Shape{0}));
  Tensor xi(i32, Shape{0});
  EXPECT_EQ(run_op(Op::reduce_max, {xi}, ReduceAttrs{{0}, false}).item<std::int64_t>(),
            std::numeric_limits<std::int32_t>::min());
  Tensor xu(u8, Shape{0, 3});
  EXPECT_EQ(run_op(Op::reduce_min, {xu}, ReduceAttrs{{0}, false}).to_vector<int>(),
            (std::vector<int>{255, 255, 255}));
  Tensor xh(f16, Shape{0});
  EXPECT_EQ(run_op(Op::reduce_max, {xh}, ReduceAttrs{{0}, false}).item<double>(), -kInf);
}

TEST(Reduction, NaNPropagatesThroughMaxAndMin) {
  Tensor x = Tensor::from<float>({1, NAN, 3, -1, 2, 0}, Shape{2, 3});
  std::vector<float> mx = run_op(Op::reduce_max, {x}, ReduceAttrs{{1}, false}).to_vector<float>();
  EXPECT_TRUE(std::isnan(mx[0]));
  EXPECT_EQ(mx[1], 2);
  std::vector<float> mn = run_op(Op::reduce_min, {x}, ReduceAttrs{{1}, false}).to_vector<float>();
  EXPECT_TRUE(std::isnan(mn[0]));
  EXPECT_EQ(mn[1], -1);
  // A NaN after the extreme still wins.
  Tensor late = Tensor::from<double>({5, 1, NAN});
  EXPECT_TRUE(std::isnan(run_op(Op::reduce_max, {late}, ReduceAttrs{{0}, false}).item<double>()));
  EXPECT_TRUE(std::isnan(run_op(Op::reduce_sum, {late}, ReduceAttrs{{0}, false}).item<double>()));
}

TEST(Reduction, ArgmaxArgminTiesAndAxes) {
  Tensor x = Tensor::from<float>({3, 1, 3, 1, 7, 7}, Shape{2, 3});
  EXPECT_EQ(run_op(Op::argmax, {x}, ArgReduceAttrs{1, false}).to_vector<std::int64_t>(),
            (std::vector<std::int64_t>{0, 1}));
  EXPECT_EQ(run_op(Op::argmin, {x}, ArgReduceAttrs{1, false}).to_vector<std::int64_t>(),
            (std::vector<std::int64_t>{1, 0}));
  EXPECT_EQ(run_op(Op::argmax, {x}, ArgReduceAttrs{0, false}).to_vector<std::int64_t>(),
            (std::vector<std::int64_t>{0, 1, 1}));
  Tensor kept = run_op(Op::argmin, {x}, ArgReduceAttrs{0, true});
  EXPECT_EQ(kept.type(), (TensorType{i64, {1, 3}}));
  EXPECT_EQ(kept.to_vector<std::int64_t>(), (std::vector<std::int64_t>{1, 0, 0}));
}

TEST(Reduction, ArgmaxTreatsTheFirstNaNAsTheExtreme) {
  Tensor x = Tensor::from<float>({1, NAN, 9, NAN});
  EXPECT_EQ(run_op(Op::argmax, {x}, ArgReduceAttrs{0, false}).item<std::int64_t>(), 1);
  EXPECT_EQ(run_op(Op::argmin, {x}, ArgReduceAttrs{0, false}).item<std::int64_t>(), 1);
  Tensor first = Tensor::from<double>({NAN, 5, NAN});
  EXPECT_EQ(run_op(Op::argmin, {first}, ArgReduceAttrs{0, false}).item<std::int64_t>(), 0);
}

TEST(Reduction, Dtypes) {
  // Integers wrap like their type: 200 + 100 = 300 = 44 (mod 256).
  Tensor u = Tensor::from<std::uint8_t>({200, 100, 7});
  EXPECT_EQ(run_op(Op::reduce_sum, {u}, ReduceAttrs{{0}, false}).item<int>(), 51);
  EXPECT_EQ(run_op(Op::reduce_max, {u}, ReduceAttrs{{0}, false}).item<int>(), 200);
  EXPECT_EQ(run_op(Op::argmin, {u}, ArgReduceAttrs{0, false}).item<int>(), 2);
  Tensor i = Tensor::from<std::int32_t>({-5, 7, -2, 3}, Shape{2, 2});
  EXPECT_EQ(run_op(Op::reduce_sum, {i}, ReduceAttrs{{1}, false}).to_vector<int>(),
            (std::vector<int>{2, 1}));
  EXPECT_EQ(run_op(Op::reduce_prod, {i}, ReduceAttrs{{0, 1}, false}).item<int>(), 210);
  Tensor l = Tensor::from<std::int64_t>({std::int64_t{1} << 40, 3, -(std::int64_t{1} << 41)});
  EXPECT_EQ(run_op(Op::reduce_sum, {l}, ReduceAttrs{{0}, false}).item<std::int64_t>(),
            -(std::int64_t{1} << 40) + 3);
  EXPECT_EQ(run_op(Op::reduce_min, {l}, ReduceAttrs{{0}, false}).item<std::int64_t>(),
            -(std::int64_t{1} << 41));
  Tensor w = Tensor::from<std::uint32_t>({4000000000u, 5});
  EXPECT_EQ(run_op(Op::reduce_max, {w}, ReduceAttrs{{0}, false}).item<std::uint32_t>(),
            4000000000u);
  // f16: 2048 + 1 + 1 is not representable step by step in f16 (2049 rounds to 2048),
  // but the sum accumulates in double and rounds once: 2050.
  Tensor h = Tensor::from<float>({2048, 1, 1}).cast(f16);
  Tensor hs = run_op(Op::reduce_sum, {h}, ReduceAttrs{{0}, false});
  EXPECT_EQ(hs.dtype(), f16);
  EXPECT_EQ(hs.item<float>(), 2050);
  Tensor b = Tensor::from<float>({0.5, -3, 2.25}).cast(bf16);
  EXPECT_EQ(run_op(Op::reduce_min, {b}, ReduceAttrs{{0}, false}).item<float>(), -3);
  EXPECT_EQ(run_op(Op::reduce_prod, {b}, ReduceAttrs{{0}, false}).item<float>(), -3.375);
  EXPECT_EQ(run_op(Op::argmax, {b}, ArgReduceAttrs{0, false}).item<int>(), 2);
  Tensor d = Tensor::from<double>({0.1, 0.2, 0.3});
  EXPECT_DOUBLE_EQ(run_op(Op::reduce_sum, {d}, ReduceAttrs{{0}, false}).item<double>(),
                   0.1 + 0.2 + 0.3);
}

TEST(Reduction, BadInputAtTheGraphLevel) {
  TensorType x{f32, {2, 3}};
  EXPECT_GLIA_ERROR(infer_op(Op::reduce_sum, {{boolean, {2}}}, ReduceAttrs{{0}, false}),
                    "reduce_sum: expected a numeric dtype");
  EXPECT_GLIA_ERROR(infer_op(Op::reduce_max, {x}, ReduceAttrs{{2}, false}),
                    "reduce_max of f32[2][3]: axis 2 is out of range");
  EXPECT_GLIA_ERROR(infer_op(Op::reduce_sum, {x}, ReduceAttrs{{-1}, false}),
                    "axis -1 is out of range");
  EXPECT_GLIA_ERROR(infer_op(Op::reduce_min, {x}, ReduceAttrs{{1, 0}, false}),
                    "axes must be sorted");
  EXPECT_GLIA_ERROR(infer_op(Op::reduce_prod, {x}, ReduceAttrs{{1, 1}, false}),
                    "axis 1 appears twice");
  EXPECT_GLIA_ERROR(infer_op(Op::argmax, {x}, ArgReduceAttrs{2, false}),
                    "argmax of f32[2][3]: axis 2 is out of range");
  EXPECT_GLIA_ERROR(infer_op(Op::argmin, {{f32, {2, 0}}}, ArgReduceAttrs{1, false}),
                    "axis 1 has size 0, which has no minimum");
  EXPECT_GLIA_ERROR(infer_op(Op::argmax, {{boolean, {2}}}, ArgReduceAttrs{0, false}),
                    "argmax: expected a numeric dtype");
  EXPECT_GLIA_ERROR(infer_op(Op::reduce_sum, {x}, AxesAttrs{{0}}), "expects reduce attributes");
}

// ---- The Expr API --------------------------------------------------------------------

TEST(ReductionExpr, SumWithNegativeAndDefaultAxes) {
  EXPECT_EQ(run_expr([](auto& in) { return sum(in[0], {-1}); }, {m23()}).to_vector<float>(),
            (std::vector<float>{6, 15}));
  Tensor all = run_expr([](auto& in) { return sum(in[0]); }, {m23()});
  EXPECT_EQ(all.type(), (TensorType{f32, {}}));
  EXPECT_EQ(all.item<float>(), 21);
  Tensor kept = run_expr([](auto& in) { return sum(in[0], {}, true); }, {m23()});
  EXPECT_EQ(kept.shape(), (Shape{1, 1}));
  EXPECT_EQ(run_expr([](auto& in) { return product(in[0], {-2}); }, {m23()}).to_vector<float>(),
            (std::vector<float>{4, 10, 18}));
}

TEST(ReductionExpr, SumOfBoolAndIntegersIsI64) {
  Tensor b = Tensor::from<bool>({true, false, true, true});
  Tensor count = run_expr([](auto& in) { return sum(in[0]); }, {b});
  EXPECT_EQ(count.type(), (TensorType{i64, {}}));
  EXPECT_EQ(count.item<std::int64_t>(), 3);
  Tensor u = Tensor::from<std::uint8_t>({200, 100});
  Tensor s = run_expr([](auto& in) { return sum(in[0]); }, {u});
  EXPECT_EQ(s.dtype(), i64);
  EXPECT_EQ(s.item<std::int64_t>(), 300);
  Tensor p = run_expr([](auto& in) { return product(in[0]); },
                      {Tensor::from<std::int32_t>({100000, 100000})});
  EXPECT_EQ(p.item<std::int64_t>(), 10000000000);
}

TEST(ReductionExpr, MaxMinKeepTheDtypeAndWorkOnBool) {
  Tensor x = Tensor::from<std::int32_t>({4, -1, 9, 2}, Shape{2, 2});
  Tensor mx = run_expr([](auto& in) { return reduce_max(in[0], {-1}); }, {x});
  EXPECT_EQ(mx.type(), (TensorType{i32, {2}}));
  EXPECT_EQ(mx.to_vector<int>(), (std::vector<int>{4, 9}));
  EXPECT_EQ(run_expr([](auto& in) { return reduce_min(in[0]); }, {x}).item<int>(), -1);
  Tensor b = Tensor::from<bool>({false, true, false, false}, Shape{2, 2});
  Tensor any = run_expr([](auto& in) { return reduce_max(in[0], {1}); }, {b});
  EXPECT_EQ(any.dtype(), boolean);
  EXPECT_EQ(any.to_vector<bool>(), (std::vector<bool>{true, false}));
  Tensor all = run_expr([](auto& in) { return reduce_min(in[0], {0}); }, {b});
  EXPECT_EQ(all.to_vector<bool>(), (std::vector<bool>{false, false}));
}

TEST(ReductionExpr, ArgmaxFlattenedAndAlongAnAxis) {
  Tensor x = Tensor::from<float>({1, 8, 3, 8, 0, 5}, Shape{2, 3});
  Tensor flat = run_expr([](auto& in) { return argmax(in[0]); }, {x});
  EXPECT_EQ(flat.type(), (TensorType{i64, {}}));
  EXPECT_EQ(flat.item<std::int64_t>(), 1);
  Tensor kept = run_expr([](auto& in) { return argmin(in[0], std::nullopt, true); }, {x});
  EXPECT_EQ(kept.type(), (TensorType{i64, {1, 1}}));
  EXPECT_EQ(kept.item<std::int64_t>(), 4);
  EXPECT_EQ(run_expr([](auto& in) { return argmax(in[0], -1); }, {x}).to_vector<std::int64_t>(),
            (std::vector<std::int64_t>{1, 0}));
  EXPECT_EQ(run_expr([](auto& in) { return argmin(in[0], -2, true); }, {x}).shape(), (Shape{1, 3}));
  Tensor b = Tensor::from<bool>({false, false, true});
  EXPECT_EQ(run_expr([](auto& in) { return argmax(in[0]); }, {b}).item<std::int64_t>(), 2);
  Tensor s = Tensor::scalar(4);
  EXPECT_EQ(run_expr([](auto& in) { return argmax(in[0]); }, {s}).item<std::int64_t>(), 0);
}

TEST(ReductionExpr, MeanVarianceStandardDeviation) {
  Tensor x = Tensor::from<std::int32_t>({1, 2, 3, 4, 10, 20, 30, 40}, Shape{2, 4});
  Tensor m = run_expr([](auto& in) { return mean(in[0], {1}); }, {x});
  EXPECT_EQ(m.type(), (TensorType{f32, {2}}));
  EXPECT_EQ(m.to_vector<float>(), (std::vector<float>{2.5, 25}));
  // Squared deviations of 1..4 from 2.5: 2.25 + 0.25 + 0.25 + 2.25 = 5.
  Tensor v = run_expr([](auto& in) { return variance(in[0], {-1}); }, {x});
  EXPECT_TRUE(allclose(v, Tensor::from<float>({1.25f, 125.f})));
  Tensor v1 = run_expr([](auto& in) { return variance(in[0], {1}, true, 1); }, {x});
  EXPECT_EQ(v1.shape(), (Shape{2, 1}));
  EXPECT_TRUE(allclose(v1, Tensor::from<float>({5.f / 3, 500.f / 3}, Shape{2, 1})));
  Tensor sd = run_expr([](auto& in) { return standard_deviation(in[0], {1}); }, {x});
  EXPECT_TRUE(allclose(sd, Tensor::from<float>({std::sqrt(1.25f), std::sqrt(125.f)})));
  Tensor md = run_expr([](auto& in) { return mean(in[0]); }, {Tensor::from<double>({1, 2})});
  EXPECT_EQ(md.type(), (TensorType{f64, {}}));
  EXPECT_EQ(md.item<double>(), 1.5);
  Tensor empty = run_expr([](auto& in) { return mean(in[0]); }, {Tensor(f32, Shape{0})});
  EXPECT_TRUE(std::isnan(empty.item<float>()));
}

TEST(ReductionExpr, LogsumexpIsStableAndHandlesInfinities) {
  Tensor x =
      Tensor::from<double>({0, std::log(3.0), 1000, 1000, -kInf, -kInf, kInf, 0}, Shape{4, 2});
  Tensor y = run_expr([](auto& in) { return logsumexp(in[0], {1}); }, {x});
  EXPECT_EQ(y.type(), (TensorType{f64, {4}}));
  std::vector<double> v = y.to_vector<double>();
  EXPECT_NEAR(v[0], std::log(4.0), 1e-12);
  EXPECT_NEAR(v[1], 1000 + std::log(2.0), 1e-9);
  EXPECT_EQ(v[2], -kInf);
  EXPECT_EQ(v[3], kInf);
  Tensor k = run_expr([](auto& in) { return logsumexp(in[0], {-2}, true); },
                      {Tensor::from<float>({0, 0, 0, 0}, Shape{2, 2})});
  EXPECT_EQ(k.shape(), (Shape{1, 2}));
  EXPECT_TRUE(allclose(k, Tensor::from<float>({std::log(2.f), std::log(2.f)}, Shape{1, 2})));
  Tensor nan = run_expr([](auto& in) { return logsumexp(in[0]); }, {Tensor::from<float>({1, NAN})});
  EXPECT_TRUE(std::isnan(nan.item<float>()));
}

TEST(ReductionExpr, BadInput) {
  TensorType x{f32, {2, 3}};
  EXPECT_GLIA_ERROR(trace_expr(
                        [](auto& in) {
                          return sum(in[0], {1, -1});
                        },
                        {x}),
                    "sum: axis 1 appears twice in the axes of f32[2][3]");
  EXPECT_GLIA_ERROR(trace_expr([](auto& in) { return mean(in[0], {2}); }, {x}),
                    "mean: axis 2 is out of range for shape [2][3]");
  EXPECT_GLIA_ERROR(trace_expr([](auto& in) { return reduce_max(in[0], {-3}); }, {x}),
                    "reduce_max: axis -3 is out of range");
  EXPECT_GLIA_ERROR(trace_expr([](auto& in) { return argmax(in[0], 5); }, {x}),
                    "argmax: axis 5 is out of range");
  EXPECT_GLIA_ERROR(trace_expr([](auto& in) { return argmin(in[0], 0); }, {{f32, {}}}),
                    "argmin: a scalar has no axis 0");
  EXPECT_GLIA_ERROR(trace_expr([](auto& in) { return argmax(in[0], 0); }, {{f32, {0, 2}}}),
                    "axis 0 has size 0, which has no maximum");
  EXPECT_GLIA_ERROR(sum(Expr()), "sum: the operand is an undefined Expr");
}

}  // namespace
}  // namespace glia
