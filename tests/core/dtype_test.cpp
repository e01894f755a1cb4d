#include <cmath>
#include <limits>

#include "core/test_util.hpp"

namespace glia {
namespace {

TEST(DType, NamesRoundTrip) {
  for (int i = 0; i < kDTypeCount; ++i) {
    auto t = static_cast<DType>(i);
    EXPECT_EQ(dtype_from_name(dtype_name(t)), t);
  }
  EXPECT_EQ(dtype_name(boolean), "bool");
  EXPECT_EQ(dtype_name(bf16), "bf16");
  EXPECT_GLIA_ERROR(dtype_from_name("f128"), "unknown dtype 'f128'");
}

TEST(DType, Sizes) {
  EXPECT_EQ(dtype_size(boolean), 1);
  EXPECT_EQ(dtype_size(u8), 1);
  EXPECT_EQ(dtype_size(f16), 2);
  EXPECT_EQ(dtype_size(bf16), 2);
  EXPECT_EQ(dtype_size(u32), 4);
  EXPECT_EQ(dtype_size(i32), 4);
  EXPECT_EQ(dtype_size(f32), 4);
  EXPECT_EQ(dtype_size(i64), 8);
  EXPECT_EQ(dtype_size(f64), 8);
}

TEST(DType, PromotionTable) {
  EXPECT_EQ(promote(f32, f32), f32);
  EXPECT_EQ(promote(boolean, u8), u8);
  EXPECT_EQ(promote(u8, i32), i32);
  EXPECT_EQ(promote(i32, i64), i64);
  EXPECT_EQ(promote(u32, i32), i64);
  EXPECT_EQ(promote(u8, u32), u32);
  EXPECT_EQ(promote(i64, f16), f16);
  EXPECT_EQ(promote(boolean, bf16), bf16);
  EXPECT_EQ(promote(f16, bf16), f32);
  EXPECT_EQ(promote(bf16, f32), f32);
  EXPECT_EQ(promote(f32, f64), f64);
  EXPECT_EQ(promote(f16, f64), f64);
  // Symmetric for every pair.
  for (int a = 0; a < kDTypeCount; ++a)
    for (int b = 0; b < kDTypeCount; ++b)
      EXPECT_EQ(promote(DType(a), DType(b)), promote(DType(b), DType(a)));
}

TEST(Half, ConvertsAndRounds) {
  EXPECT_EQ(float(Half(1.0f)), 1.0f);
  EXPECT_EQ(Half(1.0f).bits, 0x3c00);
  EXPECT_EQ(Half(-2.0f).bits, 0xc000);
  EXPECT_EQ(Half(65504.0f).bits, 0x7bff);          // largest finite half
  EXPECT_EQ(Half(1e6f).bits, 0x7c00);              // overflow to +inf
  EXPECT_EQ(Half(5.9604645e-8f).bits, 0x0001);     // smallest subnormal
  EXPECT_EQ(float(Half(0.1f)), 0.0999755859375f);  // nearest half to 0.1
  // 1 + 2^-11 lies halfway between 1 and 1 + 2^-10: ties go to even (1.0).
  EXPECT_EQ(Half(1.0f + 0.00048828125f).bits, 0x3c00);
  EXPECT_TRUE(std::isnan(float(Half(std::numeric_limits<float>::quiet_NaN()))));
  EXPECT_EQ(float(Half(0.000030517578125f)), 0.000030517578125f);  // 2^-15, a subnormal
}

TEST(BFloat16, ConvertsAndRounds) {
  EXPECT_EQ(BFloat16(1.0f).bits, 0x3f80);
  EXPECT_EQ(float(BFloat16(3.0f)), 3.0f);
  EXPECT_EQ(float(BFloat16(1.00390625f)), 1.0f);       // halfway between 1 and 1+2^-7: to even
  EXPECT_EQ(float(BFloat16(1.01171875f)), 1.015625f);  // halfway, rounds up to even
  EXPECT_TRUE(std::isnan(float(BFloat16(std::numeric_limits<float>::quiet_NaN()))));
}

TEST(Shape, BasicsAndErrors) {
  Shape s{2, 3, 4};
  EXPECT_EQ(s.rank(), 3);
  EXPECT_EQ(s.numel(), 24);
  EXPECT_EQ(s.strides(), (std::vector<std::int64_t>{12, 4, 1}));
  EXPECT_EQ(s.dim(-1), 4);
  EXPECT_EQ(s.to_string(), "[2][3][4]");
  EXPECT_EQ(Shape{}.numel(), 1);
  EXPECT_EQ((Shape{3, 0}).numel(), 0);
  EXPECT_GLIA_ERROR(s.dim(3), "axis 3 is out of range for shape [2][3][4]");
  EXPECT_GLIA_ERROR(Shape({2, -1}), "non-negative");
  EXPECT_EQ((TensorType{bf16, {2}}).to_string(), "bf16[2]");
}

}  // namespace
}  // namespace glia
