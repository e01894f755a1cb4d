// Shape's helpers outside the class: split_at, a shape seen as (outer, size, inner)
// around one axis.
#include "core/test_util.hpp"

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

}  // namespace
}  // namespace glia
