// Fuzz harness: decode_npy on any bytes, and read_npy on the same bytes in a file. A
// glia::Error is the expected answer to bad input; anything else is a bug. Both readers
// share the header parser, so they must agree: the same tensor, or both an error.
#include <optional>
#include <stdexcept>

#include "fuzz_input.hpp"
#include "glia/datasets/npy.hpp"

namespace {

template <class Read>
std::optional<glia::Tensor> attempt(const Read& read) {
  try {
    return read();
  } catch (const glia::Error&) {
    return std::nullopt;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto* bytes = reinterpret_cast<const std::byte*>(data);
  std::optional<glia::Tensor> decoded = attempt([&] {
    return glia::decode_npy({bytes, size}, "fuzz input");
  });
  std::optional<glia::Tensor> read =
      attempt([&] { return glia::read_npy(glia::fuzz::scratch_file(data, size, "x.npy")); });
  if (decoded.has_value() != read.has_value() || (decoded && !glia::equal(*decoded, *read)))
    throw std::logic_error("decode_npy and read_npy disagree");
  // What was read writes back to bytes that read the same (numpy's own header layout).
  if (decoded && !glia::equal(glia::decode_npy(glia::encode_npy(*decoded), "re-encoded"), *decoded))
    throw std::logic_error("encode_npy does not round-trip what decode_npy read");
  return 0;
}
