#include "glia/core/dtype.hpp"

#include <array>
#include <ostream>

namespace glia {

namespace {
constexpr std::array<std::string_view, kDTypeCount> kNames = {"bool", "u8",   "u32", "i32", "i64",
                                                              "f16",  "bf16", "f32", "f64"};
}  // namespace

std::string_view dtype_name(DType t) { return kNames.at(static_cast<std::size_t>(t)); }

DType dtype_from_name(std::string_view name) {
  for (std::size_t i = 0; i < kNames.size(); ++i)
    if (kNames[i] == name) return static_cast<DType>(i);
  throw Error(cat("unknown dtype '", name,
                  "' (expected one of bool, u8, u32, i32, i64, f16, bf16, f32, f64)"));
}

std::ostream& operator<<(std::ostream& out, DType t) { return out << dtype_name(t); }

DType promote(DType a, DType b) {
  if (a == b) return a;
  if (is_float(a) || is_float(b)) {
    if (!is_float(a)) return b;
    if (!is_float(b)) return a;
    if (a == DType::f64 || b == DType::f64) return DType::f64;
    return DType::f32;  // f32 with a 16-bit float, or f16 with bf16
  }
  // Integers and bool: bool < u8 < u32 < i32 < i64, except u32 with i32 needs i64.
  if ((a == DType::u32 && b == DType::i32) || (a == DType::i32 && b == DType::u32))
    return DType::i64;
  return static_cast<std::uint8_t>(a) > static_cast<std::uint8_t>(b) ? a : b;
}

}  // namespace glia
