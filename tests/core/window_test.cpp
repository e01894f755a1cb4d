// Tests of the window ops (window_sum, window_max, select_and_scatter) through the Expr
// API: pooling with padding, overlap, base and window dilation, hand-computed.
#include "core/test_util.hpp"

namespace glia {
namespace {

using namespace glia::testing;

// 1..16 as a [1, 1, 4, 4] NCHW image.
Tensor image(DType dtype = f32) {
  std::vector<float> v;
  for (int i = 1; i <= 16; ++i) v.push_back(static_cast<float>(i));
  return Tensor::from<float>(v, Shape{1, 1, 4, 4}).cast(dtype);
}

// WindowOptions field by field (designated initializers warn about the omitted ones).
struct Opts {
  WindowOptions o;
  Opts& strides(Ints v) { return o.strides = std::move(v), *this; }
  Opts& pad(Ints low, Ints high) {
    o.padding_low = std::move(low), o.padding_high = std::move(high);
    return *this;
  }
  Opts& base_dilation(Ints v) { return o.base_dilation = std::move(v), *this; }
  Opts& window_dilation(Ints v) { return o.window_dilation = std::move(v), *this; }
  operator WindowOptions() const { return o; }  // NOLINT
};

TEST(Window, MaxAndSumPool2x2Stride2) {
  Tensor mx = run_expr([](auto& in) { return window_max(in[0], {1, 1, 2, 2}); }, {image()});
  EXPECT_EQ(mx.type(), (TensorType{f32, {1, 1, 2, 2}}));
  EXPECT_EQ(values(mx), (V{6, 8, 14, 16}));
  Tensor sm = run_expr([](auto& in) { return window_sum(in[0], {1, 1, 2, 2}); }, {image()});
  EXPECT_EQ(values(sm), (V{14, 22, 46, 54}));
}

TEST(Window, PaddingLowAndHigh) {
  WindowOptions o = Opts().pad({0, 0, 1, 1}, {0, 0, 1, 1});
  Tensor mx = run_expr([&](auto& in) { return window_max(in[0], {1, 1, 2, 2}, o); }, {image()});
  EXPECT_EQ(mx.shape(), (Shape{1, 1, 3, 3}));
  EXPECT_EQ(values(mx), (V{1, 3, 4, 9, 11, 12, 13, 15, 16}));
  Tensor sm = run_expr([&](auto& in) { return window_sum(in[0], {1, 1, 2, 2}, o); }, {image()});
  EXPECT_EQ(values(sm), (V{1, 5, 4, 14, 34, 20, 13, 29, 16}));
}

TEST(Window, PaddingNeverWinsTheMax) {
  // All values negative: a padding of 0 would win; -inf (float) or lowest (int) must not.
  Tensor x = Tensor::from<float>({-5, -6}, Shape{2});
  WindowOptions o = Opts().strides({1}).pad({1}, {1});
  Tensor f = run_expr([&](auto& in) { return window_max(in[0], {2}, o); }, {x});
  EXPECT_EQ(values(f), (V{-5, -5, -6}));
  Tensor i = run_expr([&](auto& in) { return window_max(in[0], {2}, o); }, {x.cast(i32)});
  EXPECT_EQ(i.dtype(), i32);
  EXPECT_EQ(values(i), (V{-5, -5, -6}));
  // A window over padding only gives -inf.
  WindowOptions wide = Opts().strides({1}).pad({2}, {0});
  Tensor only_pad = run_expr([&](auto& in) { return window_max(in[0], {2}, wide); }, {x});
  EXPECT_EQ(values(only_pad)[0], -kInf);
}

TEST(Window, OverlappingWindows) {
  WindowOptions o = Opts().strides({1, 1, 1, 1});
  Tensor mx = run_expr([&](auto& in) { return window_max(in[0], {1, 1, 3, 3}, o); }, {image()});
  EXPECT_EQ(mx.shape(), (Shape{1, 1, 2, 2}));
  EXPECT_EQ(values(mx), (V{11, 12, 15, 16}));
  Tensor sm = run_expr([&](auto& in) { return window_sum(in[0], {1, 1, 3, 3}, o); }, {image()});
  EXPECT_EQ(values(sm), (V{54, 63, 90, 99}));
}

TEST(Window, BaseDilationLeavesHoles) {
  // [[-1, -2], [-3, -4]] dilated by 2 is [[-1, _, -2], [_, _, _], [-3, _, -4]]; each 2x2
  // window holds one element, so holes must be 0 for the sum and never win the max.
  Tensor x = Tensor::from<float>({-1, -2, -3, -4}, Shape{1, 1, 2, 2});
  WindowOptions o = Opts().strides({1, 1, 1, 1}).base_dilation({1, 1, 2, 2});
  Tensor mx = run_expr([&](auto& in) { return window_max(in[0], {1, 1, 2, 2}, o); }, {x});
  EXPECT_EQ(mx.shape(), (Shape{1, 1, 2, 2}));
  EXPECT_EQ(values(mx), (V{-1, -2, -3, -4}));
  Tensor sm = run_expr([&](auto& in) { return window_sum(in[0], {1, 1, 2, 2}, o); }, {x});
  EXPECT_EQ(values(sm), (V{-1, -2, -3, -4}));
  // 1-D: [1, 2, 3] -> [1, _, 2, _, 3]; window 3, stride 2 -> [1 + 2, 2 + 3].
  Tensor y = Tensor::from<float>({1, 2, 3});
  WindowOptions o1 = Opts().strides({2}).base_dilation({2});
  EXPECT_EQ(values(run_expr([&](auto& in) { return window_sum(in[0], {3}, o1); }, {y})), (V{3, 5}));
}

TEST(Window, WindowDilation) {
  // A 2x2 window dilated by 2 spans 3x3 and picks rows {r, r + 2} and columns {c, c + 2}.
  WindowOptions o = Opts().strides({1, 1, 1, 1}).window_dilation({1, 1, 2, 2});
  Tensor mx = run_expr([&](auto& in) { return window_max(in[0], {1, 1, 2, 2}, o); }, {image()});
  EXPECT_EQ(mx.shape(), (Shape{1, 1, 2, 2}));
  EXPECT_EQ(values(mx), (V{11, 12, 15, 16}));
  Tensor sm = run_expr([&](auto& in) { return window_sum(in[0], {1, 1, 2, 2}, o); }, {image()});
  EXPECT_EQ(values(sm), (V{1 + 3 + 9 + 11, 2 + 4 + 10 + 12, 5 + 7 + 13 + 15, 6 + 8 + 14 + 16}));
}

TEST(Window, Dtypes) {
  for (DType t : {u8, u32, i32, i64, f16, bf16, f32, f64}) {
    Tensor sm = run_expr([](auto& in) { return window_sum(in[0], {1, 1, 2, 2}); }, {image(t)});
    EXPECT_EQ(sm.dtype(), t);
    EXPECT_EQ(values(sm), (V{14, 22, 46, 54})) << t;
    Tensor mx = run_expr([](auto& in) { return window_max(in[0], {1, 1, 2, 2}); }, {image(t)});
    EXPECT_EQ(mx.dtype(), t);
    EXPECT_EQ(values(mx), (V{6, 8, 14, 16})) << t;
  }
  // Integer sums wrap like the dtype: 200 + 100 in u8 is 44.
  Tensor b = Tensor::from<std::uint8_t>({200, 100});
  EXPECT_EQ(values(run_expr([](auto& in) { return window_sum(in[0], {2}); }, {b})), (V{44}));
}

TEST(Window, ZeroSizeResults) {
  Tensor empty = Tensor::zeros({0, 3});
  Tensor a = run_expr(
      [](auto& in) {
        return window_sum(in[0], {1, 2}, Opts().strides({1, 1}));
      },
      {empty});
  EXPECT_EQ(a.shape(), (Shape{0, 2}));
  // A window larger than the (padded) operand fits nowhere.
  Tensor b = run_expr([](auto& in) { return window_max(in[0], {1, 1, 5, 5}); }, {image()});
  EXPECT_EQ(b.shape(), (Shape{1, 1, 0, 0}));
  Tensor c = run_expr(
      [](auto& in) {
        return select_and_scatter(in[0], in[1], {1, 2}, Opts().strides({1, 1}));
      },
      {empty, Tensor::zeros({0, 2})});
  EXPECT_EQ(c.shape(), (Shape{0, 3}));
}

TEST(SelectAndScatter, NonOverlappingPool) {
  Tensor src = Tensor::from<std::int32_t>({1, 2, 3, 4}, Shape{1, 1, 2, 2});
  Tensor r = run_expr(
      [](auto& in) {
        return select_and_scatter(in[0], in[1], {1, 1, 2, 2});
      },
      {image(i32), src});
  EXPECT_EQ(r.type(), (TensorType{i32, {1, 1, 4, 4}}));
  EXPECT_EQ(values(r), (V{0, 0, 0, 0, 0, 1, 0, 2, 0, 0, 0, 0, 0, 3, 0, 4}));
}

TEST(SelectAndScatter, OverlapAccumulates) {
  // Windows [1, 3, 2], [3, 2, 5], [2, 5, 4]: maxima at 1, 3, 3.
  Tensor x = Tensor::from<float>({1, 3, 2, 5, 4});
  Tensor src = Tensor::from<float>({10, 20, 30});
  Tensor r =
      run_expr([](auto& in) { return select_and_scatter(in[0], in[1], {3}, Opts().strides({1})); },
               {x, src});
  EXPECT_EQ(values(r), (V{0, 10, 0, 50, 0}));
}

TEST(SelectAndScatter, TiesPickTheFirstMaximum) {
  // Windows [2, 2], [2, 1], [1, 2]: first maxima at 0, 1, 3.
  Tensor x = Tensor::from<double>({2, 2, 1, 2});
  Tensor src = Tensor::from<double>({1, 2, 3});
  Tensor r =
      run_expr([](auto& in) { return select_and_scatter(in[0], in[1], {2}, Opts().strides({1})); },
               {x, src});
  EXPECT_EQ(r.dtype(), f64);
  EXPECT_EQ(values(r), (V{1, 2, 0, 3}));
}

TEST(SelectAndScatter, PaddingAndHolesAreNeverSelected) {
  // [p, -5, -6, p]: windows pick -5, -5, -6 although the padding would be larger as 0.
  Tensor x = Tensor::from<float>({-5, -6});
  WindowOptions pad = Opts().strides({1}).pad({1}, {1});
  Tensor r = run_expr([&](auto& in) { return select_and_scatter(in[0], in[1], {2}, pad); },
                      {x, Tensor::from<float>({1, 2, 4})});
  EXPECT_EQ(values(r), (V{3, 4}));
  // [1, _, _, 2] with windows of one element: the windows on holes drop their values.
  WindowOptions holes = Opts().strides({1}).base_dilation({3});
  Tensor h = run_expr([&](auto& in) { return select_and_scatter(in[0], in[1], {1}, holes); },
                      {Tensor::from<float>({1, 2}), Tensor::from<float>({1, 2, 3, 4})});
  EXPECT_EQ(values(h), (V{1, 4}));
}

TEST(SelectAndScatter, HalfPrecisionAndSourceCast) {
  // The source takes x's dtype.
  Tensor x = Tensor::from<float>({1, 4, 3, 2}).cast(f16);
  Tensor r = run_expr([](auto& in) { return select_and_scatter(in[0], in[1], {2}); },
                      {x, Tensor::from<double>({0.5, 0.25})});
  EXPECT_EQ(r.dtype(), f16);
  EXPECT_EQ(values(r), (V{0, 0.5, 0.25, 0}));
}

TEST(WindowErrors, BadAttributes) {
  auto pool = [](const Ints& window, const WindowOptions& o) {
    return run_expr([&](auto& in) { return window_max(in[0], window, o); }, {image()});
  };
  EXPECT_GLIA_ERROR(pool({2, 2}, {}), "window_max: window has 2 entries, expected 4");
  EXPECT_GLIA_ERROR(pool({1, 1, 2, 2}, Opts().strides({1, 1})),
                    "strides has 2 entries, expected 4");
  EXPECT_GLIA_ERROR(pool({1, 1, 0, 2}, Opts().strides({1, 1, 1, 1})), "window must be >= 1");
  EXPECT_GLIA_ERROR(pool({1, 1, 2, 2}, Opts().strides({1, 1, 0, 1})), "strides must be >= 1");
  EXPECT_GLIA_ERROR(pool({1, 1, 2, 2}, Opts().pad({0, 0, -1, 0}, {0, 0, 0, 0})),
                    "padding_low must be >= 0");
  EXPECT_GLIA_ERROR(pool({1, 1, 2, 2}, Opts().base_dilation({1, 1, 0, 1})),
                    "base_dilation must be >= 1");
  EXPECT_GLIA_ERROR(pool({1, 1, 2, 2}, Opts().window_dilation({1, 1, 1})),
                    "window_dilation has 3 entries");
}

TEST(WindowErrors, BadDtypesAndSources) {
  Tensor flags = Tensor::from<bool>({true, false});
  EXPECT_GLIA_ERROR(run_expr([](auto& in) { return window_sum(in[0], {2}); }, {flags}),
                    "window_sum: expected a numeric dtype");
  EXPECT_GLIA_ERROR(run_expr(
                        [](auto& in) {
                          return select_and_scatter(in[0], in[1], {1, 1, 2, 2});
                        },
                        {image(), Tensor::zeros({1, 1, 3, 2})}),
                    "window_max output shape [1][1][2][2]");
}

}  // namespace
}  // namespace glia
