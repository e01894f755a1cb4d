// Fuzz harness: read_idx on any bytes, plain and gzip-compressed. A glia::Error is the
// expected answer to bad input; anything else (a crash, a sanitizer report, another
// exception, a huge allocation) is a bug. Input that is not gzip already is also read
// through gzip, which must give the same tensor: both sources share one parser.
#include <zlib.h>

#include <optional>
#include <stdexcept>
#include <vector>

#include "fuzz_input.hpp"
#include "glia/datasets/idx.hpp"

namespace {

// `data` as a gzip stream (zlib's deflate with the gzip wrapper).
std::vector<std::uint8_t> gzip(const std::uint8_t* data, std::size_t size) {
  z_stream z{};
  if (deflateInit2(&z, Z_BEST_SPEED, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    throw std::runtime_error("deflateInit2 failed");
  std::vector<std::uint8_t> out(deflateBound(&z, size));
  z.next_in = const_cast<std::uint8_t*>(data);
  z.avail_in = static_cast<uInt>(size);
  z.next_out = out.data();
  z.avail_out = static_cast<uInt>(out.size());
  const int ret = deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  if (ret != Z_STREAM_END) throw std::runtime_error("deflate failed");
  return out;
}

std::optional<glia::Tensor> read(const std::uint8_t* data, std::size_t size) {
  try {
    return glia::read_idx(glia::fuzz::scratch_file(data, size, "x.idx"));
  } catch (const glia::Error&) {
    return std::nullopt;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::optional<glia::Tensor> plain = read(data, size);
  const bool is_gzip = size >= 2 && data[0] == 0x1f && data[1] == 0x8b;
  if (is_gzip) return 0;
  const std::vector<std::uint8_t> gz = gzip(data, size);
  std::optional<glia::Tensor> inflated = read(gz.data(), gz.size());
  if (plain.has_value() != inflated.has_value() || (plain && !glia::equal(*plain, *inflated)))
    throw std::logic_error("read_idx: the plain and the gzip-compressed file differ");
  return 0;
}
