/* glia's element-wise math and reduction monoids, written once for every backend: the
 * C++ reference kernels and CPU executor (through elementwise.hpp and monoid.hpp), CUDA
 * kernels compiled by NVRTC, and the C that the AOT exporter emits
 * (glia::elementwise_source() is this file's text). Usage from C:
 *   #include <math.h>
 *   #include <stdint.h>
 *   #include "glia/core/elementwise_math.h"
 *   float y = glia_logistic_f32(x);   int32_t q = glia_divide_i32(7, 0);   (q == 0)
 *
 * The text is the common subset of C11, C++20 and CUDA C++ under NVRTC, so it includes
 * nothing (NVRTC has no standard headers) and has no templates, overloading or std::.
 * Macros stamp out one copy per compute type, so each formula is written once per kind
 * of type (float, integer, bool).
 *
 * Names (t is a compute type: f32 (also for f16 and bf16), f64, i32, i64, u8, u32, bool):
 *   glia_<op>_<t>(x) or (a, b)  an element-wise op, <op> its name in the op table (neg,
 *                               exp, add, not, eq, ...), defined for the t of its domain:
 *                               float ops f32 f64; numeric ops f32 f64 i32 i64 u8 u32;
 *                               logical ops i32 i64 u8 u32 bool; comparisons all seven
 *                               (they return glia_bool).
 *   glia_<m>_acc_<t>            the accumulator type of monoid m (sum, prod, max, min)
 *                               over inputs of compute type t (any numeric t): sums and
 *                               products of floats in double, of integers in glia_u64
 *                               (wrap-around, the narrow type's result after narrowing);
 *                               max and min in t itself.
 *   glia_<m>_identity_<t>()     the identity, as an accumulator
 *   glia_<m>_widen_<t>(x)       an input value as an accumulator
 *   glia_<m>_combine_<t>(a, v)  the accumulator a combined with v (float max and min: a
 *                               NaN, once seen, stays)
 *   glia_<m>_narrow_<t>(a)      the accumulator back in the compute type t
 *   glia_f32_from_f16(h), glia_f16_from_f32(x), glia_f32_from_bf16(h), glia_bf16_from_f32(x)
 *                               16-bit float storage (glia_u16 bits) to and from float,
 *                               rounding to nearest even (half.hpp's Half and BFloat16)
 *   glia_threefry2x32(k0, k1, c0, c1)
 *                               Threefry-2x32, 20 rounds: the counter (c0, c1) encrypted
 *                               under the key (k0, k1), as x0 | x1 << 32 (threefry.hpp)
 *   glia_threefry2x32_words4(k0, k1, c, q, wx, wy, wz, wu)  four blocks q apart, stored
 *   glia_random_word(k0, k1, i) word i of random_bits under that key: pair i / 2 uses
 *                               counter (hi32(i / 2), lo32(i / 2)), word i % 2 of it
 *
 * What the includer provides, or may define before including this file:
 *   math       <math.h>'s expf, exp, log1pf, ...: C <math.h>, C++ <cmath>; NVRTC's own.
 *   GLIA_I32 GLIA_I64 GLIA_U8 GLIA_U16 GLIA_U32 GLIA_U64  exact-width integer types:
 *              <stdint.h>'s (the includer includes it), under NVRTC (no <stdint.h>) the
 *              builtin types the CUDA ABI fixes. Named glia_i32 ... glia_u64 here, never
 *              int32_t, which would clash with a later <stdint.h> or pick a wrong type.
 *   GLIA_BOOL  bool in C++ and CUDA, _Bool in C (0 or 1). Named glia_bool here.
 *   GLIA_EW_FN how each function is declared: static inline; under CUDA inline
 *              __host__ __device__ (__device__ under NVRTC, which compiles no host code).
 *   GLIA_EW_INF_F GLIA_EW_INF_D  float and double infinity: INFINITY from <math.h>, and
 *              bit casts under NVRTC.
 */
#ifndef GLIA_ELEMENTWISE_MATH_H
#define GLIA_ELEMENTWISE_MATH_H

#ifndef GLIA_EW_FN
/* Under CUDA, inline without static: NVRTC warns about every unused static function. */
#if defined(__CUDACC_RTC__)
#define GLIA_EW_FN inline __device__
#elif defined(__CUDACC__)
#define GLIA_EW_FN inline __host__ __device__
#else
#define GLIA_EW_FN static inline
#endif
#endif

#if defined(__CUDACC_RTC__)
#define GLIA_EW_INT_TYPE_(builtin, stdint) builtin
#else
#define GLIA_EW_INT_TYPE_(builtin, stdint) stdint
#endif
#ifndef GLIA_I32
#define GLIA_I32 GLIA_EW_INT_TYPE_(int, int32_t)
#endif
#ifndef GLIA_I64
#define GLIA_I64 GLIA_EW_INT_TYPE_(long long, int64_t)
#endif
#ifndef GLIA_U8
#define GLIA_U8 GLIA_EW_INT_TYPE_(unsigned char, uint8_t)
#endif
#ifndef GLIA_U16
#define GLIA_U16 GLIA_EW_INT_TYPE_(unsigned short, uint16_t)
#endif
#ifndef GLIA_U32
#define GLIA_U32 GLIA_EW_INT_TYPE_(unsigned int, uint32_t)
#endif
#ifndef GLIA_U64
#define GLIA_U64 GLIA_EW_INT_TYPE_(unsigned long long, uint64_t)
#endif
#ifndef GLIA_BOOL
#ifdef __cplusplus
#define GLIA_BOOL bool
#else
#define GLIA_BOOL _Bool
#endif
#endif

#ifndef GLIA_EW_INF_F
#if defined(__CUDACC_RTC__)
#define GLIA_EW_INF_F __int_as_float(0x7f800000)
#define GLIA_EW_INF_D __longlong_as_double(0x7ff0000000000000LL)
#else
#define GLIA_EW_INF_F ((float)INFINITY)
#define GLIA_EW_INF_D ((double)INFINITY)
#endif
#endif

typedef GLIA_I32 glia_i32;
typedef GLIA_I64 glia_i64;
typedef GLIA_U8 glia_u8;
typedef GLIA_U16 glia_u16;
typedef GLIA_U32 glia_u32;
typedef GLIA_U64 glia_u64;
typedef GLIA_BOOL glia_bool;

/* The per-type constants the monoids need, by suffix (pasted as GLIA_EW_INF_##t). */
#define GLIA_EW_INF_f32 GLIA_EW_INF_F
#define GLIA_EW_INF_f64 GLIA_EW_INF_D
#define GLIA_EW_MIN_i32 (-2147483647 - 1)
#define GLIA_EW_MAX_i32 2147483647
#define GLIA_EW_MIN_i64 (-9223372036854775807LL - 1)
#define GLIA_EW_MAX_i64 9223372036854775807LL
#define GLIA_EW_MIN_u8 0
#define GLIA_EW_MAX_u8 255
#define GLIA_EW_MIN_u32 0u
#define GLIA_EW_MAX_u32 4294967295u

/* The compute types. Floats: M(t, T, m), m the suffix of T's <math.h> functions (expf,
 * exp). Integers: M(t, T, U, S), U the unsigned type of T's width, in which arithmetic
 * wraps around (defined, where signed overflow is not), S 1 for a signed T. */
#define GLIA_EW_FLOAT_TYPES(M) M(f32, float, f) M(f64, double, )
#define GLIA_EW_SIGNED_TYPES(M) M(i32, glia_i32, glia_u32, 1) M(i64, glia_i64, glia_u64, 1)
#define GLIA_EW_UNSIGNED_TYPES(M) M(u8, glia_u8, glia_u8, 0) M(u32, glia_u32, glia_u32, 0)
#define GLIA_EW_INT_TYPES(M) GLIA_EW_SIGNED_TYPES(M) GLIA_EW_UNSIGNED_TYPES(M)

/* ---- Element-wise ops on floats ---------------------------------------------------- */

#define GLIA_EW_FLOAT_OPS(t, T, m)                                                          \
  GLIA_EW_FN T glia_neg_##t(T x) { return -x; }                                             \
  GLIA_EW_FN T glia_abs_##t(T x) { return fabs##m(x); }                                     \
  /* A NaN stays NaN (its payload too); -0 gives +0. */                                     \
  GLIA_EW_FN T glia_sign_##t(T x) { return x != x ? x : (T)((0 < x) - (x < 0)); }           \
  GLIA_EW_FN T glia_exp_##t(T x) { return exp##m(x); }                                      \
  GLIA_EW_FN T glia_expm1_##t(T x) { return expm1##m(x); }                                  \
  GLIA_EW_FN T glia_log_##t(T x) { return log##m(x); }                                      \
  GLIA_EW_FN T glia_log1p_##t(T x) { return log1p##m(x); }                                  \
  GLIA_EW_FN T glia_sqrt_##t(T x) { return sqrt##m(x); }                                    \
  GLIA_EW_FN T glia_rsqrt_##t(T x) { return (T)1 / sqrt##m(x); }                            \
  GLIA_EW_FN T glia_tanh_##t(T x) { return tanh##m(x); }                                    \
  /* Stable on both tails (exp never sees a large positive argument) and branch-free,  */   \
  /* so vectorising compilers call the vector exp: exp(-|x|) serves both halves. -|x|  */   \
  /* is written as a select so that a NaN keeps its sign bit: bitwise the same as      */   \
  /* 1 / (1 + exp(-x)) for x >= 0 and exp(x) / (1 + exp(x)) otherwise, NaN included.   */   \
  GLIA_EW_FN T glia_logistic_##t(T x) {                                                     \
    T e = exp##m(x >= 0 ? -x : x);                                                          \
    return (x >= 0 ? (T)1 : e) / ((T)1 + e);                                                \
  }                                                                                         \
  GLIA_EW_FN T glia_erf_##t(T x) { return erf##m(x); }                                      \
  GLIA_EW_FN T glia_sin_##t(T x) { return sin##m(x); }                                      \
  GLIA_EW_FN T glia_cos_##t(T x) { return cos##m(x); }                                      \
  GLIA_EW_FN T glia_floor_##t(T x) { return floor##m(x); }                                  \
  GLIA_EW_FN T glia_ceil_##t(T x) { return ceil##m(x); }                                    \
  /* Half away from zero, as Nx. */                                                         \
  GLIA_EW_FN T glia_round_##t(T x) { return round##m(x); }                                  \
  GLIA_EW_FN T glia_add_##t(T a, T b) { return a + b; }                                     \
  GLIA_EW_FN T glia_subtract_##t(T a, T b) { return a - b; }                                \
  GLIA_EW_FN T glia_multiply_##t(T a, T b) { return a * b; }                                \
  GLIA_EW_FN T glia_divide_##t(T a, T b) { return a / b; }                                  \
  /* The sign of the dividend (C's fmod). */                                                \
  GLIA_EW_FN T glia_remainder_##t(T a, T b) { return fmod##m(a, b); }                       \
  GLIA_EW_FN T glia_pow_##t(T a, T b) { return pow##m(a, b); }                              \
  /* A NaN operand gives NaN, the first one's. Two selects, which GCC turns into blends: */ \
  /* loops over them vectorise (a clamp did not with a + b under an or of two tests).    */ \
  GLIA_EW_FN T glia_max_##t(T a, T b) { return a != a ? a : a > b ? a : b; }                \
  GLIA_EW_FN T glia_min_##t(T a, T b) { return a != a ? a : a < b ? a : b; }                \
  GLIA_EW_FN T glia_atan2_##t(T a, T b) { return atan2##m(a, b); }

/* ---- Element-wise ops on integers -------------------------------------------------- */

/* Integer arithmetic goes through U, so overflow wraps (-MIN == MIN) without undefined
 * behaviour; x / 0 == 0, MIN / -1 == MIN, x % 0 == x and x % -1 == 0 instead of
 * trapping. Rounding is the identity. */
#define GLIA_EW_INT_OPS(t, T, U, S)                                        \
  GLIA_EW_FN T glia_neg_##t(T x) { return (T)(0 - (U)x); }                 \
  GLIA_EW_FN T glia_floor_##t(T x) { return x; }                           \
  GLIA_EW_FN T glia_ceil_##t(T x) { return x; }                            \
  GLIA_EW_FN T glia_round_##t(T x) { return x; }                           \
  GLIA_EW_FN T glia_not_##t(T x) { return (T)~x; }                         \
  GLIA_EW_FN T glia_add_##t(T a, T b) { return (T)((U)a + (U)b); }         \
  GLIA_EW_FN T glia_subtract_##t(T a, T b) { return (T)((U)a - (U)b); }    \
  GLIA_EW_FN T glia_multiply_##t(T a, T b) { return (T)((U)a * (U)b); }    \
  /* Truncates toward zero. */                                             \
  GLIA_EW_FN T glia_divide_##t(T a, T b) {                                 \
    return b == 0 ? (T)0 : (S && b == (T)-1) ? (T)(0 - (U)a) : (T)(a / b); \
  }                                                                        \
  GLIA_EW_FN T glia_remainder_##t(T a, T b) {                              \
    return b == 0 ? a : (S && b == (T)-1) ? (T)0 : (T)(a % b);             \
  }                                                                        \
  GLIA_EW_FN T glia_max_##t(T a, T b) { return a > b ? a : b; }            \
  GLIA_EW_FN T glia_min_##t(T a, T b) { return a < b ? a : b; }            \
  GLIA_EW_FN T glia_and_##t(T a, T b) { return (T)(a & b); }               \
  GLIA_EW_FN T glia_or_##t(T a, T b) { return (T)(a | b); }                \
  /* base^e by squaring, modulo 2^bits. */                                 \
  GLIA_EW_FN U glia_ew_upow_##t(U base, U e) {                             \
    U result = 1;                                                          \
    for (; e; e >>= 1) {                                                   \
      if (e & 1) result = (U)(result * base);                              \
      base = (U)(base * base);                                             \
    }                                                                      \
    return result;                                                         \
  }

/* Separate from GLIA_EW_INT_OPS: `x < 0` on an unsigned type draws warnings. */
#define GLIA_EW_SIGNED_OPS(t, T, U, S)                                             \
  GLIA_EW_FN T glia_abs_##t(T x) { return x < 0 ? (T)(0 - (U)x) : x; }             \
  GLIA_EW_FN T glia_sign_##t(T x) { return (T)((0 < x) - (x < 0)); }               \
  /* A negative exponent truncates like 1 / a^|b|: 1 for 1, +-1 for -1, else 0. */ \
  GLIA_EW_FN T glia_pow_##t(T a, T b) {                                            \
    if (b < 0) return a == 1 ? (T)1 : a == -1 ? ((b & 1) ? (T)-1 : (T)1) : (T)0;   \
    return (T)glia_ew_upow_##t((U)a, (U)b);                                        \
  }
#define GLIA_EW_UNSIGNED_OPS(t, T, U, S)                  \
  GLIA_EW_FN T glia_abs_##t(T x) { return x; }            \
  GLIA_EW_FN T glia_sign_##t(T x) { return (T)(x != 0); } \
  GLIA_EW_FN T glia_pow_##t(T a, T b) { return (T)glia_ew_upow_##t((U)a, (U)b); }

/* ---- Logical ops on bool, comparisons on every type -------------------------------- */

GLIA_EW_FN glia_bool glia_not_bool(glia_bool x) { return !x; }
GLIA_EW_FN glia_bool glia_and_bool(glia_bool a, glia_bool b) { return a && b; }
GLIA_EW_FN glia_bool glia_or_bool(glia_bool a, glia_bool b) { return a || b; }

/* `...` takes the type lists' other columns, unused here. */
#define GLIA_EW_COMPARE_OPS(t, T, ...)                          \
  GLIA_EW_FN glia_bool glia_eq_##t(T a, T b) { return a == b; } \
  GLIA_EW_FN glia_bool glia_ne_##t(T a, T b) { return a != b; } \
  GLIA_EW_FN glia_bool glia_lt_##t(T a, T b) { return a < b; }  \
  GLIA_EW_FN glia_bool glia_le_##t(T a, T b) { return a <= b; } \
  GLIA_EW_FN glia_bool glia_gt_##t(T a, T b) { return a > b; }  \
  GLIA_EW_FN glia_bool glia_ge_##t(T a, T b) { return a >= b; }

/* ---- Reduction monoids ------------------------------------------------------------- */

/* Sum and product over inputs of type T, accumulated in A (double or glia_u64). Integer
 * inputs widen through glia_i64, so a negative value sign-extends and the u64 sum
 * wraps to the narrow type's sum when narrowed. */
#define GLIA_EW_ARITH_MONOID(m, t, T, A, W, identity, op)                   \
  typedef A glia_##m##_acc_##t;                                             \
  GLIA_EW_FN A glia_##m##_identity_##t(void) { return identity; }           \
  GLIA_EW_FN A glia_##m##_widen_##t(T x) { return (A)(W)x; }                \
  GLIA_EW_FN A glia_##m##_combine_##t(A acc, A v) { return (A)(acc op v); } \
  GLIA_EW_FN T glia_##m##_narrow_##t(A acc) { return (T)acc; }

/* Max and min over T, accumulated in T; takes_v says when v replaces acc. */
#define GLIA_EW_EXTREME_MONOID(m, t, T, identity, takes_v)                      \
  typedef T glia_##m##_acc_##t;                                                 \
  GLIA_EW_FN T glia_##m##_identity_##t(void) { return identity; }               \
  GLIA_EW_FN T glia_##m##_widen_##t(T x) { return x; }                          \
  GLIA_EW_FN T glia_##m##_combine_##t(T acc, T v) { return takes_v ? v : acc; } \
  GLIA_EW_FN T glia_##m##_narrow_##t(T acc) { return acc; }

/* A NaN input replaces the accumulator, and no later v beats a NaN accumulator (every
 * comparison with NaN is false), so a NaN once seen stays. */
#define GLIA_EW_FLOAT_MONOIDS(t, T, m)                                     \
  GLIA_EW_ARITH_MONOID(sum, t, T, double, double, 0, +)                    \
  GLIA_EW_ARITH_MONOID(prod, t, T, double, double, 1, *)                   \
  GLIA_EW_EXTREME_MONOID(max, t, T, -GLIA_EW_INF_##t, (v != v || v > acc)) \
  GLIA_EW_EXTREME_MONOID(min, t, T, GLIA_EW_INF_##t, (v != v || v < acc))
#define GLIA_EW_INT_MONOIDS(t, T, U, S)                          \
  GLIA_EW_ARITH_MONOID(sum, t, T, glia_u64, glia_i64, 0, +)      \
  GLIA_EW_ARITH_MONOID(prod, t, T, glia_u64, glia_i64, 1, *)     \
  GLIA_EW_EXTREME_MONOID(max, t, T, (T)GLIA_EW_MIN_##t, v > acc) \
  GLIA_EW_EXTREME_MONOID(min, t, T, (T)GLIA_EW_MAX_##t, v < acc)

/* ---- The stamping ------------------------------------------------------------------ */

GLIA_EW_FLOAT_TYPES(GLIA_EW_FLOAT_OPS)
GLIA_EW_INT_TYPES(GLIA_EW_INT_OPS)
GLIA_EW_SIGNED_TYPES(GLIA_EW_SIGNED_OPS)
GLIA_EW_UNSIGNED_TYPES(GLIA_EW_UNSIGNED_OPS)
GLIA_EW_FLOAT_TYPES(GLIA_EW_COMPARE_OPS)
GLIA_EW_INT_TYPES(GLIA_EW_COMPARE_OPS)
GLIA_EW_COMPARE_OPS(bool, glia_bool, )
GLIA_EW_FLOAT_TYPES(GLIA_EW_FLOAT_MONOIDS)
GLIA_EW_INT_TYPES(GLIA_EW_INT_MONOIDS)

/* ---- 16-bit float storage ---------------------------------------------------------- */

/* A float's bits and back: CUDA's intrinsics, C++20's bit cast (GCC and Clang spell it
 * __builtin_bit_cast in any mode), a union in C. */
#if defined(__CUDACC_RTC__) || defined(__CUDACC__)
#define GLIA_EW_F32_BITS(x) __float_as_uint(x)
#define GLIA_EW_BITS_F32(u) __uint_as_float(u)
#elif defined(__cplusplus)
#define GLIA_EW_F32_BITS(x) __builtin_bit_cast(glia_u32, (float)(x))
#define GLIA_EW_BITS_F32(u) __builtin_bit_cast(float, (glia_u32)(u))
#else
/* clang-format off */
typedef union { float f; glia_u32 u; } glia_ew_f32_u32_;
GLIA_EW_FN glia_u32 glia_ew_f32_bits_(float x) { glia_ew_f32_u32_ v; v.f = x; return v.u; }
GLIA_EW_FN float glia_ew_bits_f32_(glia_u32 u) { glia_ew_f32_u32_ v; v.u = u; return v.f; }
/* clang-format on */
#define GLIA_EW_F32_BITS(x) glia_ew_f32_bits_(x)
#define GLIA_EW_BITS_F32(u) glia_ew_bits_f32_(u)
#endif

/* bfloat16: the float's top half, rounded to nearest even; a NaN stays a quiet NaN. */
GLIA_EW_FN glia_u16 glia_bf16_from_f32(float x) {
  glia_u32 u = GLIA_EW_F32_BITS(x);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (glia_u16)((u >> 16) | 0x40u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return (glia_u16)(u >> 16);
}
GLIA_EW_FN float glia_f32_from_bf16(glia_u16 h) { return GLIA_EW_BITS_F32((glia_u32)h << 16); }

/* IEEE half: overflow to infinity from 65520 on, subnormals rounded by the FPU. */
GLIA_EW_FN glia_u16 glia_f16_from_f32(float x) {
  glia_u32 u = GLIA_EW_F32_BITS(x);
  glia_u32 sign = (u >> 16) & 0x8000u;
  glia_u32 a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return (glia_u16)(sign | 0x7e00u); /* NaN */
  if (a >= 0x477ff000u) return (glia_u16)(sign | 0x7c00u);
  if (a < 0x38800000u) {
    /* Below the smallest normal half: adding 0.5f aligns the subnormal half's bits with
     * the low mantissa bits of the float sum, so the FPU rounds to nearest even. */
    float r = GLIA_EW_BITS_F32(a) + 0.5f;
    return (glia_u16)(sign | (GLIA_EW_F32_BITS(r) - 0x3f000000u));
  }
  a += 0xc8000fffu + ((a >> 13) & 1u); /* rebias the exponent (-112 << 23) and round */
  return (glia_u16)(sign | (a >> 13));
}
GLIA_EW_FN float glia_f32_from_f16(glia_u16 h) {
  glia_u32 sign = (glia_u32)(h & 0x8000u) << 16;
  glia_u32 e = (h >> 10) & 0x1fu;
  glia_u32 mant = h & 0x3ffu;
  if (e == 0x1f) return GLIA_EW_BITS_F32(sign | 0x7f800000u | (mant << 13));
  if (e == 0) { /* zero or subnormal: mant * 2^-24 */
    float f = (float)mant * 5.9604644775390625e-8f;
    return sign ? -f : f;
  }
  return GLIA_EW_BITS_F32(sign | ((e + 112u) << 23) | (mant << 13));
}

/* ---- Threefry-2x32 ----------------------------------------------------------------- */
/* Salmon et al., "Parallel random numbers: as easy as 1, 2, 3" (Random123's R_32x2
 * rotations, a key injection after every fourth of 20 rounds); JAX's PRNG block. The rounds
 * are written out (no loop or branch: GCC vectorises loops over counters only so). On block
 * p's words p0, p1: a round, a key injection, the start; E(M, v): M(p, v) for each block. */
/* clang-format off */
#define GLIA_EW_TF_R_(p, r) p##0 += p##1, p##1 = ((p##1 << (r)) | (p##1 >> (32 - (r)))) ^ p##0;
#define GLIA_EW_TF_K_(p, s) p##0 += ks[(s) % 3], p##1 += ks[((s) + 1) % 3] + (glia_u32)(s);
#define GLIA_EW_TF_IN_(p, c) glia_u32 p##0 = (glia_u32)((c) >> 32) + k0, p##1 = (glia_u32)(c) + k1;
#define GLIA_EW_TF_FOUR_(E, a, b, c, d, s)                                    \
  E(GLIA_EW_TF_R_, a) E(GLIA_EW_TF_R_, b) E(GLIA_EW_TF_R_, c) E(GLIA_EW_TF_R_, d) \
  E(GLIA_EW_TF_K_, s)
#define GLIA_EW_TF_ROUNDS_(E)                                                      \
  GLIA_EW_TF_FOUR_(E, 13, 15, 26, 6, 1) GLIA_EW_TF_FOUR_(E, 17, 29, 16, 24, 2) \
  GLIA_EW_TF_FOUR_(E, 13, 15, 26, 6, 3) GLIA_EW_TF_FOUR_(E, 17, 29, 16, 24, 4) \
  GLIA_EW_TF_FOUR_(E, 13, 15, 26, 6, 5)
#define GLIA_EW_TF_ONE_(M, v) M(x, v)
#define GLIA_EW_TF_QUAD_(M, v) M(x, v) M(y, v) M(z, v) M(u, v)
GLIA_EW_FN glia_u64 glia_threefry2x32(glia_u32 k0, glia_u32 k1, glia_u32 c0, glia_u32 c1) {
  const glia_u32 ks[3] = {k0, k1, 0x1BD11BDAu ^ k0 ^ k1};
  glia_u32 x0 = c0 + k0, x1 = c1 + k1;
  GLIA_EW_TF_ROUNDS_(GLIA_EW_TF_ONE_)
  return (glia_u64)x0 | ((glia_u64)x1 << 32);
}
/* Counters c, c + q, c + 2q, c + 3q (64 bits) into wx, wy, wz, wu [0, 1], their rounds
 * interleaved: four chains of dependent operations keep the vector units busier than one
 * (256 words, Zen 3: 1.6 -> 0.9 ns a word); stored through pointers, loops over c vectorise
 * without packing words into 64 bits. Always inlined: GCC does not, and nothing vectorises. */
#if defined(__GNUC__) && !defined(__CUDACC__)
__attribute__((always_inline))
#endif
GLIA_EW_FN void glia_threefry2x32_words4(glia_u32 k0, glia_u32 k1, glia_u64 c, glia_u64 q,
                                         glia_u32* wx, glia_u32* wy, glia_u32* wz, glia_u32* wu) {
  const glia_u32 ks[3] = {k0, k1, 0x1BD11BDAu ^ k0 ^ k1};
  GLIA_EW_TF_IN_(x, c) GLIA_EW_TF_IN_(y, c + q) GLIA_EW_TF_IN_(z, c + 2 * q)
  GLIA_EW_TF_IN_(u, c + 3 * q) GLIA_EW_TF_ROUNDS_(GLIA_EW_TF_QUAD_)
  wx[0] = x0, wx[1] = x1, wy[0] = y0, wy[1] = y1, wz[0] = z0, wz[1] = z1, wu[0] = u0, wu[1] = u1;
}
/* clang-format on */
#undef GLIA_EW_TF_R_
#undef GLIA_EW_TF_K_
#undef GLIA_EW_TF_IN_
#undef GLIA_EW_TF_FOUR_
#undef GLIA_EW_TF_ROUNDS_
#undef GLIA_EW_TF_ONE_
#undef GLIA_EW_TF_QUAD_
GLIA_EW_FN glia_u32 glia_random_word(glia_u32 k0, glia_u32 k1, glia_u64 i) {
  glia_u64 j = i >> 1;
  glia_u64 r = glia_threefry2x32(k0, k1, (glia_u32)(j >> 32), (glia_u32)j);
  return (glia_u32)((i & 1) ? r >> 32 : r);
}

#endif /* GLIA_ELEMENTWISE_MATH_H */
