// Headers that declare hostile sizes: allocation bombs (dimensions far beyond the file),
// element counts whose product overflows 64 bits, and shapes with a zero dimension (valid
// and empty, unless the other dimensions could not even be indexed). Each reader answers
// with a glia::Error naming the file and the problem, before allocating anything large.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "datasets/file_util.hpp"
#include "expect_error.hpp"
#include "glia/datasets/idx.hpp"
#include "glia/datasets/npy.hpp"

namespace glia {
namespace {

using testing::Bytes;
using testing::concat;
using testing::TempDir;

// `read` must fail with every part of `parts` in its message, and allocate less than 1 MiB
// of tensor storage on the way (the files here are a few hundred bytes).
void expect_refused(const std::function<void()>& read, const std::vector<std::string>& parts) {
  const AllocationStats before = allocation_stats();
  testing::expect_error_parts(read, parts);
  EXPECT_LT(allocation_stats().bytes - before.bytes, 1 << 20) << parts.at(0);
}

std::string write(const TempDir& dir, const std::string& name, const Bytes& bytes) {
  testing::write_bytes(dir.file(name), bytes);
  return dir.file(name);
}

Bytes npy(const std::string& descr, const std::string& shape, std::size_t data_bytes) {
  const std::string dict =
      "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape + ", }\n";
  Bytes b{0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0};
  testing::append_le(b, static_cast<std::uint32_t>(dict.size()), 2);
  b.insert(b.end(), dict.begin(), dict.end());
  b.resize(b.size() + data_bytes, 0x5a);
  return b;
}

TEST(HostileSizes, IdxHeadersBeyondTheFileOrBeyond64Bits) {
  TempDir dir;
  const Bytes filler(88, 7);  // with the 12-byte header: a 100-byte file
  // 2^31 x 2^31 bytes: 2^62, more than memory can hold; refused before the file size.
  std::string path =
      write(dir, "bomb", concat(testing::idx_header(0x08, {1u << 31, 1u << 31}), filler));
  expect_refused(
      [&] { read_idx(path); },
      {path, "declares u8[2147483648][2147483648]: too many elements to hold in memory"});
  // 2^51 bytes would fit a 64-bit size, but not this file.
  path = write(dir, "big", concat(testing::idx_header(0x08, {1u << 31, 1u << 20}), filler));
  expect_refused([&] { read_idx(path); }, {path,
                                           "is truncated: the file is 100 bytes, but its header "
                                           "(u8[2147483648][1048576]) declares 2251799813685260"});
  // Eight dimensions of 2^32 - 1: the product overflows 64 bits many times over.
  const std::vector<std::uint32_t> max8(8, 0xFFFFFFFFu);
  path = write(dir, "overflow", testing::idx_header(0x0C, max8));
  expect_refused([&] { read_idx(path); }, {path, "too many elements to hold in memory"});
  // The same through gzip: the bound is what the compressed bytes can inflate to.
  path = write(dir, "bomb.gz", testing::gzip_stored(testing::idx_header(0x0E, {1u << 31, 4})));
  expect_refused([&] { read_idx(path); },
                 {path, "declares f64[2147483648][4] (68719476748 bytes), more than the"});
}

TEST(HostileSizes, IdxZeroDimensionsAreEmptyTensors) {
  TempDir dir;
  for (const std::vector<std::uint32_t>& dims :
       {std::vector<std::uint32_t>{0}, {0, 0xFFFFFFFFu}, {3, 0, 7}, {0xFFFFFFFFu, 2, 0}}) {
    const std::string path = write(dir, "empty", testing::idx_header(0x0D, dims));
    const Tensor t = read_idx(path);
    EXPECT_EQ(t.numel(), 0);
    EXPECT_EQ(t.shape().dims(), std::vector<std::int64_t>(dims.begin(), dims.end()));
  }
  // Empty, but with other dimensions whose product overflows: its strides could not be
  // computed, so it is refused too, whichever place the zero takes.
  for (const std::vector<std::uint32_t>& dims :
       {std::vector<std::uint32_t>{0, 0xFFFFFFFFu, 0xFFFFFFFFu, 0xFFFFFFFFu},
        {0xFFFFFFFFu, 0xFFFFFFFFu, 0, 0xFFFFFFFFu}}) {
    const std::string path = write(dir, "empty_overflow", testing::idx_header(0x08, dims));
    expect_refused([&] { read_idx(path); },
                   {path,
                    "its non-zero dimensions multiply past 2^60, too many to index even "
                    "in an empty tensor"});
  }
}

TEST(HostileSizes, NpyShapesBeyondTheFileOrBeyond64Bits) {
  TempDir dir;
  // (10**12,) floats: 4 TB declared, 8 bytes present.
  std::string path = write(dir, "bomb.npy", npy("<f4", "(1000000000000,)", 8));
  expect_refused([&] { read_npy(path); },
                 {path,
                  "has 8 data bytes after the header, but f32[1000000000000] needs "
                  "4000000000000"});
  Bytes bytes = npy("<f4", "(1000000000000,)", 8);
  expect_refused([&] { decode_npy(std::as_bytes(std::span<const std::uint8_t>(bytes)), "b"); },
                 {"decode_npy: 'b'", "f32[1000000000000] needs 4000000000000"});
  // 2^32 x 2^32 bytes = 2^64: wraps to 0 in 64-bit arithmetic, so it must be caught.
  path = write(dir, "wrap.npy", npy("|u1", "(4294967296, 4294967296)", 0));
  expect_refused([&] { read_npy(path); },
                 {path,
                  "the shape [4294967296][4294967296] in the header is too large: its "
                  "dimensions multiply past 2^63 bytes"});
  path = write(dir, "wrap8.npy", npy("<f8", "(2305843009213693952,)", 0));  // 2^61 * 8
  expect_refused([&] { read_npy(path); }, {path, "multiply past 2^63 bytes"});
}

TEST(HostileSizes, NpyZeroDimensionsAreEmptyTensors) {
  TempDir dir;
  for (const char* shape : {"(0,)", "(0, 1000000000000)", "(5, 0)", "(1000000, 0, 1000000)"}) {
    const std::string path = write(dir, "empty.npy", npy("<f4", shape, 0));
    const Tensor t = read_npy(path);
    EXPECT_EQ(t.numel(), 0) << shape;
    EXPECT_EQ(t.dtype(), DType::f32) << shape;
  }
  EXPECT_EQ(read_npy(write(dir, "e.npy", npy("<f4", "(0, 1000000000000)", 0))).shape(),
            (Shape{0, 1000000000000}));
  const std::string path =
      write(dir, "empty_overflow.npy", npy("<f4", "(4294967296, 0, 4294967296)", 0));
  expect_refused([&] { read_npy(path); },
                 {path,
                  "the shape [4294967296][0][4294967296] in the header is too large: its "
                  "non-zero dimensions multiply past 2^63 bytes"});
}

TEST(HostileSizes, NpzMembersClaimingMoreThanTheirDeflatedBytes) {
  TempDir dir;
  const std::vector<std::byte> encoded = encode_npy(Tensor::from<float>({1, 2, 3}));
  const auto* p = reinterpret_cast<const std::uint8_t*>(encoded.data());
  const Bytes content(p, p + encoded.size());
  // A deflated member whose directory says it inflates to 4 GB: refused before the buffer
  // for it is allocated (deflate cannot expand a few hundred bytes that much).
  testing::ZipMember bomb{"x.npy", testing::deflate_stored(content), 8, 0xFFFFFFF0u,
                          testing::crc32_of(content)};
  std::string path = write(dir, "bomb.npz", testing::zip_archive({bomb}));
  expect_refused([&] { read_npz(path); },
                 {path, "member 'x.npy' claims 4294967280 bytes, more than its",
                  "deflated bytes can hold: the archive is corrupt"});
  // The same member with its true size reads (the deflate path works).
  bomb.size = static_cast<std::uint32_t>(content.size());
  path = write(dir, "ok.npz", testing::zip_archive({bomb}));
  EXPECT_TRUE(equal(read_npz(path).at("x"), Tensor::from<float>({1, 2, 3})));
  // A stored member whose .npy header declares (10**12,): caught by decode_npy.
  const Bytes inner = npy("<f4", "(1000000000000,)", 4);
  path = write(dir, "inner.npz", testing::zip_archive({testing::stored_member("y.npy", inner)}));
  expect_refused([&] { read_npz(path); },
                 {path, "member 'y.npy'", "f32[1000000000000] needs 4000000000000"});
}

}  // namespace
}  // namespace glia
