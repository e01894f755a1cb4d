// Helpers for the datasets tests: a temporary folder, IDX bytes built by hand (so the
// reader is checked against the format, not against the writer) and gzip members built
// by hand from stored deflate blocks with their own CRC-32 (no zlib in the tests).
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace glia::testing {

using Bytes = std::vector<std::uint8_t>;

// A fresh folder under the system's temporary folder, removed with everything in it.
class TempDir {
 public:
  TempDir() {
    const ::testing::TestInfo* info = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = std::filesystem::temp_directory_path() /
            ("glia_datasets_" + std::string(info->test_suite_name()) + "_" + info->name() + "_" +
             std::to_string(::getpid()));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  std::string path() const { return path_.string(); }

 private:
  std::filesystem::path path_;
};

// Whether /usr/bin/python3 with numpy runs here (the interoperability tests skip without).
inline bool have_numpy() {
  return std::system("/usr/bin/python3 -c 'import numpy' >/dev/null 2>&1") == 0;
}

inline void write_bytes(const std::string& path, const Bytes& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(out.good()) << "cannot write " << path;
}

inline void append_be32(Bytes& b, std::uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) b.push_back(static_cast<std::uint8_t>(v >> shift));
}
inline void append_le(Bytes& b, std::uint32_t v, int n) {
  for (int i = 0; i < n; ++i) b.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
}

// An IDX header: 0, 0, type code, rank, then each dimension as a big-endian u32.
inline Bytes idx_header(std::uint8_t code, const std::vector<std::uint32_t>& dims) {
  Bytes b{0, 0, code, static_cast<std::uint8_t>(dims.size())};
  for (std::uint32_t d : dims) append_be32(b, d);
  return b;
}
inline Bytes concat(Bytes a, const Bytes& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// CRC-32 of gzip (reflected polynomial 0xEDB88320), bit by bit.
inline std::uint32_t crc32_of(const Bytes& data) {
  std::uint32_t crc = 0xFFFFFFFFu;
  for (std::uint8_t byte : data) {
    crc ^= byte;
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
  }
  return ~crc;
}

// One gzip member (RFC 1952) holding `data` in a single stored deflate block (RFC 1951:
// BFINAL=1, BTYPE=00, then LEN and its complement, little-endian), then CRC-32 and size.
inline Bytes gzip_stored(const Bytes& data) {
  Bytes b{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff};
  b.push_back(0x01);
  const auto len = static_cast<std::uint32_t>(data.size());
  append_le(b, len, 2);
  append_le(b, ~len & 0xFFFFu, 2);
  b.insert(b.end(), data.begin(), data.end());
  append_le(b, crc32_of(data), 4);
  append_le(b, len, 4);
  return b;
}

}  // namespace glia::testing
