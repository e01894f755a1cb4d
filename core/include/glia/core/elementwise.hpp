// Element-wise math for C++: functors over a compute type that forward to the C functions
// of elementwise_math.h (the one source of the formulas, also compiled by NVRTC and pasted
// into exported C), and THE list of element-wise ops (GLIA_ELEMENTWISE_OPS), from which
// the functors, the reference rules, the CPU dispatch and emitters' name tables come.
//   float y = glia::ew::Exp{}(1.0f);                       // glia_exp_f32(1.0f)
//   glia::ew_accepts(glia::ew_row(glia::Op::exp)->domain, glia::i32) == false
#pragma once

#include <math.h>  // the C header calls the global expf, exp, ...

#include <cmath>
#include <cstdint>
#include <string_view>
#include <type_traits>

#include "glia/core/dtype.hpp"
#include "glia/core/half.hpp"
#include "glia/core/op.hpp"

// The C header's integer types are exactly dtype.hpp's storage types.
#ifndef GLIA_I32
#define GLIA_I32 std::int32_t
#define GLIA_I64 std::int64_t
#define GLIA_U8 std::uint8_t
#define GLIA_U32 std::uint32_t
#define GLIA_U64 std::uint64_t
#endif
#include "glia/core/elementwise_math.h"

namespace glia {

// THE list: one row per element-wise op of the op table.
// X(op enumerator, ew:: functor, class, dtype domain, C name stem)
//   class:  unary | binary | compare (OpClass's enumerators)
//   domain: floats (f16 bf16 f32 f64) | numeric (all but bool) | logical (bool and the
//           integers) | any (EwDomain's enumerators); a compare's operands may be any.
//   stem:   the C functions are glia_<stem>_<t> (elementwise_math.h, ew_c_type).
// (clang-format would write the stem `not` as `not )`, an operator.)
// clang-format off
#define GLIA_ELEMENTWISE_OPS(X)                       \
  X(neg, Neg, unary, numeric, neg)                    \
  X(abs, Abs, unary, numeric, abs)                    \
  X(sign, Sign, unary, numeric, sign)                 \
  X(exp, Exp, unary, floats, exp)                     \
  X(expm1, Expm1, unary, floats, expm1)               \
  X(log, Log, unary, floats, log)                     \
  X(log1p, Log1p, unary, floats, log1p)               \
  X(sqrt, Sqrt, unary, floats, sqrt)                  \
  X(rsqrt, Rsqrt, unary, floats, rsqrt)               \
  X(tanh, Tanh, unary, floats, tanh)                  \
  X(logistic, Logistic, unary, floats, logistic)      \
  X(erf, Erf, unary, floats, erf)                     \
  X(sin, Sin, unary, floats, sin)                     \
  X(cos, Cos, unary, floats, cos)                     \
  X(floor, Floor, unary, numeric, floor)              \
  X(ceil, Ceil, unary, numeric, ceil)                 \
  X(round, Round, unary, numeric, round)              \
  X(not_, Not, unary, logical, not)                   \
  X(add, Add, binary, numeric, add)                   \
  X(subtract, Subtract, binary, numeric, subtract)    \
  X(multiply, Multiply, binary, numeric, multiply)    \
  X(divide, Divide, binary, numeric, divide)          \
  X(pow, Pow, binary, numeric, pow)                   \
  X(max, Max, binary, numeric, max)                   \
  X(min, Min, binary, numeric, min)                   \
  X(remainder, Remainder, binary, numeric, remainder) \
  X(atan2, Atan2, binary, floats, atan2)              \
  X(and_, And, binary, logical, and)                  \
  X(or_, Or, binary, logical, or)                     \
  X(eq, Eq, compare, any, eq)                         \
  X(ne, Ne, compare, any, ne)                         \
  X(lt, Lt, compare, any, lt)                         \
  X(le, Le, compare, any, le)                         \
  X(gt, Gt, compare, any, gt)                         \
  X(ge, Ge, compare, any, ge)
// clang-format on

// Which dtypes an element-wise op accepts (16-bit floats compute in f32).
enum class EwDomain : std::uint8_t { floats, numeric, logical, any };

constexpr bool ew_accepts(EwDomain d, DType t) {
  switch (d) {
    case EwDomain::floats:
      return is_float(t);
    case EwDomain::numeric:
      return t != DType::boolean;
    case EwDomain::logical:
      return !is_float(t);
    case EwDomain::any:
      return true;
  }
  return false;
}

// What a domain accepts, for error messages: "expected <text>, got ...".
constexpr std::string_view ew_domain_text(EwDomain d) {
  switch (d) {
    case EwDomain::floats:
      return "a floating-point dtype (f16, bf16, f32, f64)";
    case EwDomain::numeric:
      return "a numeric dtype (not bool)";
    case EwDomain::logical:
      return "bool or an integer dtype";
    case EwDomain::any:
      return "any dtype";
  }
  return "";
}

// The C suffix of t's compute type (f16 and bf16 compute in f32): with a row's c_stem,
// the C function "glia_" + c_stem + "_" + ew_c_type(t).
constexpr std::string_view ew_c_type(DType t) {
  switch (t) {
    case DType::boolean:
      return "bool";
    case DType::u8:
      return "u8";
    case DType::u32:
      return "u32";
    case DType::i32:
      return "i32";
    case DType::i64:
      return "i64";
    case DType::f16:
    case DType::bf16:
    case DType::f32:
      return "f32";
    case DType::f64:
      return "f64";
  }
  return "";
}

// The type elementwise_math.h names for t's stored elements, for generated C and CUDA
// source: glia_bool, glia_u8, ..., float, double; f16 and bf16 are stored as their bits
// (glia_u16).
constexpr std::string_view ew_storage_type(DType t) {
  switch (t) {
    case DType::boolean:
      return "glia_bool";
    case DType::u8:
      return "glia_u8";
    case DType::u32:
      return "glia_u32";
    case DType::i32:
      return "glia_i32";
    case DType::i64:
      return "glia_i64";
    case DType::f16:
    case DType::bf16:
      return "glia_u16";
    case DType::f32:
      return "float";
    case DType::f64:
      return "double";
  }
  return "";
}

// A row of GLIA_ELEMENTWISE_OPS as data, for code that dispatches on a run-time Op.
struct EwRow {
  Op op;
  OpClass op_class;
  EwDomain domain;
  std::string_view c_stem;
};

inline constexpr EwRow kElementwiseOps[] = {
#define GLIA_EW_ROW(op, F, cls, domain, stem) EwRow{Op::op, OpClass::cls, EwDomain::domain, #stem},
    GLIA_ELEMENTWISE_OPS(GLIA_EW_ROW)
#undef GLIA_EW_ROW
};

// The row of `op`, or nullptr when op is not element-wise math (select, cast, ...).
constexpr const EwRow* ew_row(Op op) {
  for (const EwRow& row : kElementwiseOps)
    if (row.op == op) return &row;
  return nullptr;
}

// elementwise_math.h's text, for NVRTC and the AOT exporter (embedded at build time).
std::string_view elementwise_source();

namespace ew {

namespace detail {
template <class T>
inline constexpr bool kNoCFunction = false;
}  // namespace detail

// The compute types of each domain, as X(C++ type, C suffix, ...).
// (Laid out by hand: clang-format would break the rows.)
// clang-format off
#define GLIA_EW_TYPES_floats(X, ...) X(float, f32, __VA_ARGS__) X(double, f64, __VA_ARGS__)
#define GLIA_EW_TYPES_ints(X, ...)                                    \
  X(std::int32_t, i32, __VA_ARGS__) X(std::int64_t, i64, __VA_ARGS__) \
  X(std::uint8_t, u8, __VA_ARGS__) X(std::uint32_t, u32, __VA_ARGS__)
#define GLIA_EW_TYPES_numeric(X, ...) \
  GLIA_EW_TYPES_floats(X, __VA_ARGS__) GLIA_EW_TYPES_ints(X, __VA_ARGS__)
#define GLIA_EW_TYPES_logical(X, ...) GLIA_EW_TYPES_ints(X, __VA_ARGS__) X(bool, bool, __VA_ARGS__)
#define GLIA_EW_TYPES_any(X, ...) GLIA_EW_TYPES_numeric(X, __VA_ARGS__) X(bool, bool, __VA_ARGS__)
#define GLIA_EW_CASE(type, t, C, name, ...) \
  if constexpr (std::is_same_v<C, type>) return name##_##t(__VA_ARGS__); else

// The body `return name_<t>(args...);` for the compute type C, t its C suffix: after
// `if constexpr` only the one call is left, which inlines like the C function itself. A
// type outside the domain fails to compile.
#define GLIA_EW_DISPATCH(domain, C, name, ...)               \
  GLIA_EW_TYPES_##domain(GLIA_EW_CASE, C, name, __VA_ARGS__) \
  static_assert(::glia::ew::detail::kNoCFunction<C>, #name ": not defined for this type");
// clang-format on

// One functor per row: ew::Neg ... ew::Ge, called as F{}(x) or F{}(a, b) on a compute
// type of the op's domain (float, double, std::int32_t, std::int64_t, std::uint8_t,
// std::uint32_t, bool); comparisons return bool.
#define GLIA_EW_FUNCTOR_unary(F, domain, stem)    \
  struct F {                                      \
    template <class T>                            \
    GLIA_HD T operator()(T x) const {             \
      GLIA_EW_DISPATCH(domain, T, glia_##stem, x) \
    }                                             \
  };
#define GLIA_EW_FUNCTOR_binary(F, domain, stem)      \
  struct F {                                         \
    template <class T>                               \
    GLIA_HD T operator()(T a, T b) const {           \
      GLIA_EW_DISPATCH(domain, T, glia_##stem, a, b) \
    }                                                \
  };
#define GLIA_EW_FUNCTOR_compare(F, domain, stem)     \
  struct F {                                         \
    template <class T>                               \
    GLIA_HD bool operator()(T a, T b) const {        \
      GLIA_EW_DISPATCH(domain, T, glia_##stem, a, b) \
    }                                                \
  };
#define GLIA_EW_FUNCTOR(op, F, cls, domain, stem) GLIA_EW_FUNCTOR_##cls(F, domain, stem)
GLIA_ELEMENTWISE_OPS(GLIA_EW_FUNCTOR)
#undef GLIA_EW_FUNCTOR
#undef GLIA_EW_FUNCTOR_unary
#undef GLIA_EW_FUNCTOR_binary
#undef GLIA_EW_FUNCTOR_compare

}  // namespace ew

}  // namespace glia
