// Tests of the composite Expr functions: activations, clip, softmax / log_softmax
// (including extreme logits) and one_hot, against values computed in the test.
#include <cmath>
#include <numeric>

#include "core/test_util.hpp"

namespace glia {
namespace {

using namespace glia::testing;

TEST(Composite, Activations) {
  Tensor x = Tensor::from<float>({-100, -1, 0, 2});
  V sig;
  for (double v : {-100.0, -1.0, 0.0, 2.0}) sig.push_back(1 / (1 + std::exp(-v)));
  expect_near(run_expr([](auto& in) { return sigmoid(in[0]); }, {x}), sig, 1e-6);
  EXPECT_EQ(run_expr([](auto& in) { return relu(in[0]); }, {x}).to_vector<double>(),
            (V{0, 0, 0, 2}));
  EXPECT_EQ(run_expr([](auto& in) { return square(in[0]); }, {x}).to_vector<double>(),
            (V{10000, 1, 0, 4}));
  Tensor i = Tensor::from<std::int32_t>({-3, 2, 4});
  Tensor r = run_expr([](auto& in) { return relu(in[0]); }, {i});
  EXPECT_EQ(r.dtype(), i32);
  EXPECT_EQ(r.to_vector<double>(), (V{0, 2, 4}));
  Tensor s = run_expr([](auto& in) { return square(in[0]); }, {i});
  EXPECT_EQ(s.dtype(), i32);
  EXPECT_EQ(s.to_vector<double>(), (V{9, 4, 16}));
  // Integer reciprocals are float, as in Nx.
  Tensor q = run_expr([](auto& in) { return reciprocal(in[0]); }, {i});
  EXPECT_EQ(q.dtype(), f32);
  expect_near(q, {-1.0 / 3, 0.5, 0.25}, 1e-7);
  Tensor h =
      run_expr([](auto& in) { return sigmoid(in[0]); }, {Tensor::from<float>({0}).cast(f16)});
  EXPECT_EQ(h.dtype(), f16);
  EXPECT_EQ(h.item<double>(), 0.5);
}

TEST(Composite, Clip) {
  Tensor x = Tensor::from<float>({-2, 0.5, 3});
  EXPECT_EQ(run_expr([](auto& in) { return clip(in[0], 0, 1); }, {x}).to_vector<double>(),
            (V{0, 0.5, 1}));
  // Bounds as tensors broadcast like any operand.
  Tensor lo = Tensor::from<float>({-3, 1, 0}), hi = Tensor::from<float>({-1, 2, 2});
  EXPECT_EQ(
      run_expr([](auto& in) { return clip(in[0], in[1], in[2]); }, {x, lo, hi}).to_vector<double>(),
      (V{-2, 1, 2}));
  Tensor i =
      run_expr([](auto& in) { return clip(in[0], -1, 1); }, {Tensor::from<std::int64_t>({-5, 5})});
  EXPECT_EQ(i.dtype(), i64);
  EXPECT_EQ(i.to_vector<double>(), (V{-1, 1}));
}

TEST(Composite, SoftmaxHandValues) {
  double e1 = std::exp(1.0), e2 = std::exp(2.0), e3 = std::exp(3.0), z = e1 + e2 + e3;
  Tensor x = Tensor::from<float>({1, 2, 3});
  expect_near(run_expr([](auto& in) { return softmax(in[0]); }, {x}), {e1 / z, e2 / z, e3 / z},
              1e-6);
  // Shifted logits give the same probabilities and do not overflow.
  Tensor big = Tensor::from<float>({1001, 1002, 1003});
  expect_near(run_expr([](auto& in) { return softmax(in[0]); }, {big}), {e1 / z, e2 / z, e3 / z},
              1e-6);
  expect_near(run_expr([](auto& in) { return log_softmax(in[0]); }, {x}),
              {std::log(e1 / z), std::log(e2 / z), std::log(e3 / z)}, 1e-6);
}

TEST(Composite, SoftmaxRowsAndColumnsSumToOne) {
  Tensor x = Tensor::from<float>({0.5, -1, 2, 3, 3, -4}, Shape{2, 3});
  for (std::int64_t axis : {-1, 1, 0, -2}) {
    Tensor p = run_expr([=](auto& in) { return softmax(in[0], axis); }, {x});
    EXPECT_EQ(p.type(), x.type());
    V v = p.to_vector<double>();
    if (axis == 1 || axis == -1) {
      for (int r = 0; r < 2; ++r) EXPECT_NEAR(v[3 * r] + v[3 * r + 1] + v[3 * r + 2], 1, 1e-6);
      EXPECT_NEAR(v[3], v[4], 1e-7);  // equal logits, equal probabilities
    } else {
      for (int c = 0; c < 3; ++c) EXPECT_NEAR(v[c] + v[3 + c], 1, 1e-6);
    }
  }
}

TEST(Composite, LogSoftmaxExtremeLogits) {
  // log(sum(exp(x - max))) == log(1 + e^-1e4 + e^-2e4) == 0 in float.
  Tensor x = Tensor::from<float>({1e4, -1e4, 0});
  Tensor l = run_expr([](auto& in) { return log_softmax(in[0]); }, {x});
  EXPECT_EQ(l.to_vector<double>(), (V{0, -2e4, -1e4}));
  Tensor p = run_expr([](auto& in) { return softmax(in[0]); }, {x});
  EXPECT_EQ(p.to_vector<double>(), (V{1, 0, 0}));
}

TEST(Composite, SoftmaxDtypes) {
  for (DType d : {f16, bf16, f64}) {
    Tensor p =
        run_expr([](auto& in) { return softmax(in[0]); }, {Tensor::from<float>({0, 0}).cast(d)});
    EXPECT_EQ(p.dtype(), d);
    EXPECT_EQ(p.to_vector<double>(), (V{0.5, 0.5})) << d;
  }
  Tensor i =
      run_expr([](auto& in) { return softmax(in[0]); }, {Tensor::from<std::int32_t>({1, 2, 3})});
  EXPECT_EQ(i.dtype(), f32);
  double z = std::exp(1.0) + std::exp(2.0) + std::exp(3.0);
  expect_near(i, {std::exp(1.0) / z, std::exp(2.0) / z, std::exp(3.0) / z}, 1e-6);
  Tensor empty = run_expr([](auto& in) { return softmax(in[0], 0); }, {Tensor::zeros({0, 3})});
  EXPECT_EQ(empty.shape(), (Shape{0, 3}));
}

TEST(Composite, OneHot) {
  Tensor idx = Tensor::from<std::int32_t>({2, 0, 1, -1, 3});
  Tensor h = run_expr([](auto& in) { return one_hot(in[0], 3); }, {idx});
  EXPECT_EQ(h.type(), (TensorType{f32, {5, 3}}));
  // Out-of-range indices (-1, 3) give rows of zeros.
  EXPECT_EQ(h.to_vector<double>(), (V{0, 0, 1, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0}));
  Tensor b = run_expr([](auto& in) { return one_hot(in[0], 2, boolean); },
                      {Tensor::from<std::int64_t>({1, 0, 0, 1}, Shape{2, 2})});
  EXPECT_EQ(b.type(), (TensorType{boolean, {2, 2, 2}}));
  EXPECT_EQ(b.to_vector<double>(), (V{0, 1, 1, 0, 1, 0, 0, 1}));
  // u8 indices address classes beyond 255.
  Tensor wide = run_expr([](auto& in) { return one_hot(in[0], 300, i32); },
                         {Tensor::from<std::uint8_t>({255})});
  EXPECT_EQ(wide.type(), (TensorType{i32, {1, 300}}));
  V w = wide.to_vector<double>();
  EXPECT_EQ(w[255], 1);
  EXPECT_EQ(std::accumulate(w.begin(), w.end(), 0.0), 1);
  Tensor s = run_expr([](auto& in) { return one_hot(in[0], 4); }, {Tensor::scalar(1, u32)});
  EXPECT_EQ(s.to_vector<double>(), (V{0, 1, 0, 0}));
}

TEST(CompositeErrors, BadArguments) {
  Tensor x = Tensor::from<float>({1, 2, 3});
  EXPECT_GLIA_ERROR(run_expr([](auto& in) { return one_hot(in[0], 3); }, {x}),
                    "one_hot: indices must have an integer dtype, got f32[3]");
  EXPECT_GLIA_ERROR(run_expr([](auto& in) { return one_hot(in[0], 0); }, {x.cast(i32)}),
                    "one_hot: num_classes must be >= 1");
  EXPECT_GLIA_ERROR(run_expr([](auto& in) { return softmax(in[0], 1); }, {x}),
                    "softmax: axis 1 is out of range");
  EXPECT_GLIA_ERROR(run_expr([](auto& in) { return log_softmax(in[0], -2); }, {x}),
                    "log_softmax: axis -2 is out of range");
  EXPECT_GLIA_ERROR(run_expr([](auto& in) { return clip(in[0], 2, 1); }, {x}),
                    "clip: lo (2) must not exceed hi (1)");
}

}  // namespace
}  // namespace glia
