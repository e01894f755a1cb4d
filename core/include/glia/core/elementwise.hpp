// Element-wise math written once, as small functors over a compute type T (float,
// double or an integer type), usable on host and device. The interpreter, the CPU
// fused kernels, the CUDA kernels and the AOT code generator all call these, so all
// backends agree on edge cases (integer division by zero, rounding, NaN handling).
//   float y = glia::ew::Exp{}(1.0f);
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "glia/core/half.hpp"

namespace glia::ew {

template <class T>
constexpr bool kFloat = std::is_floating_point_v<T>;

struct Neg {
  template <class T>
  GLIA_HD T operator()(T x) const {
    return static_cast<T>(-x);
  }
};
struct Abs {
  template <class T>
  GLIA_HD T operator()(T x) const {
    if constexpr (std::is_unsigned_v<T>)
      return x;
    else if constexpr (kFloat<T>)
      return std::fabs(x);
    else
      return x < 0 ? static_cast<T>(-x) : x;
  }
};
struct Sign {
  template <class T>
  GLIA_HD T operator()(T x) const {
    if constexpr (kFloat<T>) {
      if (x != x) return x;  // NaN stays NaN
    }
    return static_cast<T>((T(0) < x) - (x < T(0)));
  }
};
struct Exp {
  template <class T>
  GLIA_HD T operator()(T x) const {
    return std::exp(x);
  }
};
struct Expm1 {
  template <class T>
  GLIA_HD T operator()(T x) const {
    return std::expm1(x);
  }
};
struct Log {
  template <class T>
  GLIA_HD T operator()(T x) const {
    return std::log(x);
  }
};
struct Log1p {
  template <class T>
  GLIA_HD T operator()(T x) const {
    return std::log1p(x);
  }
};
struct Sqrt {
  template <class T>
  GLIA_HD T operator()(T x) const {
    return std::sqrt(x);
  }
};
struct Rsqrt {
  template <class T>
  GLIA_HD T operator()(T x) const {
    return T(1) / std::sqrt(x);
  }
};
struct Tanh {
  template <class T>
  GLIA_HD T operator()(T x) const {
    return std::tanh(x);
  }
};
struct Logistic {
  // Stable on both tails: never exponentiates a large positive number.
  template <class T>
  GLIA_HD T operator()(T x) const {
    if (x >= T(0)) return T(1) / (T(1) + std::exp(-x));
    T e = std::exp(x);
    return e / (T(1) + e);
  }
};
struct Erf {
  template <class T>
  GLIA_HD T operator()(T x) const {
    return std::erf(x);
  }
};
struct Sin {
  template <class T>
  GLIA_HD T operator()(T x) const {
    return std::sin(x);
  }
};
struct Cos {
  template <class T>
  GLIA_HD T operator()(T x) const {
    return std::cos(x);
  }
};
struct Floor {
  template <class T>
  GLIA_HD T operator()(T x) const {
    if constexpr (kFloat<T>)
      return std::floor(x);
    else
      return x;
  }
};
struct Ceil {
  template <class T>
  GLIA_HD T operator()(T x) const {
    if constexpr (kFloat<T>)
      return std::ceil(x);
    else
      return x;
  }
};
struct Round {  // half away from zero, as Nx
  template <class T>
  GLIA_HD T operator()(T x) const {
    if constexpr (kFloat<T>)
      return std::round(x);
    else
      return x;
  }
};
struct Not {  // logical on bool, bitwise on integers
  template <class T>
  GLIA_HD T operator()(T x) const {
    if constexpr (std::is_same_v<T, bool>)
      return !x;
    else
      return static_cast<T>(~x);
  }
};

struct Add {
  template <class T>
  GLIA_HD T operator()(T a, T b) const {
    return static_cast<T>(a + b);
  }
};
struct Subtract {
  template <class T>
  GLIA_HD T operator()(T a, T b) const {
    return static_cast<T>(a - b);
  }
};
struct Multiply {
  template <class T>
  GLIA_HD T operator()(T a, T b) const {
    return static_cast<T>(a * b);
  }
};
struct Divide {
  // Integers truncate toward zero; x / 0 == 0 and MIN / -1 == MIN instead of trapping.
  template <class T>
  GLIA_HD T operator()(T a, T b) const {
    if constexpr (kFloat<T>) {
      return a / b;
    } else {
      if (b == 0) return T(0);
      if constexpr (std::is_signed_v<T>) {
        if (b == T(-1)) return static_cast<T>(T(0) - static_cast<std::make_unsigned_t<T>>(a));
      }
      return static_cast<T>(a / b);
    }
  }
};
struct Remainder {
  // The sign of the dividend (C's fmod); integers: x % 0 == x.
  template <class T>
  GLIA_HD T operator()(T a, T b) const {
    if constexpr (kFloat<T>) {
      return std::fmod(a, b);
    } else {
      if (b == 0) return a;
      if constexpr (std::is_signed_v<T>) {
        if (b == T(-1)) return T(0);
      }
      return static_cast<T>(a % b);
    }
  }
};
struct Pow {
  template <class T>
  GLIA_HD T operator()(T a, T b) const {
    if constexpr (kFloat<T>) {
      return std::pow(a, b);
    } else {
      // Exponentiation by squaring; a negative exponent truncates like 1 / a^|b|.
      if constexpr (std::is_signed_v<T>) {
        if (b < 0) return a == 1 ? T(1) : a == T(-1) ? ((b & 1) ? T(-1) : T(1)) : T(0);
      }
      using U = std::make_unsigned_t<std::conditional_t<std::is_same_v<T, bool>, unsigned char, T>>;
      U base = static_cast<U>(a), result = 1;
      for (U e = static_cast<U>(b); e; e >>= 1) {
        if (e & 1) result = static_cast<U>(result * base);
        base = static_cast<U>(base * base);
      }
      return static_cast<T>(result);
    }
  }
};
struct Max {  // NaN propagates
  template <class T>
  GLIA_HD T operator()(T a, T b) const {
    if constexpr (kFloat<T>) {
      if (a != a || b != b) return a + b;
    }
    return a > b ? a : b;
  }
};
struct Min {
  template <class T>
  GLIA_HD T operator()(T a, T b) const {
    if constexpr (kFloat<T>) {
      if (a != a || b != b) return a + b;
    }
    return a < b ? a : b;
  }
};
struct Atan2 {
  template <class T>
  GLIA_HD T operator()(T a, T b) const {
    return std::atan2(a, b);
  }
};
struct And {
  template <class T>
  GLIA_HD T operator()(T a, T b) const {
    if constexpr (std::is_same_v<T, bool>)
      return a && b;
    else
      return static_cast<T>(a & b);
  }
};
struct Or {
  template <class T>
  GLIA_HD T operator()(T a, T b) const {
    if constexpr (std::is_same_v<T, bool>)
      return a || b;
    else
      return static_cast<T>(a | b);
  }
};

struct Eq {
  template <class T>
  GLIA_HD bool operator()(T a, T b) const {
    return a == b;
  }
};
struct Ne {
  template <class T>
  GLIA_HD bool operator()(T a, T b) const {
    return a != b;
  }
};
struct Lt {
  template <class T>
  GLIA_HD bool operator()(T a, T b) const {
    return a < b;
  }
};
struct Le {
  template <class T>
  GLIA_HD bool operator()(T a, T b) const {
    return a <= b;
  }
};
struct Gt {
  template <class T>
  GLIA_HD bool operator()(T a, T b) const {
    return a > b;
  }
};
struct Ge {
  template <class T>
  GLIA_HD bool operator()(T a, T b) const {
    return a >= b;
  }
};

}  // namespace glia::ew
