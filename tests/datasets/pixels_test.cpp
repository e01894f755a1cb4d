// normalize_pixels and one_hot_labels: values against hand-computed ones, shapes, and
// the errors for wrong dtypes and out-of-range labels.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "glia/datasets/dataset.hpp"

namespace glia {
namespace {

using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

TEST(NormalizePixels, ScalesBytesIntoUnitRange) {
  Tensor p = Tensor::from<std::uint8_t>({0, 51, 255, 128, 1, 204}, Shape{1, 2, 3});
  Tensor f = normalize_pixels(p);
  EXPECT_EQ(f.type(), (TensorType{f32, {1, 2, 3}}));
  std::vector<float> v = f.to_vector<float>();
  EXPECT_EQ(v[0], 0.0F);
  EXPECT_FLOAT_EQ(v[1], 0.2F);
  EXPECT_EQ(v[2], 1.0F);
  EXPECT_FLOAT_EQ(v[3], 128.0F / 255.0F);
  EXPECT_FLOAT_EQ(v[4], 1.0F / 255.0F);
  EXPECT_FLOAT_EQ(v[5], 0.8F);
  EXPECT_EQ(normalize_pixels(Tensor(u8, Shape{0, 28})).type(), (TensorType{f32, {0, 28}}));
  EXPECT_THAT([] { normalize_pixels(Tensor(f32, Shape{2})); },
              ThrowsMessage<Error>(HasSubstr("expected u8 pixels, got f32[2]")));
}

TEST(OneHotLabels, RowsOfZerosWithAOne) {
  Tensor h = one_hot_labels(Tensor::from<std::uint8_t>({2, 0, 1}), 4);
  EXPECT_EQ(h.type(), (TensorType{f32, {3, 4}}));
  EXPECT_EQ(h.to_vector<float>(), (std::vector<float>{0, 0, 1, 0, 1, 0, 0, 0, 0, 1, 0, 0}));
  // Any integer dtype and rank: the classes axis goes last.
  Tensor g = one_hot_labels(Tensor::from<std::int64_t>({1, 0, 0, 1}, Shape{2, 2}), 2);
  EXPECT_EQ(g.type(), (TensorType{f32, {2, 2, 2}}));
  EXPECT_EQ(g.to_vector<float>(), (std::vector<float>{0, 1, 1, 0, 1, 0, 0, 1}));
  EXPECT_EQ(one_hot_labels(Tensor::from<std::int32_t>({9}), 10).to_vector<float>()[9], 1.0F);
  EXPECT_EQ(one_hot_labels(Tensor(i32, Shape{0}), 10).type(), (TensorType{f32, {0, 10}}));
}

TEST(OneHotLabels, RejectsBadLabels) {
  EXPECT_THAT(
      [] {
        one_hot_labels(Tensor::from<std::uint8_t>({1, 3}), 3);
      },
      ThrowsMessage<Error>(HasSubstr("label 3 at index 1 is outside [0, 3)")));
  EXPECT_THAT([] { one_hot_labels(Tensor::from<std::int32_t>({-1}), 3); },
              ThrowsMessage<Error>(HasSubstr("label -1 at index 0 is outside [0, 3)")));
  EXPECT_THAT(
      [] { one_hot_labels(Tensor::from<float>({1}), 3); },
      ThrowsMessage<Error>(HasSubstr("expected integer labels (u8, u32, i32 or i64), got f32[1]")));
  EXPECT_THAT([] { one_hot_labels(Tensor::from<std::uint8_t>({1}), 0); },
              ThrowsMessage<Error>(HasSubstr("classes must be positive, got 0")));
}

}  // namespace
}  // namespace glia
