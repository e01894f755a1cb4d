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

// A raw deflate stream (RFC 1951) holding `data` (at most 65,535 bytes) in one stored
// block: BFINAL=1, BTYPE=00, then LEN and its complement, little-endian.
inline Bytes deflate_stored(const Bytes& data) {
  Bytes b{0x01};
  const auto len = static_cast<std::uint32_t>(data.size());
  append_le(b, len, 2);
  append_le(b, ~len & 0xFFFFu, 2);
  b.insert(b.end(), data.begin(), data.end());
  return b;
}

// One gzip member (RFC 1952) holding `data` in a single stored deflate block, then its
// CRC-32 and size.
inline Bytes gzip_stored(const Bytes& data) {
  Bytes b = concat({0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff}, deflate_stored(data));
  append_le(b, crc32_of(data), 4);
  append_le(b, static_cast<std::uint32_t>(data.size()), 4);
  return b;
}

// One member of a zip archive built by hand: its name, its bytes as the archive stores
// them, the method (0 stored, 8 deflated), and the size and CRC-32 its entries declare
// for the content (given separately, so that a test can make them lie).
struct ZipMember {
  std::string name;
  Bytes stored;
  std::uint16_t method = 0;
  std::uint32_t size = 0;
  std::uint32_t crc = 0;
};
// A member holding `data` as it is (method 0), with its true size and CRC.
inline ZipMember stored_member(const std::string& name, const Bytes& data) {
  return {name, data, 0, static_cast<std::uint32_t>(data.size()), crc32_of(data)};
}

// A zip archive as numpy.savez writes one (no zip64): a local header and the bytes of each
// member, then the central directory and its end record.
inline Bytes zip_archive(const std::vector<ZipMember>& members) {
  Bytes out, dir;
  for (const ZipMember& m : members) {
    const auto offset = static_cast<std::uint32_t>(out.size());
    const auto compressed = static_cast<std::uint32_t>(m.stored.size());
    const auto name_len = static_cast<std::uint32_t>(m.name.size());
    append_le(out, 0x04034b50, 4), append_le(out, 20, 2), append_le(out, 0, 2);
    append_le(out, m.method, 2), append_le(out, 0, 4), append_le(out, m.crc, 4);
    append_le(out, compressed, 4), append_le(out, m.size, 4), append_le(out, name_len, 2);
    append_le(out, 0, 2);
    out.insert(out.end(), m.name.begin(), m.name.end());
    out.insert(out.end(), m.stored.begin(), m.stored.end());
    append_le(dir, 0x02014b50, 4), append_le(dir, 20, 2), append_le(dir, 20, 2);
    append_le(dir, 0, 2), append_le(dir, m.method, 2), append_le(dir, 0, 4);
    append_le(dir, m.crc, 4), append_le(dir, compressed, 4), append_le(dir, m.size, 4);
    append_le(dir, name_len, 2), append_le(dir, 0, 4), append_le(dir, 0, 4);
    append_le(dir, 0, 4), append_le(dir, offset, 4);
    dir.insert(dir.end(), m.name.begin(), m.name.end());
  }
  const auto dir_at = static_cast<std::uint32_t>(out.size());
  const auto count = static_cast<std::uint32_t>(members.size());
  out.insert(out.end(), dir.begin(), dir.end());
  append_le(out, 0x06054b50, 4), append_le(out, 0, 4), append_le(out, count, 2);
  append_le(out, count, 2), append_le(out, static_cast<std::uint32_t>(dir.size()), 4);
  append_le(out, dir_at, 4), append_le(out, 0, 2);
  return out;
}

}  // namespace glia::testing
