// 16-bit floating-point storage types (IEEE half and bfloat16). Arithmetic on
// them happens in float; these types only store and convert, rounding to nearest even.
#pragma once

#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define GLIA_HD __host__ __device__
#else
#define GLIA_HD
#endif

namespace glia {

namespace detail {
GLIA_HD inline std::uint32_t float_bits(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
GLIA_HD inline float bits_float(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
}  // namespace detail

struct BFloat16 {
  std::uint16_t bits = 0;
  BFloat16() = default;
  GLIA_HD explicit BFloat16(float f) {
    std::uint32_t u = detail::float_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) {  // NaN: keep it quiet and NaN
      bits = static_cast<std::uint16_t>((u >> 16) | 0x40u);
      return;
    }
    u += 0x7fffu + ((u >> 16) & 1u);  // round to nearest even
    bits = static_cast<std::uint16_t>(u >> 16);
  }
  GLIA_HD operator float() const { return detail::bits_float(std::uint32_t(bits) << 16); }
};

struct Half {
  std::uint16_t bits = 0;
  Half() = default;
  GLIA_HD explicit Half(float f) {
    std::uint32_t u = detail::float_bits(f);
    std::uint32_t sign = (u >> 16) & 0x8000u;
    std::uint32_t a = u & 0x7fffffffu;
    if (a > 0x7f800000u) {  // NaN
      bits = static_cast<std::uint16_t>(sign | 0x7e00u);
    } else if (a >= 0x477ff000u) {  // rounds to >= 65520: infinity
      bits = static_cast<std::uint16_t>(sign | 0x7c00u);
    } else if (a < 0x38800000u) {  // below the smallest normal half: subnormal or zero
      // Adding 0.5f aligns the subnormal half's bits with the low mantissa bits of
      // the float sum, so the FPU does the round-to-nearest-even for us.
      float r = detail::bits_float(a) + 0.5f;
      bits = static_cast<std::uint16_t>(sign | (detail::float_bits(r) - 0x3f000000u));
    } else {
      std::uint32_t mant_odd = (a >> 13) & 1u;
      a += 0xc8000fffu + mant_odd;  // rebias exponent (-112 << 23) and round
      bits = static_cast<std::uint16_t>(sign | (a >> 13));
    }
  }
  GLIA_HD operator float() const {
    std::uint32_t sign = std::uint32_t(bits & 0x8000u) << 16;
    std::uint32_t exp = (bits >> 10) & 0x1fu;
    std::uint32_t mant = bits & 0x3ffu;
    if (exp == 0x1f) return detail::bits_float(sign | 0x7f800000u | (mant << 13));
    if (exp == 0) {  // zero or subnormal: mant * 2^-24
      float f = float(mant) * 5.9604644775390625e-8f;
      return sign ? -f : f;
    }
    return detail::bits_float(sign | ((exp + 112u) << 23) | (mant << 13));
  }
};

}  // namespace glia
