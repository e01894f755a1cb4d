// Shape's helpers outside the class: split_at, a shape seen as (outer, size, inner)
// around one axis, and declared_size, the readers' check of a header's shape.
#include "core/test_util.hpp"
#include "glia/core/declared_size.hpp"

namespace glia {
namespace {

void expect_split(const AxisSplit& s, std::int64_t outer, std::int64_t size, std::int64_t inner) {
  EXPECT_EQ(s.outer, outer);
  EXPECT_EQ(s.size, size);
  EXPECT_EQ(s.inner, inner);
}

TEST(AxisSplit, SplitsAroundEachAxis) {
  Shape s{2, 3, 4};
  expect_split(split_at(s, 0), 1, 2, 12);
  expect_split(split_at(s, 1), 2, 3, 4);
  expect_split(split_at(s, 2), 6, 4, 1);
  expect_split(split_at(Shape{5}, 0), 1, 5, 1);
  expect_split(split_at(Shape{2, 0, 3}, 1), 2, 0, 3);
  expect_split(split_at(Shape{0, 7}, 1), 0, 7, 1);
}

TEST(AxisSplit, RejectsAnAxisOutOfRange) {
  EXPECT_GLIA_ERROR(split_at(Shape{2, 3}, 2), "split_at: axis 2 is out of range for shape [2][3]");
  EXPECT_GLIA_ERROR(split_at(Shape{2, 3}, -1), "split_at: axis -1 is out of range");
  EXPECT_GLIA_ERROR(split_at(Shape{}, 0), "of rank 0");
}

// 4 * 3 * 5 = 60 bytes; the limit is inclusive; an overflow of 64 bits is caught, also
// behind a zero dimension, whose tensor holds no data.
TEST(DeclaredSize, BytesOfTheNonZeroDimensionsWithinTheLimit) {
  DeclaredSize s = declared_size({3, 5}, 4, 60);
  EXPECT_TRUE(s.fits);
  EXPECT_FALSE(s.empty);
  EXPECT_EQ(s.bytes, 60u);
  EXPECT_EQ(s.data_bytes(), 60u);
  EXPECT_FALSE(declared_size({3, 5}, 4, 59).fits);
  const std::int64_t big = std::int64_t{1} << 40;  // 2^40 * 2^40 * 4 leaves 64 bits
  EXPECT_FALSE(declared_size({big, big}, 4, UINT64_MAX).fits);
  DeclaredSize empty = declared_size({big, 0, big}, 4, UINT64_MAX);
  EXPECT_TRUE(empty.empty);
  EXPECT_FALSE(empty.fits);
  DeclaredSize small_empty = declared_size({7, 0, 2}, 8, 1000);
  EXPECT_TRUE(small_empty.fits);
  EXPECT_EQ(small_empty.bytes, 112u);
  EXPECT_EQ(small_empty.data_bytes(), 0u);
}

}  // namespace
}  // namespace glia
