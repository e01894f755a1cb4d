// The IDX reader and writer. Every header field is checked, and the size the header
// declares is checked against the file (or, for gzip, against what the compressed bytes
// can hold) before any data is allocated or read.
#include "glia/datasets/idx.hpp"

#include <zlib.h>

#include <array>
#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <type_traits>
#include <vector>

#include "glia/core/declared_size.hpp"
#include "glia/datasets/atomic_file.hpp"
#include "idx_source.hpp"

namespace glia {
namespace {

constexpr int kMaxRank = 8;
constexpr std::size_t kChunkBytes = std::size_t{1} << 16;

struct IdxType {
  std::uint8_t code;
  const char* name;  // as the IDX format names it
  int size;          // bytes per element on disk
  DType dtype;       // what it reads as
};
constexpr std::array<IdxType, 6> kIdxTypes{{{0x08, "u8", 1, u8},
                                            {0x09, "i8", 1, i32},
                                            {0x0B, "i16", 2, i32},
                                            {0x0C, "i32", 4, i32},
                                            {0x0D, "f32", 4, f32},
                                            {0x0E, "f64", 8, f64}}};

const IdxType* find_type(std::uint8_t code) {
  for (const IdxType& t : kIdxTypes)
    if (t.code == code) return &t;
  return nullptr;
}

std::string hex(std::uint64_t v, int digits) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%0*llX", digits, static_cast<unsigned long long>(v));
  return buf;
}

std::uint64_t load_be(const std::byte* p, int n) {
  std::uint64_t v = 0;
  for (int i = 0; i < n; ++i) v = (v << 8) | std::to_integer<std::uint64_t>(p[i]);
  return v;
}

void store_be(std::uint64_t v, int n, std::byte* p) {
  for (int i = n - 1; i >= 0; --i, v >>= 8) p[i] = static_cast<std::byte>(v & 0xFF);
}

// One element of an IDX type, big-endian on disk, into its glia storage type.
template <class T>
T decode(const std::byte* p, std::uint8_t code) {
  switch (code) {
    case 0x09:
      return static_cast<T>(static_cast<std::int8_t>(load_be(p, 1)));
    case 0x0B:
      return static_cast<T>(static_cast<std::int16_t>(load_be(p, 2)));
    case 0x0C:
      return static_cast<T>(static_cast<std::int32_t>(load_be(p, 4)));
    case 0x0D:
      return static_cast<T>(std::bit_cast<float>(static_cast<std::uint32_t>(load_be(p, 4))));
    case 0x0E:
      return static_cast<T>(std::bit_cast<double>(load_be(p, 8)));
    default:
      return static_cast<T>(load_be(p, 1));
  }
}

// Reads exactly n bytes or reports how the content fell short of what the header declares.
void read_exactly(detail::IdxSource& src, std::byte* out, std::size_t n, std::uint64_t offset,
                  std::uint64_t expected_total, const std::string& path) {
  std::size_t got = src.read(out, n);
  check(got == n, "read_idx: '", path, "' is truncated: ", src.content_name(), " is ", offset + got,
        " bytes, but its header declares ", expected_total);
}

// The elements, decoded chunk by chunk so a big file is never held twice in memory.
void read_elements(detail::IdxSource& src, const IdxType& type, Tensor& out,
                   std::uint64_t header_bytes, std::uint64_t total, const std::string& path) {
  std::uint64_t offset = header_bytes;
  if (type.code == 0x08) {
    read_exactly(src, static_cast<std::byte*>(out.raw_data()), out.nbytes(), offset, total, path);
    return;
  }
  std::vector<std::byte> chunk(kChunkBytes);
  const auto size = static_cast<std::size_t>(type.size);
  const std::size_t per_chunk = kChunkBytes / size;
  const auto n = static_cast<std::size_t>(out.numel());
  auto decode_all = [&](auto* dst) {
    using T = std::remove_pointer_t<decltype(dst)>;
    for (std::size_t i = 0; i < n; i += per_chunk) {
      std::size_t count = std::min(per_chunk, n - i);
      read_exactly(src, chunk.data(), count * size, offset, total, path);
      offset += count * size;
      for (std::size_t k = 0; k < count; ++k)
        dst[i + k] = decode<T>(chunk.data() + k * size, type.code);
    }
  };
  // Only the three widened dtypes reach here (u8 was read in place above).
  if (out.dtype() == DType::i32) decode_all(out.data<std::int32_t>());
  if (out.dtype() == DType::f32) decode_all(out.data<float>());
  if (out.dtype() == DType::f64) decode_all(out.data<double>());
}

}  // namespace

Tensor read_idx(const std::string& path) {
  std::unique_ptr<detail::IdxSource> src = detail::open_idx_source(path, "read_idx");
  const std::string content = src->content_name();
  auto fail = [&](const auto&... parts) -> Error {
    return Error(cat("read_idx: '", path, "' ", parts...));
  };

  std::array<std::byte, 4 * (kMaxRank + 1)> header{};
  std::size_t got = src->read(header.data(), 4);
  if (got < 4)
    throw fail("is truncated: ", content, " is ", got,
               " bytes, shorter than the 4-byte IDX magic number");
  std::uint64_t magic = load_be(header.data(), 4);
  if (header[0] != std::byte{0} || header[1] != std::byte{0})
    throw fail("is not an IDX file: wrong magic number ", hex(magic, 8),
               " (an IDX file starts with two zero bytes, a type code and the rank)");
  auto code = std::to_integer<std::uint8_t>(header[2]);
  const IdxType* type = find_type(code);
  if (type == nullptr)
    throw fail("has an unknown element type code ", hex(code, 2), " in its magic number ",
               hex(magic, 8), " (expected 0x08 u8, 0x09 i8, 0x0B i16, 0x0C i32, 0x0D f32 or ",
               "0x0E f64)");
  int rank = std::to_integer<int>(header[3]);
  if (rank < 1 || rank > kMaxRank)
    throw fail("has rank ", rank, " in its magic number ", hex(magic, 8), " (expected 1 to ",
               kMaxRank, ")");

  const std::uint64_t header_bytes = 4 + 4 * static_cast<std::uint64_t>(rank);
  got = src->read(header.data() + 4, header_bytes - 4);
  if (got < header_bytes - 4)
    throw fail("is truncated: ", content, " is ", 4 + got, " bytes, but a rank-", rank,
               " IDX header needs ", header_bytes);

  // The declared element count (each dimension is < 2^32), at most 2^60.
  std::vector<std::int64_t> dims;
  std::string dims_text;
  for (int i = 0; i < rank; ++i) {
    std::uint64_t d = load_be(header.data() + 4 + 4 * i, 4);
    dims.push_back(static_cast<std::int64_t>(d));
    dims_text += cat("[", d, "]");
  }
  const DeclaredSize elements =
      declared_size(dims, 1, std::numeric_limits<std::int64_t>::max() / 8);
  const std::string declared = cat(type->name, dims_text);
  if (!elements.fits && elements.empty)
    throw fail("declares ", declared, ": its non-zero dimensions multiply past 2^60, too many ",
               "to index even in an empty tensor");
  if (!elements.fits) throw fail("declares ", declared, ": too many elements to hold in memory");
  const std::uint64_t numel = elements.data_bytes();
  const std::uint64_t total = header_bytes + numel * static_cast<std::uint64_t>(type->size);

  if (std::optional<std::uint64_t> size = src->exact_size()) {
    if (*size < total)
      throw fail("is truncated: ", content, " is ", *size, " bytes, but its header (", declared,
                 ") declares ", total, " (", total - *size, " missing)");
    if (*size > total)
      throw fail("has ", *size - total, " trailing bytes: ", content, " is ", *size,
                 " bytes, but its header (", declared, ") declares ", total);
  } else if (total > src->max_size()) {
    throw fail("declares ", declared, " (", total, " bytes), more than the ", src->max_size(),
               " bytes at most that this gzip file can inflate to: the header is corrupt");
  }

  Tensor out(type->dtype, Shape(std::move(dims)));
  read_elements(*src, *type, out, header_bytes, total, path);
  if (!src->at_end())
    throw fail("has trailing bytes: ", content, " is longer than the ", total,
               " bytes its header (", declared, ") declares");
  return out;
}

namespace {

// Writes through a std::ofstream or, for a .gz name, through zlib's gzip writer.
class IdxWriter {
 public:
  IdxWriter(const std::string& tmp, bool gzip, const std::string& path) : path_(path) {
    if (gzip) {
      gz_ = gzopen(tmp.c_str(), "wb");
      check(gz_ != nullptr, "write_idx: cannot create '", tmp, "': ", std::strerror(errno));
    } else {
      out_.open(tmp, std::ios::binary | std::ios::trunc);
      check(out_.is_open(), "write_idx: cannot create '", tmp, "': ", std::strerror(errno));
    }
  }
  ~IdxWriter() {
    if (gz_ != nullptr) gzclose(gz_);
  }
  IdxWriter(const IdxWriter&) = delete;
  IdxWriter& operator=(const IdxWriter&) = delete;

  void write(const std::byte* p, std::size_t n) {
    if (gz_ == nullptr) {
      out_.write(reinterpret_cast<const char*>(p), static_cast<std::streamsize>(n));
      check(out_.good(), "write_idx: writing '", path_, "' failed: ", std::strerror(errno));
      return;
    }
    while (n > 0) {
      auto part = static_cast<unsigned>(std::min<std::size_t>(n, kChunkBytes));
      check(gzwrite(gz_, p, part) == static_cast<int>(part), "write_idx: compressing '", path_,
            "' failed");
      p += part;
      n -= part;
    }
  }
  void close() {
    if (gz_ != nullptr) {
      int ret = gzclose(gz_);
      gz_ = nullptr;
      check(ret == Z_OK, "write_idx: finishing '", path_, "' failed (zlib error ", ret, ")");
    } else {
      out_.close();
      check(!out_.fail(), "write_idx: closing '", path_, "' failed: ", std::strerror(errno));
    }
  }

 private:
  std::string path_;
  std::ofstream out_;
  gzFile gz_ = nullptr;
};

void write_contents(IdxWriter& w, const Tensor& t, std::uint8_t code) {
  std::vector<std::byte> buf(4 + 4 * static_cast<std::size_t>(t.rank()));
  store_be(code, 1, buf.data() + 2);
  store_be(static_cast<std::uint64_t>(t.rank()), 1, buf.data() + 3);
  for (int i = 0; i < t.rank(); ++i)
    store_be(static_cast<std::uint64_t>(t.shape()[i]), 4, buf.data() + 4 + 4 * i);
  w.write(buf.data(), buf.size());

  const int size = dtype_size(t.dtype());
  const auto* src = static_cast<const std::byte*>(t.raw_data());
  std::vector<std::byte> chunk(kChunkBytes);
  const std::size_t total = t.nbytes();
  for (std::size_t at = 0; at < total; at += kChunkBytes) {
    std::size_t n = std::min(kChunkBytes, total - at);
    // Host order to big-endian, element by element, whatever the host is.
    for (std::size_t k = 0; k < n; k += static_cast<std::size_t>(size)) {
      std::uint64_t v = 0;
      if (size == 1) {
        v = std::to_integer<std::uint64_t>(src[at + k]);
      } else if (size == 4) {
        std::uint32_t bits = 0;
        std::memcpy(&bits, src + at + k, 4);
        v = bits;
      } else {
        std::memcpy(&v, src + at + k, 8);
      }
      store_be(v, size, chunk.data() + k);
    }
    w.write(chunk.data(), n);
  }
}

}  // namespace

void write_idx(const std::string& path, const Tensor& tensor) {
  check(tensor.defined(), "write_idx: '", path, "': the tensor is undefined");
  std::uint8_t code = 0;
  switch (tensor.dtype()) {
    case DType::u8:
      code = 0x08;
      break;
    case DType::i32:
      code = 0x0C;
      break;
    case DType::f32:
      code = 0x0D;
      break;
    case DType::f64:
      code = 0x0E;
      break;
    default:
      throw Error(cat("write_idx: '", path, "': ", tensor.type(),
                      " has no IDX element type (u8, i32, f32 or f64 can be written)"));
  }
  check(tensor.rank() >= 1 && tensor.rank() <= kMaxRank, "write_idx: '", path, "': ", tensor.type(),
        " has rank ", tensor.rank(), "; IDX holds ranks 1 to ", kMaxRank);
  for (std::int64_t d : tensor.shape())
    check(d <= std::numeric_limits<std::uint32_t>::max(), "write_idx: '", path,
          "': ", tensor.type(), " has a dimension over the IDX limit of 2^32 - 1");

  const bool gzip = path.size() >= 3 && path.compare(path.size() - 3, 3, ".gz") == 0;
  detail::write_atomically(path, "write_idx", [&](const std::string& tmp) {
    IdxWriter w(tmp, gzip, path);
    write_contents(w, tensor, code);
    w.close();
  });
}

}  // namespace glia
