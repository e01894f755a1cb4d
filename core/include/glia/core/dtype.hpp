// Element types and their promotion rules.
//
// Promotion (used by the tracing API when two operands differ, as in Nx):
//   bool < u8 < u32 < i32 < i64   (integers; u32 with i32 gives i64)
//   any integer or bool with a float gives that float;
//   f16 with bf16 gives f32; otherwise the wider float wins (f16/bf16 < f32 < f64).
//   glia::promote(glia::u8, glia::f16) == glia::f16
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string_view>
#include <type_traits>

#include "glia/core/error.hpp"
#include "glia/core/half.hpp"

namespace glia {

enum class DType : std::uint8_t { boolean, u8, u32, i32, i64, f16, bf16, f32, f64 };
inline constexpr int kDTypeCount = 9;

inline constexpr DType boolean = DType::boolean;
inline constexpr DType u8 = DType::u8;
inline constexpr DType u32 = DType::u32;
inline constexpr DType i32 = DType::i32;
inline constexpr DType i64 = DType::i64;
inline constexpr DType f16 = DType::f16;
inline constexpr DType bf16 = DType::bf16;
inline constexpr DType f32 = DType::f32;
inline constexpr DType f64 = DType::f64;

std::string_view dtype_name(DType t);
DType dtype_from_name(std::string_view name);  // throws glia::Error for an unknown name
std::ostream& operator<<(std::ostream& out, DType t);

constexpr int dtype_size(DType t) {
  switch (t) {
    case DType::boolean:
    case DType::u8:
      return 1;
    case DType::f16:
    case DType::bf16:
      return 2;
    case DType::u32:
    case DType::i32:
    case DType::f32:
      return 4;
    case DType::i64:
    case DType::f64:
      return 8;
  }
  return 0;
}
constexpr bool is_float(DType t) {
  return t == DType::f16 || t == DType::bf16 || t == DType::f32 || t == DType::f64;
}
constexpr bool is_integer(DType t) {
  return t == DType::u8 || t == DType::u32 || t == DType::i32 || t == DType::i64;
}
constexpr bool is_signed(DType t) { return is_float(t) || t == DType::i32 || t == DType::i64; }

// The common type of two operands (see the table at the top of this file).
DType promote(DType a, DType b);

// The C++ storage type of each dtype, and back.
template <DType T>
struct storage_of;
template <>
struct storage_of<DType::boolean> {
  using type = bool;
};
template <>
struct storage_of<DType::u8> {
  using type = std::uint8_t;
};
template <>
struct storage_of<DType::u32> {
  using type = std::uint32_t;
};
template <>
struct storage_of<DType::i32> {
  using type = std::int32_t;
};
template <>
struct storage_of<DType::i64> {
  using type = std::int64_t;
};
template <>
struct storage_of<DType::f16> {
  using type = Half;
};
template <>
struct storage_of<DType::bf16> {
  using type = BFloat16;
};
template <>
struct storage_of<DType::f32> {
  using type = float;
};
template <>
struct storage_of<DType::f64> {
  using type = double;
};
template <DType T>
using storage_t = typename storage_of<T>::type;

template <class T>
constexpr DType dtype_of() {
  if constexpr (std::is_same_v<T, bool>)
    return DType::boolean;
  else if constexpr (std::is_same_v<T, std::uint8_t>)
    return DType::u8;
  else if constexpr (std::is_same_v<T, std::uint32_t>)
    return DType::u32;
  else if constexpr (std::is_same_v<T, std::int32_t>)
    return DType::i32;
  else if constexpr (std::is_same_v<T, std::int64_t>)
    return DType::i64;
  else if constexpr (std::is_same_v<T, Half>)
    return DType::f16;
  else if constexpr (std::is_same_v<T, BFloat16>)
    return DType::bf16;
  else if constexpr (std::is_same_v<T, float>)
    return DType::f32;
  else if constexpr (std::is_same_v<T, double>)
    return DType::f64;
  else
    static_assert(sizeof(T) == 0, "no glia dtype for this C++ type");
}

// Calls fn(T{}) with a value of the storage type of `t`; fn's result is returned.
//   visit_dtype(t, [&](auto tag) { using T = decltype(tag); ... });
template <class Fn>
decltype(auto) visit_dtype(DType t, Fn&& fn) {
  switch (t) {
    case DType::boolean:
      return fn(bool{});
    case DType::u8:
      return fn(std::uint8_t{});
    case DType::u32:
      return fn(std::uint32_t{});
    case DType::i32:
      return fn(std::int32_t{});
    case DType::i64:
      return fn(std::int64_t{});
    case DType::f16:
      return fn(Half{});
    case DType::bf16:
      return fn(BFloat16{});
    case DType::f32:
      return fn(float{});
    case DType::f64:
      return fn(double{});
  }
  throw Error("visit_dtype: invalid dtype");
}

// The type arithmetic on a storage type happens in: float for the 16-bit floats.
template <class T>
struct compute_of {
  using type = T;
};
template <>
struct compute_of<Half> {
  using type = float;
};
template <>
struct compute_of<BFloat16> {
  using type = float;
};
template <class T>
using compute_t = typename compute_of<T>::type;

}  // namespace glia
