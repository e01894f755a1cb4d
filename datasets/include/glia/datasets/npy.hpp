// numpy's .npy format: one array per file, a Python-dict header then the raw elements.
// Reads format versions 1.0, 2.0 and 3.0; writes 1.0 (2.0 when the header needs it), with
// the same bytes as numpy.save. Little-endian, C order; dtypes f32 '<f4', f64 '<f8',
// f16 '<f2', i32 '<i4', i64 '<i8', u32 '<u4', u8 '|u1', bool '|b1'; any rank.
//   glia::write_npy("weights.npy", tensor);
//   glia::Tensor t = glia::read_npy("weights.npy");   // same dtype, shape and bits
#pragma once

#include <cstddef>
#include <filesystem>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "glia/core/tensor.hpp"

namespace glia {

// glia::Error naming the file for a missing, truncated or malformed file, a big-endian or
// unsupported dtype, Fortran order, or a data size that does not match the shape.
Tensor read_npy(const std::filesystem::path& path);
// Atomic: written to a temporary file in the same folder, flushed, then renamed.
// glia::Error for a dtype numpy has no .npy code for here (bf16).
void write_npy(const std::filesystem::path& path, const Tensor& tensor);

// numpy's .npz: a zip archive of .npy files (numpy.savez, stored, and savez_compressed,
// deflated; zip64 entries too), by array name (the member's name without ".npy"). Every
// member is checked against its CRC. glia::Error naming the file and the member for a
// missing, truncated or corrupt archive, an encrypted or otherwise compressed member, a
// member that is not a .npy file, or a malformed array.
//   std::map<std::string, glia::Tensor> a = glia::read_npz("data.npz");  // a.at("x")
std::map<std::string, Tensor> read_npz(const std::filesystem::path& path);

// The same on the bytes of a whole .npy file; `source` names them in messages.
Tensor decode_npy(std::span<const std::byte> bytes, std::string_view source = "npy bytes");
std::vector<std::byte> encode_npy(const Tensor& tensor);

}  // namespace glia
