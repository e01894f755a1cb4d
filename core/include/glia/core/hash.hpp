// FNV-1a, 64-bit: a simple byte hash, stable across platforms and runs (graph
// fingerprints, checkpoint checksums, exported weights).
//   std::uint64_t h = glia::fnv1a(glia::kFnv1aBasis, data, bytes);
//   glia::hash_hex(h) == "af63dc4c8601ec8c"  (for the one byte 'a')
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace glia {

inline constexpr std::uint64_t kFnv1aBasis = 0xcbf29ce484222325ULL;
inline constexpr std::uint64_t kFnv1aPrime = 0x100000001b3ULL;

// `h` (kFnv1aBasis to start) with the n bytes at `data` mixed in.
inline std::uint64_t fnv1a(std::uint64_t h, const void* data, std::size_t n) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (std::size_t i = 0; i < n; ++i) h = (h ^ p[i]) * kFnv1aPrime;
  return h;
}

// A hash as 16 lower-case hex digits (file names, printed fingerprints).
inline std::string hash_hex(std::uint64_t h) {
  std::string text(16, '0');
  for (int i = 15; i >= 0; --i, h >>= 4) text[std::size_t(i)] = "0123456789abcdef"[h & 15];
  return text;
}

}  // namespace glia
