// read_npz: the zip container around numpy's .npy members. The central directory gives
// each member's name, method, CRC, sizes and header offset (zip64 extra fields where a
// size or offset does not fit 32 bits); a member's data starts after its local header.
// Deflated members are inflated with zlib (raw deflate), and every member's CRC-32 is
// checked before its bytes are decoded as a .npy file.
#include <zlib.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <limits>

#include "glia/core/error.hpp"
#include "glia/datasets/npy.hpp"

namespace glia {

namespace {

constexpr std::uint32_t kEndOfDirectory = 0x06054b50, kZip64End = 0x06064b50,
                        kZip64Locator = 0x07064b50, kDirectoryEntry = 0x02014b50,
                        kLocalHeader = 0x04034b50;

class Reader {
 public:
  Reader(const std::vector<unsigned char>& bytes, std::string context)
      : b_(bytes), context_(std::move(context)) {}
  [[noreturn]] void fail(const std::string& what) const { throw Error(cat(context_, ": ", what)); }
  void need(std::uint64_t at, std::uint64_t n, const char* what) const {
    if (at > b_.size() || n > b_.size() - at)
      fail(cat("truncated: ", what, " at byte ", at, " runs past the end (", b_.size(), " bytes)"));
  }
  std::uint64_t le(std::uint64_t at, int n, const char* what) const {
    need(at, std::uint64_t(n), what);
    std::uint64_t v = 0;
    for (int i = n; i-- > 0;) v = v << 8 | b_[at + std::uint64_t(i)];
    return v;
  }
  const unsigned char* at(std::uint64_t offset) const { return b_.data() + offset; }
  std::uint64_t size() const { return b_.size(); }

 private:
  const std::vector<unsigned char>& b_;
  std::string context_;
};

struct Member {
  std::string name;
  std::uint32_t method = 0, crc = 0, flags = 0;
  std::uint64_t compressed = 0, size = 0, header = 0;
};

std::vector<unsigned char> read_file(const std::filesystem::path& path) {
  std::error_code ec;
  check(std::filesystem::exists(path, ec), path.string(), ": no such file");
  check(std::filesystem::is_regular_file(path, ec), path.string(), ": not a regular file");
  std::ifstream in(path, std::ios::binary);
  check(static_cast<bool>(in), path.string(), ": cannot open it");
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// The central directory's members, from the end-of-directory record (zip64 where set).
std::vector<Member> directory(const Reader& r) {
  // The end record: 22 bytes and a comment of at most 65,535, so searched backwards.
  std::uint64_t end = 0;
  bool found = false;
  for (std::uint64_t back = 22; back <= std::min<std::uint64_t>(r.size(), 22 + 65535); ++back)
    if (r.le(r.size() - back, 4, "end record") == kEndOfDirectory) {
      end = r.size() - back;
      found = true;
      break;
    }
  if (!found) r.fail("not a zip archive (no end-of-directory record): numpy's savez writes one");
  std::uint64_t count = r.le(end + 10, 2, "member count");
  std::uint64_t dir_size = r.le(end + 12, 4, "directory size");
  std::uint64_t dir_at = r.le(end + 16, 4, "directory offset");
  if (count == 0xFFFF || dir_size == 0xFFFFFFFF || dir_at == 0xFFFFFFFF) {
    if (end < 20 || r.le(end - 20, 4, "zip64 locator") != kZip64Locator)
      r.fail("a zip64 archive without its zip64 locator");
    const std::uint64_t z = r.le(end - 20 + 8, 8, "zip64 end offset");
    if (r.le(z, 4, "zip64 end record") != kZip64End) r.fail("the zip64 end record is missing");
    count = r.le(z + 32, 8, "zip64 member count");
    dir_size = r.le(z + 40, 8, "zip64 directory size");
    dir_at = r.le(z + 48, 8, "zip64 directory offset");
  }
  r.need(dir_at, dir_size, "the central directory");
  std::vector<Member> members;
  std::uint64_t p = dir_at;
  for (std::uint64_t i = 0; i < count; ++i) {
    if (r.le(p, 4, "directory entry") != kDirectoryEntry)
      r.fail(cat("central directory entry ", i, " is corrupt (bad signature)"));
    Member m;
    m.flags = std::uint32_t(r.le(p + 8, 2, "flags"));
    m.method = std::uint32_t(r.le(p + 10, 2, "method"));
    m.crc = std::uint32_t(r.le(p + 16, 4, "crc"));
    m.compressed = r.le(p + 20, 4, "compressed size");
    m.size = r.le(p + 24, 4, "size");
    const std::uint64_t name_len = r.le(p + 28, 2, "name length"),
                        extra_len = r.le(p + 30, 2, "extra length"),
                        comment_len = r.le(p + 32, 2, "comment length");
    m.header = r.le(p + 42, 4, "header offset");
    r.need(p + 46, name_len + extra_len + comment_len, "a directory entry");
    m.name.assign(reinterpret_cast<const char*>(r.at(p + 46)), name_len);
    // zip64: the fields at 0xFFFFFFFF follow in the extra field 0x0001, in this order.
    for (std::uint64_t e = p + 46 + name_len; e + 4 <= p + 46 + name_len + extra_len;) {
      const std::uint64_t id = r.le(e, 2, "extra id"), len = r.le(e + 2, 2, "extra length");
      if (id == 1) {
        std::uint64_t q = e + 4;
        for (std::uint64_t* field : {&m.size, &m.compressed, &m.header})
          if (*field == 0xFFFFFFFF) *field = r.le(q, 8, "zip64 field"), q += 8;
      }
      e += 4 + len;
    }
    members.push_back(std::move(m));
    p += 46 + name_len + extra_len + comment_len;
  }
  return members;
}

// Deflate cannot compress better than about 1032:1 (RFC 1951: a 258-byte match costs at
// least two bits), so n compressed bytes inflate to at most this many: a member whose
// directory entry claims more is corrupt, and refused before its buffer is allocated.
constexpr std::uint64_t kMaxDeflateRatio = 1032;

std::vector<unsigned char> inflate_member(const Reader& r, const Member& m, std::uint64_t data,
                                          const std::string& where) {
  if (m.size / kMaxDeflateRatio > m.compressed)
    r.fail(cat(where, " claims ", m.size, " bytes, more than its ", m.compressed,
               " deflated bytes can hold: the archive is corrupt"));
  std::vector<unsigned char> out(m.size);
  z_stream z{};
  if (inflateInit2(&z, -MAX_WBITS) != Z_OK) r.fail(where + ": zlib cannot start inflating");
  // zlib counts in 32 bits: the input and output are handed over in slices.
  constexpr std::uint64_t kSlice = std::numeric_limits<uInt>::max();
  std::uint64_t in_left = m.compressed, out_left = m.size;
  z.next_in = const_cast<unsigned char*>(r.at(data));
  z.next_out = out.data();
  int ret = Z_OK;
  while (ret == Z_OK) {
    if (z.avail_in == 0 && in_left > 0) {
      z.avail_in = static_cast<uInt>(std::min(in_left, kSlice));
      in_left -= z.avail_in;
    }
    if (z.avail_out == 0 && out_left > 0) {
      z.avail_out = static_cast<uInt>(std::min(out_left, kSlice));
      out_left -= z.avail_out;
    }
    ret = inflate(&z, in_left == 0 ? Z_FINISH : Z_NO_FLUSH);
  }
  const std::uint64_t produced = m.size - out_left - z.avail_out;
  inflateEnd(&z);
  if (ret != Z_STREAM_END || produced != m.size)
    r.fail(cat(where, ": its deflated data is corrupt (zlib ", ret, ", ", produced, " of ", m.size,
               " bytes)"));
  return out;
}

}  // namespace

std::map<std::string, Tensor> read_npz(const std::filesystem::path& path) {
  const std::vector<unsigned char> bytes = read_file(path);
  Reader r(bytes, path.string());
  std::map<std::string, Tensor> arrays;
  for (const Member& m : directory(r)) {
    const std::string where = "member '" + m.name + "'";
    if (m.name.size() < 4 || m.name.compare(m.name.size() - 4, 4, ".npy") != 0)
      r.fail(where + " is not a .npy file (an .npz holds numpy arrays only)");
    if (m.flags & 1) r.fail(where + " is encrypted");
    if (m.method != 0 && m.method != 8)
      r.fail(cat(where, " uses compression method ", m.method,
                 " (numpy writes stored or deflated members)"));
    if (r.le(m.header, 4, "a local header") != kLocalHeader)
      r.fail(where + ": its local header is corrupt");
    const std::uint64_t data = m.header + 30 + r.le(m.header + 26, 2, "name length") +
                               r.le(m.header + 28, 2, "extra length");
    r.need(data, m.compressed, ("the data of " + where).c_str());
    std::vector<unsigned char> raw;
    if (m.method == 0) {
      if (m.compressed != m.size) r.fail(where + ": stored sizes disagree");
      raw.assign(r.at(data), r.at(data) + m.size);
    } else {
      raw = inflate_member(r, m, data, where);
    }
    const auto crc =
        static_cast<std::uint32_t>(crc32_z(crc32(0L, Z_NULL, 0), raw.data(), raw.size()));
    if (crc != m.crc) r.fail(where + ": CRC mismatch (the archive is corrupt)");
    const std::string name = m.name.substr(0, m.name.size() - 4);
    if (arrays.count(name) != 0) r.fail(where + " appears twice");
    arrays[name] = decode_npy({reinterpret_cast<const std::byte*>(raw.data()), raw.size()},
                              path.string() + ": " + where);
  }
  return arrays;
}

}  // namespace glia
