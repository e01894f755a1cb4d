// The .npy header: the preamble (magic, version, header length) and the Python dict
// literal after it, {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }, parsed
// and checked field by field; and the header numpy.save writes, byte for byte.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "glia/core/tensor.hpp"

namespace glia::detail {

// The preamble is 10 bytes (version 1.0) or 12 (2.0 and 3.0).
constexpr std::size_t kNpyMaxPreamble = 12;

struct NpyLayout {
  int major = 0;
  std::size_t header_offset = 0;  // where the dict text starts
  std::size_t data_offset = 0;    // where the elements start
};
// Checks the magic, the version and that the header fits in `total` bytes; `first` holds
// the first min(total, kNpyMaxPreamble) bytes. Messages start with `context`.
NpyLayout parse_npy_preamble(std::span<const std::byte> first, std::uint64_t total,
                             std::string_view context);

struct NpyHeader {
  DType dtype;
  Shape shape;
};
// Parses the dict (trailing spaces and newline allowed); glia::Error for bad syntax, missing,
// repeated or extra keys, Fortran order, a big-endian or unsupported dtype.
NpyHeader parse_npy_header(std::string_view text, std::string_view context);

// The whole header numpy.save writes for `type`: preamble, dict, spaces, newline, a
// multiple of 64 bytes; version 2.0 only when the dict does not fit version 1.0's u16 length.
// glia::Error (starting with `context`) for a dtype with no .npy code (bf16).
std::string npy_header_bytes(const TensorType& type, std::string_view context);
// The same for a descr ('<f4') and dimensions.
std::string npy_header_bytes(std::string_view descr, const std::vector<std::int64_t>& dims);

}  // namespace glia::detail
