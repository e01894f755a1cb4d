// The IDX reader and writer: round trips for every writable type, hand-made files for
// every element type code, each malformed-file case as a glia::Error naming the file,
// and gzip files (good, multi-member, truncated, corrupt) built by hand.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>

#include "datasets/file_util.hpp"
#include "glia/datasets/idx.hpp"

namespace glia {
namespace {

using ::testing::AllOf;
using testing::Bytes;
using testing::concat;
using testing::gzip_stored;
using ::testing::HasSubstr;
using testing::idx_header;
using testing::TempDir;
using ::testing::ThrowsMessage;
using testing::write_bytes;

Bytes read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// read_idx on a file holding `bytes`, which must fail with a message naming the file and
// containing `what`.
void expect_read_error(const TempDir& dir, const Bytes& bytes, const std::string& what) {
  const std::string path = dir.file("bad.idx");
  write_bytes(path, bytes);
  EXPECT_THAT([&] { read_idx(path); },
              ThrowsMessage<Error>(AllOf(HasSubstr("'" + path + "'"), HasSubstr(what))));
}

TEST(Idx, RoundTripsEveryWritableTypePlainAndGzip) {
  TempDir dir;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<Tensor> tensors{
      Tensor::from<std::uint8_t>({0, 1, 127, 128, 254, 255}, Shape{2, 3}),
      Tensor::from<std::int32_t>({0, -1, std::numeric_limits<std::int32_t>::min(),
                                  std::numeric_limits<std::int32_t>::max(), 65536, -300},
                                 Shape{3, 1, 2}),
      Tensor::from<float>(
          {0.0F, -0.0F, 1.5F, -3.25e-40F, std::numeric_limits<float>::infinity(), nan, 1e30F},
          Shape{7}),
      Tensor::from<double>({3.141592653589793, -2.5e-310, 1e300, -0.0}, Shape{1, 2, 1, 2}),
      Tensor(u8, Shape{0, 28, 28}),
      Tensor(f32, Shape{1, 1, 1, 1, 1, 1, 1, 2}),  // rank 8, the largest IDX rank read here
  };
  for (const std::string name : {"t.idx", "t.idx.gz"}) {
    for (const Tensor& t : tensors) {
      SCOPED_TRACE(name + " " + t.type().to_string());
      write_idx(dir.file(name), t);
      Tensor back = read_idx(dir.file(name));
      EXPECT_TRUE(equal(back, t)) << back << " vs " << t;
      EXPECT_FALSE(std::filesystem::exists(dir.file(name) + ".tmp"));
    }
  }
}

TEST(Idx, WritesTheFormatByteForByte) {
  TempDir dir;
  write_idx(dir.file("a"), Tensor::from<std::int32_t>({1, -2}, Shape{1, 2}));
  EXPECT_EQ(read_bytes(dir.file("a")),
            (Bytes{0, 0, 0x0C, 2, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 1, 0xFF, 0xFF, 0xFF, 0xFE}));
  write_idx(dir.file("b"), Tensor::from<float>({1.0F, -2.0F}));
  EXPECT_EQ(read_bytes(dir.file("b")),
            (Bytes{0, 0, 0x0D, 1, 0, 0, 0, 2, 0x3F, 0x80, 0, 0, 0xC0, 0, 0, 0}));
  write_idx(dir.file("c"), Tensor::from<double>({1.0}));
  EXPECT_EQ(read_bytes(dir.file("c")),
            (Bytes{0, 0, 0x0E, 1, 0, 0, 0, 1, 0x3F, 0xF0, 0, 0, 0, 0, 0, 0}));
  write_idx(dir.file("d"), Tensor::from<std::uint8_t>({7, 9, 11}, Shape{3, 1}));
  EXPECT_EQ(read_bytes(dir.file("d")), (Bytes{0, 0, 0x08, 2, 0, 0, 0, 3, 0, 0, 0, 1, 7, 9, 11}));
  // A .gz name gives a gzip file, whose header says deflate (method 8).
  write_idx(dir.file("e.gz"), Tensor(u8, Shape{1000}));
  Bytes gz = read_bytes(dir.file("e.gz"));
  ASSERT_GE(gz.size(), 3U);
  EXPECT_EQ(gz[0], 0x1f);
  EXPECT_EQ(gz[1], 0x8b);
  EXPECT_EQ(gz[2], 8);
  EXPECT_LT(gz.size(), 200U);  // 1,000 zeros compress well
}

TEST(Idx, ReadsHandMadeFilesOfEveryTypeCode) {
  TempDir dir;
  auto read = [&](const Bytes& bytes) {
    write_bytes(dir.file("f"), bytes);
    return read_idx(dir.file("f"));
  };
  Tensor a = read(concat(idx_header(0x08, {2, 2}), {0, 5, 200, 255}));
  EXPECT_TRUE(equal(a, Tensor::from<std::uint8_t>({0, 5, 200, 255}, Shape{2, 2})));
  Tensor b = read(concat(idx_header(0x09, {3}), {0xFF, 0x80, 0x7F}));
  EXPECT_TRUE(equal(b, Tensor::from<std::int32_t>({-1, -128, 127})));
  Tensor c = read(concat(idx_header(0x0B, {2}), {0xFF, 0xFE, 0x12, 0x34}));
  EXPECT_TRUE(equal(c, Tensor::from<std::int32_t>({-2, 0x1234})));
  Tensor d = read(concat(idx_header(0x0C, {2}), {0x80, 0, 0, 0, 0, 1, 0, 0}));
  EXPECT_TRUE(
      equal(d, Tensor::from<std::int32_t>({std::numeric_limits<std::int32_t>::min(), 65536})));
  // 0x40490FDB is pi rounded to f32; 0xC0000000 is -2.
  Tensor e = read(concat(idx_header(0x0D, {1, 2}), {0x40, 0x49, 0x0F, 0xDB, 0xC0, 0, 0, 0}));
  EXPECT_TRUE(equal(e, Tensor::from<float>({static_cast<float>(M_PI), -2.0F}, Shape{1, 2})));
  Tensor f = read(concat(idx_header(0x0E, {1}), {0xC0, 0x09, 0x21, 0xFB, 0x54, 0x44, 0x2D, 0x18}));
  EXPECT_TRUE(equal(f, Tensor::from<double>({-M_PI})));
  // A dimension of zero: no data bytes at all.
  Tensor g = read(idx_header(0x0D, {4, 0}));
  EXPECT_EQ(g.type(), (TensorType{f32, {4, 0}}));
}

TEST(Idx, ChecksTheHeaderAndSizeOfPlainFiles) {
  TempDir dir;
  const Bytes good = concat(idx_header(0x08, {2, 3}), {1, 2, 3, 4, 5, 6});
  expect_read_error(dir, {}, "is truncated: the file is 0 bytes, shorter than the 4-byte");
  expect_read_error(dir, {0, 0, 8}, "the file is 3 bytes, shorter than the 4-byte IDX magic");
  expect_read_error(dir, {0, 0, 8, 3, 0, 0, 0, 1, 0, 0},
                    "the file is 10 bytes, but a rank-3 IDX header needs 16");
  expect_read_error(dir, Bytes(good.begin(), good.end() - 2),
                    "is truncated: the file is 16 bytes, but its header (u8[2][3]) declares 18 "
                    "(2 missing)");
  expect_read_error(dir, concat(good, {9, 9, 9}),
                    "has 3 trailing bytes: the file is 21 bytes, but its header (u8[2][3]) "
                    "declares 18");
  Bytes wrong_magic = good;
  wrong_magic[0] = 0x01;
  expect_read_error(dir, wrong_magic, "is not an IDX file: wrong magic number 0x01000802");
  Bytes text{'h', 'e', 'l', 'l', 'o', '\n'};
  expect_read_error(dir, text, "wrong magic number 0x68656C6C");
  Bytes wrong_type = good;
  wrong_type[2] = 0x07;
  expect_read_error(dir, wrong_type, "unknown element type code 0x07");
  expect_read_error(dir, {0, 0, 8, 0}, "has rank 0 in its magic number 0x00000800");
  expect_read_error(dir, idx_header(0x08, {1, 1, 1, 1, 1, 1, 1, 1, 1}), "has rank 9");
  // A header that declares more than memory can hold is refused, not allocated.
  expect_read_error(dir, idx_header(0x0E, {0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF}),
                    "declares f64[4294967295][4294967295][4294967295]: too many elements");
  // Each dimension counts: f32[2][3] needs 24 data bytes, not 6.
  expect_read_error(dir, concat(idx_header(0x0D, {2, 3}), {1, 2, 3, 4, 5, 6}),
                    "is truncated: the file is 18 bytes, but its header (f32[2][3]) declares 36");
}

TEST(Idx, MissingFilesAndFoldersAreErrors) {
  TempDir dir;
  EXPECT_THAT(
      [&] { read_idx(dir.file("nope")); },
      ThrowsMessage<Error>(HasSubstr("read_idx: '" + dir.file("nope") + "' does not exist")));
  EXPECT_THAT([&] { read_idx(dir.path()); },
              ThrowsMessage<Error>(HasSubstr("is a folder, not an IDX file")));
}

TEST(Idx, ReadsGzipByContentWhateverTheName) {
  TempDir dir;
  const Bytes plain = concat(idx_header(0x0B, {2}), {0x01, 0x02, 0xFF, 0xFF});
  const Tensor want = Tensor::from<std::int32_t>({0x0102, -1});
  write_bytes(dir.file("a.gz"), gzip_stored(plain));
  EXPECT_TRUE(equal(read_idx(dir.file("a.gz")), want));
  write_bytes(dir.file("b"), gzip_stored(plain));  // gzip without the .gz name
  EXPECT_TRUE(equal(read_idx(dir.file("b")), want));
  write_bytes(dir.file("c.gz"), plain);  // plain bytes under a .gz name
  EXPECT_TRUE(equal(read_idx(dir.file("c.gz")), want));
  // Two members one after the other (as `cat a.gz b.gz` gives): header in one, data in the
  // other; a stream split inside the header too.
  const Bytes header(plain.begin(), plain.begin() + 8), data(plain.begin() + 8, plain.end());
  write_bytes(dir.file("d.gz"), concat(gzip_stored(header), gzip_stored(data)));
  EXPECT_TRUE(equal(read_idx(dir.file("d.gz")), want));
  write_bytes(dir.file("e.gz"), concat(gzip_stored(Bytes(plain.begin(), plain.begin() + 3)),
                                       gzip_stored(Bytes(plain.begin() + 3, plain.end()))));
  EXPECT_TRUE(equal(read_idx(dir.file("e.gz")), want));
}

TEST(Idx, ChecksGzipFiles) {
  TempDir dir;
  const Bytes plain = concat(idx_header(0x08, {2, 2}), {1, 2, 3, 4});
  const Bytes gz = gzip_stored(plain);
  // The trailer's CRC-32 no longer matches the data.
  Bytes bad_crc = gz;
  bad_crc[bad_crc.size() - 8] ^= 0x01;
  expect_read_error(dir, bad_crc,
                    "is a corrupt gzip file: corrupt gzip data (incorrect data check)");
  // Block type 3 does not exist in deflate.
  Bytes bad_block = gz;
  bad_block[10] = 0x07;
  expect_read_error(dir, bad_block, "corrupt gzip data (invalid block type)");
  // The compressed file is cut short: inside the data, or before the trailer.
  expect_read_error(dir, Bytes(gz.begin(), gz.begin() + 20), "the gzip stream is truncated");
  expect_read_error(dir, Bytes(gz.begin(), gz.end() - 4), "the gzip stream is truncated");
  // A complete gzip stream whose content is shorter or longer than its IDX header says.
  expect_read_error(dir, gzip_stored(Bytes(plain.begin(), plain.end() - 1)),
                    "is truncated: the decompressed data is 15 bytes, but its header declares 16");
  expect_read_error(dir, gzip_stored(concat(plain, {5})),
                    "has trailing bytes: the decompressed data is longer than the 16 bytes its "
                    "header (u8[2][2]) declares");
  expect_read_error(dir, gzip_stored({0, 0, 8}),
                    "the decompressed data is 3 bytes, shorter than the 4-byte IDX magic number");
  expect_read_error(dir, gzip_stored({1, 2, 3, 4}), "wrong magic number 0x01020304");
  // Bytes after the stream that are not another gzip member.
  expect_read_error(dir, concat(gz, {0, 0, 0}),
                    "3 bytes of garbage after the end of the gzip stream");
  // A header declaring far more than a gzip file of this size can inflate to is corrupt:
  // refused before anything is allocated.
  expect_read_error(
      dir, gzip_stored(idx_header(0x08, {4000000000u})),
      "declares u8[4000000000] (4000000008 bytes), more than the 31992 bytes at most that "
      "this gzip file can inflate to: the header is corrupt");
}

TEST(Idx, WriteChecksItsArguments) {
  TempDir dir;
  const std::string path = dir.file("w");
  EXPECT_THAT([&] { write_idx(path, Tensor(DType::bf16, Shape{2})); },
              ThrowsMessage<Error>(AllOf(HasSubstr("'" + path + "'"),
                                         HasSubstr("bf16[2] has no IDX element type"))));
  EXPECT_THAT([&] { write_idx(path, Tensor::from<bool>({true})); },
              ThrowsMessage<Error>(HasSubstr("has no IDX element type")));
  EXPECT_THAT([&] { write_idx(path, Tensor::scalar(1.0)); },
              ThrowsMessage<Error>(HasSubstr("has rank 0; IDX holds ranks 1 to 8")));
  EXPECT_THAT([&] { write_idx(path, Tensor()); },
              ThrowsMessage<Error>(HasSubstr("the tensor is undefined")));
  const std::string nowhere = dir.file("missing/folder/x.idx");
  EXPECT_THAT([&] { write_idx(nowhere, Tensor(u8, Shape{1})); },
              ThrowsMessage<Error>(HasSubstr("write_idx: cannot create '" + nowhere + ".tmp'")));
  EXPECT_FALSE(std::filesystem::exists(path));
}

}  // namespace
}  // namespace glia
