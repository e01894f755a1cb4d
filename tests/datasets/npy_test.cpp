// The .npy reader and writer: round trips of every dtype and rank, headers built by hand
// (numpy's exact header text, versions 2.0 and 3.0), every malformed-file error by its
// message, and files exchanged with numpy itself when /usr/bin/python3 has it.
#include "glia/datasets/npy.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <map>

#include "datasets/file_util.hpp"
#include "expect_error.hpp"
#include "npy_header.hpp"

namespace glia {
namespace {

using testing::Bytes;
using testing::expect_error;
using testing::TempDir;

// A .npy file by hand: magic, version, little-endian header length, dict text, data.
Bytes npy_file(const std::string& dict, const Bytes& data, int major = 1) {
  Bytes b{0x93, 'N', 'U', 'M', 'P', 'Y', static_cast<std::uint8_t>(major), 0};
  testing::append_le(b, static_cast<std::uint32_t>(dict.size()), major == 1 ? 2 : 4);
  b.insert(b.end(), dict.begin(), dict.end());
  b.insert(b.end(), data.begin(), data.end());
  return b;
}

Bytes file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

Tensor decode(const Bytes& b) {
  return decode_npy(std::as_bytes(std::span<const std::uint8_t>(b.data(), b.size())), "test");
}

// Values of each dtype, some of them extreme, of `shape`.
std::vector<Tensor> samples(const Shape& shape) {
  std::vector<double> v;
  for (std::int64_t i = 0; i < shape.numel(); ++i)
    v.push_back(static_cast<double>((i * 37) % 23) - 11.5);
  Tensor base = Tensor::from<double>(v, shape);
  return {base.cast(DType::f32),     base,
          base.cast(DType::f16),     base.cast(DType::i32),
          base.cast(DType::i64),     base.cast(DType::u8),
          base.cast(DType::boolean), base.cast(DType::u32)};
}

TEST(Npy, RoundTripsEveryDTypeAndRankInFilesAndMemory) {
  TempDir dir;
  for (const Shape& shape : {Shape{}, Shape{5}, Shape{2, 3}, Shape{2, 1, 3}, Shape{2, 3, 1, 2},
                             Shape{0}, Shape{3, 0, 2}}) {
    for (const Tensor& t : samples(shape)) {
      SCOPED_TRACE(t.type().to_string());
      const std::string path = dir.file("t.npy");
      write_npy(path, t);
      Tensor back = read_npy(path);
      EXPECT_TRUE(equal(back, t));
      std::vector<std::byte> bytes = encode_npy(t);
      EXPECT_EQ(bytes.size(), file_bytes(path).size());
      EXPECT_TRUE(equal(decode_npy(bytes), t));
      EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
    }
  }
  // Exact special values.
  const float inf = std::numeric_limits<float>::infinity();
  Tensor special = Tensor::from<float>({-0.0f, inf, -inf, std::numeric_limits<float>::quiet_NaN(),
                                        std::numeric_limits<float>::denorm_min()});
  EXPECT_TRUE(equal(decode_npy(encode_npy(special)), special));
}

// The header text numpy writes, padded with spaces to 128 bytes: 10 preamble + 117 + '\n'.
TEST(Npy, WritesNumpysHeaderByteForByte) {
  TempDir dir;
  Tensor t = Tensor::from<float>({1, 2, 3, 4, 5, 6}, Shape{2, 3});
  write_npy(dir.file("a.npy"), t);
  Bytes b = file_bytes(dir.file("a.npy"));
  const std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
  ASSERT_EQ(b.size(), 128u + 24u);
  EXPECT_EQ(Bytes(b.begin(), b.begin() + 10), (Bytes{0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, 118, 0}));
  ASSERT_EQ(dict.size(), 59u);
  EXPECT_EQ(std::string(b.begin() + 10, b.begin() + 69), dict);
  EXPECT_EQ(std::string(b.begin() + 69, b.begin() + 127), std::string(58, ' '));
  EXPECT_EQ(b[127], '\n');
  // 1.0f = 00 00 80 3f, little-endian.
  EXPECT_EQ(Bytes(b.begin() + 128, b.begin() + 132), (Bytes{0, 0, 0x80, 0x3f}));
  // A 1-tuple has its comma; a scalar an empty tuple; one-byte dtypes '|'.
  std::vector<std::byte> u = encode_npy(Tensor::from<std::uint8_t>({1, 2, 3, 4, 5}));
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(u.data()) + 10, 57),
            "{'descr': '|u1', 'fortran_order': False, 'shape': (5,), }");
  std::vector<std::byte> s = encode_npy(Tensor::scalar(2.5, DType::f64));
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(s.data()) + 10, 55),
            "{'descr': '<f8', 'fortran_order': False, 'shape': (), }");
  EXPECT_EQ(s.size(), 128u + 8u);
  EXPECT_EQ(static_cast<char>(s[127]), '\n');
  // A header over version 1.0's 65535 bytes ("1, " per axis) is written as version 2.0
  // (checked on the header alone: glia's Shape is slow to make at rank 22000).
  std::string v2 = detail::npy_header_bytes("<f4", std::vector<std::int64_t>(22000, 1));
  EXPECT_EQ(v2.substr(0, 8), std::string("\x93NUMPY\x02\x00", 8));
  Bytes length(v2.begin() + 8, v2.begin() + 12);
  const std::size_t hlen = length[0] | length[1] << 8 | length[2] << 16 | length[3] << 24;
  EXPECT_GT(hlen, 65535u);
  EXPECT_EQ(v2.size(), 12 + hlen);
  EXPECT_EQ(v2.size() % 64, 0u);
  EXPECT_EQ(v2.substr(12, 56), "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 1,");
  EXPECT_EQ(v2.back(), '\n');
}

TEST(Npy, ReadsHandMadeHeadersOfEveryVersionAndSpelling) {
  Bytes data{1, 0, 0, 0, 2, 0, 0, 0, 0xff, 0xff, 0xff, 0xff};  // i32 1, 2, -1
  const std::vector<double> want = {1, 2, -1};
  for (int major : {1, 2, 3}) {
    Tensor t = decode(
        npy_file("{'descr': '<i4', 'fortran_order': False, 'shape': (3,), }\n", data, major));
    EXPECT_EQ(t.type(), (TensorType{DType::i32, Shape{3}}));
    EXPECT_EQ(t.to_vector<double>(), want);
  }
  // Keys in another order, double quotes, odd spaces, no trailing comma, padding.
  Tensor t =
      decode(npy_file("{ \"shape\" :(1,3) ,'fortran_order':False,\"descr\":'<i4'}   \n", data));
  EXPECT_EQ(t.shape(), (Shape{1, 3}));
  EXPECT_EQ(t.to_vector<double>(), want);
  // Each dtype code.
  EXPECT_EQ(decode(npy_file("{'descr': '<f8', 'fortran_order': False, 'shape': (), }",
                            {0, 0, 0, 0, 0, 0, 0xf0, 0x3f}))
                .item<double>(),
            1.0);
  EXPECT_EQ(decode(npy_file("{'descr': '<i8', 'fortran_order': False, 'shape': (1,), }",
                            {0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}))
                .item<std::int64_t>(),
            -2);
  Tensor b =
      decode(npy_file("{'descr': '|b1', 'fortran_order': False, 'shape': (3,), }", {0, 1, 7}));
  EXPECT_EQ(b.dtype(), DType::boolean);
  EXPECT_EQ(b.to_vector<double>(), (std::vector<double>{0, 1, 1}));
  Tensor z = decode(npy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (0, 3), }", {}));
  EXPECT_EQ(z.shape(), (Shape{0, 3}));
}

TEST(Npy, MalformedFilesAreErrorsNamingTheProblem) {
  const std::string good = "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }\n";
  const Bytes data(8, 0);
  auto with_dict = [&](const std::string& dict) { return npy_file(dict, data); };
  expect_error(
      [&] {
        decode(Bytes{0x93, 'N', 'U', 'M'});
      },
      "is truncated: 4 bytes, shorter than the 10-byte");
  expect_error(
      [&] {
        decode(Bytes{0x93, 'N', 'U', 'M', 'P', 'Y', 2, 0, 10, 0});
      },
      "is truncated: 10 bytes, shorter than the 12-byte .npy preamble");
  Bytes bad_magic = with_dict(good);
  bad_magic[1] = 'X';
  expect_error([&] { decode(bad_magic); }, "is not a .npy file (the magic bytes");
  Bytes bad_version = with_dict(good);
  bad_version[6] = 4;
  expect_error([&] { decode(bad_version); },
               "has unsupported .npy version 4.0 (1.0, 2.0 and 3.0 are read)");
  Bytes long_header = with_dict(good);
  long_header[8] = 0xff;
  expect_error([&] { decode(long_header); },
               "is truncated: the header declares 255 bytes after the preamble");
  Bytes truncated = with_dict(good);
  truncated.pop_back();
  expect_error([&] { decode(truncated); }, "has 7 data bytes after the header, but f32[2] needs 8");
  Bytes trailing = with_dict(good);
  trailing.push_back(0);
  expect_error([&] { decode(trailing); }, "has 9 data bytes after the header, but f32[2] needs 8");
  expect_error(
      [&] { decode(with_dict("{'descr': '<f4', 'fortran_order': True, 'shape': (2,), }")); },
      "stored in Fortran order (fortran_order: True); only C order is read");
  expect_error(
      [&] { decode(with_dict("{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }")); },
      "holds big-endian data ('>f4'); only little-endian is read");
  expect_error(
      [&] { decode(with_dict("{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }")); },
      "has unsupported dtype '<c8' (supported: '<f4'");
  expect_error(
      [&] { decode(with_dict("{'descr': '<f4', 'fortran_order': False, 'shape': (2), }")); },
      "malformed header: expected a ',' after the only dimension, as in (5,)");
  expect_error(
      [&] { decode(with_dict("{'descr': '<f4', 'fortran_order': False, 'shape': [2], }")); },
      "malformed header: expected a tuple for 'shape' at offset 50");
  expect_error(
      [&] { decode(with_dict("{'descr': '<f4', 'fortran_order': false, 'shape': (2,), }")); },
      "malformed header: expected True or False");
  expect_error(
      [&] { decode(with_dict("{'descr': '<f4' 'fortran_order': False, 'shape': (2,), }")); },
      "malformed header: expected ',' or '}' after a value");
  expect_error(
      [&] { decode(with_dict("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), ")); },
      "malformed header: expected a quoted string");
  expect_error([&] { decode(with_dict("{'descr': '<f4', 'shape': (2,), }")); },
               "the header has no 'fortran_order' key");
  expect_error(
      [&] { decode(with_dict("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1}")); },
      "the header has an unexpected key 'x'");
  expect_error(
      [&] {
        decode(
            with_dict("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (2,)}"));
      },
      "the header repeats the key 'descr'");
  expect_error(
      [&] { decode(with_dict("{'descr': '<f4', 'fortran_order': False, 'shape': (-2,), }")); },
      "expected a non-negative integer dimension");
  expect_error(
      [&] { decode(with_dict("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), } x")); },
      "expected text after the closing '}'");
}

TEST(Npy, FileErrorsNameTheFile) {
  TempDir dir;
  expect_error([&] { read_npy(dir.file("missing.npy")); },
               "read_npy: '" + dir.file("missing.npy") + "': no such file");
  expect_error([&] { read_npy(dir.path()); }, "is not a regular file");
  testing::write_bytes(dir.file("short.npy"), {0x93, 'N', 'U', 'M', 'P', 'Y', 1});
  expect_error([&] { read_npy(dir.file("short.npy")); },
               "read_npy: '" + dir.file("short.npy") + "': is truncated: 7 bytes");
  testing::write_bytes(
      dir.file("big.npy"),
      npy_file("{'descr': '>i8', 'fortran_order': False, 'shape': (1,), }", Bytes(8, 0)));
  expect_error([&] { read_npy(dir.file("big.npy")); }, "big.npy': holds big-endian data ('>i8')");
  expect_error([&] { write_npy(dir.file("h.npy"), Tensor::zeros({2}, DType::bf16)); },
               "write_npy: '" + dir.file("h.npy") + "': bf16[2] has no .npy dtype");
  expect_error([&] { write_npy(dir.file("u.npy"), Tensor()); }, "the tensor is undefined");
  expect_error([&] { write_npy(dir.file("nofolder/x.npy"), Tensor::zeros({2})); }, "write_npy: '");
  EXPECT_FALSE(std::filesystem::exists(dir.file("h.npy")));
  EXPECT_FALSE(std::filesystem::exists(dir.file("h.npy.tmp")));
}

// numpy writes, glia reads (values from the same formulas on both sides); glia writes, numpy
// reads and checks, and compares glia's bytes with numpy.save's.
TEST(Npy, ExchangesFilesWithNumpy) {
  if (!testing::have_numpy()) GTEST_SKIP() << "/usr/bin/python3 with numpy is not available";
  TempDir dir;
  const std::string script = dir.file("numpy_side.py");
  {
    std::ofstream py(script);
    py << "import numpy as np, sys\n"
          "d = sys.argv[2]\n"
          "def arrays():\n"
          "    yield 'f32', (np.arange(24, dtype=np.float32).reshape(2, 3, 4) - 7) / 4\n"
          "    yield 'f64', np.float64(-2.5)\n"
          "    yield 'i32', np.arange(-3, 3, dtype=np.int32)\n"
          "    yield 'i64', np.array([[-(2**62), 2**53 + 1]], dtype=np.int64)\n"
          "    yield 'u8', np.arange(250, 256, dtype=np.uint8).reshape(3, 2, 1)\n"
          "    yield 'b1', np.array([True, False, True, True])\n"
          "    yield 'empty', np.zeros((2, 0, 3), dtype=np.float32)\n"
          "if sys.argv[1] == 'write':\n"
          "    for name, a in arrays(): np.save(f'{d}/np_{name}.npy', a)\n"
          "else:\n"
          "    for name, a in arrays():\n"
          "        b = np.load(f'{d}/glia_{name}.npy')\n"
          "        assert b.dtype == a.dtype and b.shape == a.shape, name\n"
          "        assert np.array_equal(a, b), name\n"
          "        assert open(f'{d}/glia_{name}.npy', 'rb').read() == "
          "open(f'{d}/np_{name}.npy', 'rb').read(), name\n";
  }
  ASSERT_EQ(std::system(("/usr/bin/python3 " + script + " write " + dir.path()).c_str()), 0);
  std::vector<float> f32;
  for (int i = 0; i < 24; ++i) f32.push_back(static_cast<float>(i - 7) / 4);
  const std::map<std::string, Tensor> expected = {
      {"f32", Tensor::from<float>(f32, Shape{2, 3, 4})},
      {"f64", Tensor::scalar(-2.5, DType::f64)},
      {"i32", Tensor::from<std::int32_t>({-3, -2, -1, 0, 1, 2})},
      {"i64", Tensor::from<std::int64_t>({-(1LL << 62), (1LL << 53) + 1}, Shape{1, 2})},
      {"u8", Tensor::from<std::uint8_t>({250, 251, 252, 253, 254, 255}, Shape{3, 2, 1})},
      {"b1", Tensor::from<bool>({true, false, true, true})},
      {"empty", Tensor::zeros({2, 0, 3})}};
  for (const auto& [name, want] : expected) {
    SCOPED_TRACE(name);
    Tensor got = read_npy(dir.file("np_" + name + ".npy"));
    EXPECT_TRUE(equal(got, want)) << got;
    write_npy(dir.file("glia_" + name + ".npy"), want);
  }
  EXPECT_EQ(std::system(("/usr/bin/python3 " + script + " read " + dir.path()).c_str()), 0);
}

}  // namespace
}  // namespace glia
