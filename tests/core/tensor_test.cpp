#include <cstdint>
#include <cstring>
#include <limits>

#include "core/test_util.hpp"
#include "expect_error.hpp"
#include "glia/core/buffer.hpp"

namespace glia {
namespace {

TEST(Tensor, CreationAndAccess) {
  Tensor z = Tensor::zeros({2, 3});
  EXPECT_EQ(z.dtype(), f32);
  EXPECT_EQ(z.shape(), (Shape{2, 3}));
  EXPECT_EQ(z.to_vector<float>(), std::vector<float>(6, 0.0f));
  EXPECT_EQ(Tensor::ones({2}, i32).to_vector<int>(), (std::vector<int>{1, 1}));
  EXPECT_EQ(Tensor::full({3}, 2.5, f64).to_vector<double>(), (std::vector<double>{2.5, 2.5, 2.5}));
  EXPECT_EQ(Tensor::scalar(7, i64).item<std::int64_t>(), 7);
  EXPECT_EQ(Tensor::from<std::int32_t>({1, 2, 3, 4, 5, 6}, Shape{3, 2}).shape(), (Shape{3, 2}));
  EXPECT_EQ(Tensor::from<bool>({true, false}).dtype(), boolean);
  EXPECT_EQ(Tensor::from<float>({1.5f, -2}).to_vector<int>(), (std::vector<int>{1, -2}));
}

TEST(Tensor, StorageIs64ByteAlignedAndShared) {
  Tensor a = Tensor::zeros({3}, u8);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(a.raw_data()) % 64, 0u);
  Tensor b = a;
  b.data<std::uint8_t>()[0] = 9;
  EXPECT_EQ(a.to_vector<int>()[0], 9);
  Tensor c = a.clone();
  c.data<std::uint8_t>()[0] = 1;
  EXPECT_EQ(a.to_vector<int>()[0], 9);
  EXPECT_FALSE(c.shares_storage_with(a));
  EXPECT_TRUE(a.reshape({3, 1}).shares_storage_with(a));
}

TEST(Tensor, Iota) {
  EXPECT_EQ(Tensor::iota({2, 3}).to_vector<int>(), (std::vector<int>{0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(Tensor::iota({2, 3}, 0).to_vector<int>(), (std::vector<int>{0, 0, 0, 1, 1, 1}));
  EXPECT_EQ(Tensor::iota({2, 3}, -1, f32).to_vector<float>(),
            (std::vector<float>{0, 1, 2, 0, 1, 2}));
  EXPECT_EQ(Tensor::iota({0, 3}).numel(), 0);
}

TEST(Tensor, CastConvertsEveryPair) {
  Tensor t = Tensor::from<double>({-1.5, 0, 2.25, 300});
  EXPECT_EQ(t.cast(i32).to_vector<int>(), (std::vector<int>{-1, 0, 2, 300}));
  EXPECT_EQ(t.cast(boolean).to_vector<int>(), (std::vector<int>{1, 0, 1, 1}));
  EXPECT_EQ(t.cast(f16).to_vector<double>(), (std::vector<double>{-1.5, 0, 2.25, 300}));
  EXPECT_EQ(t.cast(bf16).to_vector<double>(), (std::vector<double>{-1.5, 0, 2.25, 300}));
  EXPECT_EQ(Tensor::from<bool>({true, false}).cast(f32).to_vector<float>(),
            (std::vector<float>{1, 0}));
}

TEST(Tensor, EqualAndAllclose) {
  Tensor a = Tensor::from<float>({1, 2, 3});
  EXPECT_TRUE(equal(a, a.clone()));
  EXPECT_FALSE(equal(a, a.cast(f64)));
  EXPECT_TRUE(allclose(a, Tensor::from<double>({1, 2, 3.0000001})));
  EXPECT_FALSE(allclose(a, Tensor::from<float>({1, 2, 3.1f})));
  EXPECT_FALSE(allclose(a, Tensor::from<float>({1, 2})));
}

TEST(Tensor, PrintsLikeNx) {
  Tensor t = Tensor::from<float>({1, 2, 3, 4, 5, 6}, Shape{2, 3});
  EXPECT_EQ(t.to_string(),
            "#Tensor<\n"
            "  f32[2][3]\n"
            "  [\n"
            "    [1.0, 2.0, 3.0],\n"
            "    [4.0, 5.0, 6.0]\n"
            "  ]\n"
            ">");
  EXPECT_EQ(Tensor::scalar(0.5).to_string(), "#Tensor<\n  f32\n  0.5\n>");
  EXPECT_EQ(Tensor::from<std::int64_t>({-3, 9000000000}).to_string(),
            "#Tensor<\n  i64[2]\n  [-3, 9000000000]\n>");
  EXPECT_EQ(Tensor::from<bool>({true, false}).to_string(),
            "#Tensor<\n  bool[2]\n  [true, false]\n>");
  EXPECT_EQ(Tensor::from<float>({1.0f / 0.0f, -1.0f / 0.0f}).to_string(),
            "#Tensor<\n  f32[2]\n  [Inf, -Inf]\n>");
  EXPECT_EQ(Tensor::zeros({0}).to_string(), "#Tensor<\n  f32[0]\n  []\n>");
}

TEST(Tensor, TruncatesLargeTensors) {
  std::string s = Tensor::iota({1000}, 0, i32).to_string(5);
  EXPECT_EQ(s, "#Tensor<\n  i32[1000]\n  [0, 1, 2, 3, 4, ...]\n>");
  std::string m = Tensor::zeros({4, 3}, i32).to_string(4);
  EXPECT_THAT(m, ::testing::HasSubstr("[0, ...]"));
  EXPECT_THAT(m, ::testing::HasSubstr("    ...\n"));
}

TEST(Tensor, BadInput) {
  EXPECT_GLIA_ERROR(Tensor::from<float>({1, 2, 3}, Shape{2, 2}),
                    "3 values do not fill shape [2][2]");
  Tensor t = Tensor::zeros({2});
  EXPECT_GLIA_ERROR(t.data<double>(), "holds f32, not f64");
  EXPECT_GLIA_ERROR(t.item<float>(), "expected one element");
  EXPECT_GLIA_ERROR(t.reshape({3}), "cannot reshape f32[2] to [3]");
  EXPECT_GLIA_ERROR(t.element(2), "out of range");
  EXPECT_GLIA_ERROR(Tensor().data<float>(), "undefined tensor");
}

TEST(Tensor, CountsHostStorageAllocations) {
  AllocationStats before = allocation_stats();
  Tensor a(f32, {100});  // 400 bytes, rounded up to 448
  Tensor b = Tensor::uninitialized(u8, {0});
  Tensor c = a.clone();
  Tensor d = a;
  Tensor e = a.reshape({4, 25});
  Tensor f = a.to_host();
  AllocationStats after = allocation_stats();
  EXPECT_EQ(after.count - before.count, 3);
  EXPECT_EQ(after.bytes - before.bytes, 448 + 64 + 448);
  EXPECT_EQ(a.device(), Device::host());
  EXPECT_TRUE(f.shares_storage_with(a));
  EXPECT_EQ(a.buffer()->size(), 448u);
  EXPECT_EQ(a.byte_offset(), 0u);
}

TEST(Tensor, UniqueStorageOnTheHost) {
  Tensor a = Tensor::zeros({2});
  EXPECT_TRUE(a.unique_storage());
  Tensor b = a.reshape({2, 1});
  EXPECT_FALSE(a.unique_storage());
  b = Tensor();
  EXPECT_TRUE(a.unique_storage());
  EXPECT_FALSE(Tensor().unique_storage());
}

TEST(Tensor, WrapsSharedStorageWithoutAllocating) {
  bool freed = false;
  auto* memory = static_cast<std::byte*>(std::aligned_alloc(64, 64));
  std::shared_ptr<std::byte> storage(memory, [&](std::byte* p) {
    freed = true;
    std::free(p);
  });
  std::int32_t values[3] = {4, 5, 6};
  std::memcpy(memory, values, sizeof values);
  AllocationStats before = allocation_stats();
  Tensor t = Tensor::wrap(i32, {3}, storage);
  EXPECT_EQ(allocation_stats().count, before.count);
  EXPECT_EQ(t.raw_data(), memory);
  EXPECT_EQ(t.to_vector<int>(), (std::vector<int>{4, 5, 6}));
  EXPECT_FALSE(t.unique_storage());  // `storage` is still held here
  EXPECT_TRUE(t.shares_storage_with(Tensor::wrap(u8, {12}, storage)));
  storage.reset();
  EXPECT_TRUE(t.unique_storage());
  EXPECT_FALSE(freed);
  t = Tensor();
  EXPECT_TRUE(freed);
  EXPECT_GLIA_ERROR(Tensor::wrap(f32, {1}, std::shared_ptr<std::byte>()), "null storage");
}

TEST(Tensor, WrapsPartOfAHostBuffer) {
  bool freed = false;
  auto* memory = static_cast<float*>(std::aligned_alloc(64, 128));
  for (int i = 0; i < 32; ++i) memory[i] = float(i);
  auto owner = std::shared_ptr<float>(memory, [&](float* p) {
    freed = true;
    std::free(p);
  });
  AllocationStats before = allocation_stats();
  auto buffer = Buffer::adopt(Device::host(), memory, 128, std::move(owner));
  Tensor rows = Tensor::wrap(f32, {2, 3}, buffer, 4 * sizeof(float));
  Tensor tail = Tensor::wrap(f32, {2}, buffer, 30 * sizeof(float));
  EXPECT_EQ(rows.to_vector<float>(), (std::vector<float>{4, 5, 6, 7, 8, 9}));
  EXPECT_EQ(tail.to_vector<float>(), (std::vector<float>{30, 31}));
  EXPECT_EQ(rows.byte_offset(), 16u);
  EXPECT_TRUE(rows.shares_storage_with(tail));
  EXPECT_EQ(allocation_stats().count, before.count);  // adopted and wrapped, not allocated
  buffer.reset();
  rows = Tensor();
  EXPECT_FALSE(freed);  // `tail` still holds the buffer, which holds the owner
  EXPECT_EQ(tail.to_vector<float>(), (std::vector<float>{30, 31}));
  tail = Tensor();
  EXPECT_TRUE(freed);
}

TEST(Tensor, BorrowDoesNotOwn) {
  alignas(64) double values[4] = {1, 2, 3, 4};
  AllocationStats before = allocation_stats();
  Tensor t = Tensor::borrow(f64, {2, 2}, values);
  Tensor copy = t;
  AllocationStats after = allocation_stats();
  EXPECT_EQ(after.count, before.count);
  EXPECT_EQ(after.bytes, before.bytes);
  EXPECT_EQ(t.raw_data(), values);
  EXPECT_EQ(t.device(), Device::host());
  t.data<double>()[3] = 9;
  EXPECT_EQ(values[3], 9);
  EXPECT_EQ(copy.to_vector<double>(), (std::vector<double>{1, 2, 3, 9}));
  EXPECT_FALSE(t.unique_storage());  // never donated, not even when alone
  copy = Tensor();
  EXPECT_FALSE(t.unique_storage());
  EXPECT_TRUE(t.defined());
  EXPECT_EQ(t.buffer(), nullptr);
  EXPECT_TRUE(t.shares_storage_with(Tensor::borrow(u8, {8}, values)));
  EXPECT_FALSE(t.shares_storage_with(Tensor::borrow(f64, {1}, values + 1)));
  EXPECT_FALSE(t.shares_storage_with(Tensor::zeros({4}, f64)));
  Tensor owned = t.clone();
  EXPECT_TRUE(owned.unique_storage());
  EXPECT_TRUE(equal(owned, t));
  EXPECT_EQ(Tensor::borrow(f32, {0}, nullptr).numel(), 0);
  EXPECT_GLIA_ERROR(Tensor::borrow(f32, {1}, nullptr), "null data");
}

}  // namespace
}  // namespace glia

namespace glia {
namespace {

// Host helpers: rows (a view), slice (a copy along any axis), argmax; values by hand.
TEST(TensorHost, RowsAreAViewOfTheBatch) {
  Tensor t = Tensor::iota(Shape{4, 3}, std::nullopt, DType::f32);  // 0..11
  Tensor r = t.rows(1, 3);
  EXPECT_EQ(r.shape(), (Shape{2, 3}));
  EXPECT_EQ(r.to_vector<float>(), (std::vector<float>{3, 4, 5, 6, 7, 8}));
  EXPECT_TRUE(r.shares_storage_with(t));
  EXPECT_EQ(r.byte_offset(), 3 * sizeof(float));
  EXPECT_EQ(t.rows(4, 4).shape(), (Shape{0, 3}));
  t.data<float>()[4] = 40;  // the view sees writes to the storage
  EXPECT_EQ(r.to_vector<float>()[1], 40.0f);
  EXPECT_FALSE(r.unique_storage());
  testing::expect_error([&] { t.rows(2, 5); }, "Tensor::rows: [2, 5) is not a range of axis 0");
  testing::expect_error([&] { t.rows(3, 2); }, "0 <= begin <= end <= 4");
  testing::expect_error([&] { Tensor::scalar(1).rows(0, 1); }, "has no rows");
}

TEST(TensorHost, SliceCopiesAlongAnyAxis) {
  Tensor t = Tensor::iota(Shape{2, 3, 4}, std::nullopt, DType::i32);  // 0..23
  Tensor mid = t.slice(1, 1, 3);
  EXPECT_EQ(mid.shape(), (Shape{2, 2, 4}));
  EXPECT_EQ(mid.to_vector<int>(), (std::vector<int>{4, 5, 6, 7, 8, 9, 10, 11,  //
                                                    16, 17, 18, 19, 20, 21, 22, 23}));
  EXPECT_FALSE(mid.shares_storage_with(t));
  EXPECT_EQ(t.slice(-1, 2, 3).to_vector<int>(), (std::vector<int>{2, 6, 10, 14, 18, 22}));
  EXPECT_EQ(t.slice(0, 1, 2).to_vector<int>(), t.rows(1, 2).to_vector<int>());
  EXPECT_EQ(t.slice(2, 1, 1).shape(), (Shape{2, 3, 0}));
  testing::expect_error([&] { t.slice(3, 0, 1); }, "Tensor::slice: axis 3 is out of range");
  testing::expect_error([&] { t.slice(2, 0, 5); }, "[0, 5) is not a range of axis 2");
}

TEST(TensorHost, ArgmaxPicksTheFirstMaximumAndNaN) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Tensor p = Tensor::from<float>({0.1f, 0.7f, 0.2f,  //
                                  0.5f, 0.5f, 0.0f,  //
                                  0.3f, nan, 0.9f,   //
                                  -1.f, -3.f, -2.f},
                                 Shape{4, 3});
  Tensor classes = p.argmax();
  EXPECT_EQ(classes.dtype(), DType::i64);
  EXPECT_EQ(classes.to_vector<std::int64_t>(), (std::vector<std::int64_t>{1, 0, 1, 0}));
  EXPECT_EQ(p.argmax(0).to_vector<std::int64_t>(), (std::vector<std::int64_t>{1, 2, 2}));
  Tensor ints = Tensor::from<std::int32_t>({3, 9, 9, 1}, Shape{2, 2});
  EXPECT_EQ(ints.argmax(-1).to_vector<std::int64_t>(), (std::vector<std::int64_t>{1, 0}));
  EXPECT_EQ(Tensor::from<float>({2, 5, 1}).argmax().rank(), 0);
  testing::expect_error([&] { Tensor::scalar(1).argmax(); }, "has no axis");
  testing::expect_error([&] { Tensor::zeros(Shape{2, 0}).argmax(); }, "is empty");
}

}  // namespace
}  // namespace glia
