// 16-bit floating-point storage types (IEEE half and bfloat16). Arithmetic on
// them happens in float; these types only store and convert, rounding to nearest even.
// The conversions are elementwise_math.h's, shared with the CUDA kernels and exported C.
#pragma once

#include <math.h>  // elementwise_math.h calls the global expf, exp, ...

#include <cstdint>

#include "glia/core/elementwise_math.h"

#if defined(__CUDACC__)
#define GLIA_HD __host__ __device__
#else
#define GLIA_HD
#endif

namespace glia {

struct BFloat16 {
  std::uint16_t bits = 0;
  BFloat16() = default;
  GLIA_HD explicit BFloat16(float f) : bits(glia_bf16_from_f32(f)) {}
  GLIA_HD operator float() const { return glia_f32_from_bf16(bits); }
};

struct Half {
  std::uint16_t bits = 0;
  Half() = default;
  GLIA_HD explicit Half(float f) : bits(glia_f16_from_f32(f)) {}
  GLIA_HD operator float() const { return glia_f32_from_f16(bits); }
};

}  // namespace glia
