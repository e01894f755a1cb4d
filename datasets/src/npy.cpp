// read_npy / write_npy and their in-memory forms. The preamble and header are checked
// (npy_header.cpp), then the data size against the shape, before the elements are read
// straight into the tensor's storage.
#include "glia/datasets/npy.hpp"

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <limits>

#include "glia/core/declared_size.hpp"
#include "glia/datasets/atomic_file.hpp"
#include "npy_header.hpp"

namespace glia {

namespace {

// The data size the header declares, checked for overflow before anything is allocated.
std::uint64_t data_bytes(const detail::NpyHeader& h, std::string_view context) {
  const DeclaredSize s =
      declared_size(h.shape.dims(), static_cast<std::uint64_t>(dtype_size(h.dtype)),
                    static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()));
  check(s.fits, context, ": the shape ", h.shape, " in the header is too large: its ",
        s.empty ? "non-zero " : "", "dimensions multiply past 2^63 bytes");
  return s.data_bytes();
}

// Reverses each element's bytes: .npy data is little-endian, whatever the host is.
void swap_if_big_endian(std::byte* data, std::size_t bytes, int size) {
  if constexpr (std::endian::native == std::endian::big) {
    for (std::size_t i = 0; i + static_cast<std::size_t>(size) <= bytes; i += size)
      std::reverse(data + i, data + i + size);
  } else {
    (void)data, (void)bytes, (void)size;
  }
}

// Elements loaded into `t`'s storage as raw bytes, made valid: host byte order, and bools
// 0 or 1 (numpy reads any non-zero byte as True).
void finish_elements(Tensor& t) {
  auto* p = static_cast<std::byte*>(t.raw_data());
  if (t.dtype() == DType::boolean) {
    for (std::size_t i = 0; i < t.nbytes(); ++i)
      p[i] = p[i] == std::byte{0} ? std::byte{0} : std::byte{1};
    return;
  }
  swap_if_big_endian(p, t.nbytes(), dtype_size(t.dtype()));
}

std::string size_mismatch(std::uint64_t have, const detail::NpyHeader& h, std::uint64_t want) {
  return cat(": has ", have, " data bytes after the header, but ", TensorType{h.dtype, h.shape},
             " needs ", want);
}

}  // namespace

Tensor read_npy(const std::filesystem::path& path) {
  const std::string context = cat("read_npy: '", path.string(), "'");
  std::error_code ec;
  check(std::filesystem::is_regular_file(path, ec), context,
        std::filesystem::exists(path, ec) ? ": is not a regular file" : ": no such file");
  const std::uint64_t total = std::filesystem::file_size(path, ec);
  check(!ec, context, ": cannot read its size: ", ec.message());
  std::ifstream in(path, std::ios::binary);
  check(in.is_open(), context, ": cannot open: ", std::strerror(errno));

  std::array<std::byte, detail::kNpyMaxPreamble> first{};
  const auto n = static_cast<std::size_t>(std::min<std::uint64_t>(total, first.size()));
  in.read(reinterpret_cast<char*>(first.data()), static_cast<std::streamsize>(n));
  check(in.good(), context, ": reading the preamble failed");
  detail::NpyLayout layout = detail::parse_npy_preamble({first.data(), n}, total, context);

  std::string header(layout.data_offset - layout.header_offset, '\0');
  in.seekg(static_cast<std::streamoff>(layout.header_offset));
  in.read(header.data(), static_cast<std::streamsize>(header.size()));
  check(in.good(), context, ": reading the header failed");
  detail::NpyHeader h = detail::parse_npy_header(header, context);

  const std::uint64_t want = data_bytes(h, context), have = total - layout.data_offset;
  check(have == want, context, size_mismatch(have, h, want));
  Tensor t(h.dtype, h.shape);
  in.read(static_cast<char*>(t.raw_data()), static_cast<std::streamsize>(want));
  check(static_cast<std::uint64_t>(in.gcount()) == want, context, ": reading the data failed");
  finish_elements(t);
  return t;
}

Tensor decode_npy(std::span<const std::byte> bytes, std::string_view source) {
  const std::string context = cat("decode_npy: '", source, "'");
  detail::NpyLayout layout = detail::parse_npy_preamble(
      bytes.first(std::min(bytes.size(), detail::kNpyMaxPreamble)), bytes.size(), context);
  std::string_view header(reinterpret_cast<const char*>(bytes.data()) + layout.header_offset,
                          layout.data_offset - layout.header_offset);
  detail::NpyHeader h = detail::parse_npy_header(header, context);
  const std::uint64_t want = data_bytes(h, context), have = bytes.size() - layout.data_offset;
  check(have == want, context, size_mismatch(have, h, want));
  Tensor t(h.dtype, h.shape);
  if (want > 0) std::memcpy(t.raw_data(), bytes.data() + layout.data_offset, want);
  finish_elements(t);
  return t;
}

std::vector<std::byte> encode_npy(const Tensor& tensor) {
  check(tensor.defined(), "encode_npy: the tensor is undefined");
  const std::string header = detail::npy_header_bytes(tensor.type(), "encode_npy");
  std::vector<std::byte> out(header.size() + tensor.nbytes());
  std::memcpy(out.data(), header.data(), header.size());
  if (tensor.nbytes() > 0)
    std::memcpy(out.data() + header.size(), tensor.raw_data(), tensor.nbytes());
  swap_if_big_endian(out.data() + header.size(), tensor.nbytes(), dtype_size(tensor.dtype()));
  return out;
}

void write_npy(const std::filesystem::path& path, const Tensor& tensor) {
  const std::string context = cat("write_npy: '", path.string(), "'");
  check(tensor.defined(), context, ": the tensor is undefined");
  const std::string header = detail::npy_header_bytes(tensor.type(), context);
  // Host order is the file's order on little-endian hosts: the storage is written as it is.
  std::vector<std::byte> swapped;
  const char* data = static_cast<const char*>(tensor.raw_data());
  if constexpr (std::endian::native == std::endian::big) {
    swapped = encode_npy(tensor);
    data = reinterpret_cast<const char*>(swapped.data()) + header.size();
  }
  detail::write_atomically(path.string(), "write_npy", [&](const std::string& tmp) {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    check(out.is_open(), context, ": cannot create '", tmp, "': ", std::strerror(errno));
    out.write(header.data(), static_cast<std::streamsize>(header.size()));
    out.write(data, static_cast<std::streamsize>(tensor.nbytes()));
    out.close();
    check(!out.fail(), context, ": writing '", tmp, "' failed: ", std::strerror(errno));
  });
}

}  // namespace glia
