// The reduction monoids (sum, prod, max, min) for C++: the accumulator type, identity and
// combine of each, forwarding to elementwise_math.h's glia_<m>_* functions, so reference
// kernels, the CPU executor and generated CUDA and C code accumulate alike.
//   using Sum = glia::monoid<glia::Op::reduce_sum>;
//   Sum::acc_t<float> acc = Sum::identity<float>();           // double 0.0
//   acc = Sum::combine<float>(acc, Sum::widen<float>(x));      float s = Sum::narrow<float>(acc);
#pragma once

#include <string_view>

#include "glia/core/elementwise.hpp"

namespace glia {

// X(reduce op enumerator, C name stem m of glia_<m>_*)
#define GLIA_REDUCTION_MONOIDS(X) \
  X(reduce_sum, sum)              \
  X(reduce_prod, prod)            \
  X(reduce_max, max)              \
  X(reduce_min, min)

// monoid<kOp> for each row of GLIA_REDUCTION_MONOIDS. T is an input type, storage or
// compute (Half, BFloat16 and float all reduce as f32; bool is not reducible):
//   acc_t<T>               the accumulator: double for float sums and products, uint64_t
//                          (wrapping) for integer ones, compute_t<T> for max and min
//   identity<T>()          the accumulator of an empty reduction
//   widen<T>(x)            a compute_t<T> value as an accumulator
//   combine<T>(acc, v)     acc combined with v (float max and min: a NaN, once seen, stays)
//   narrow<T>(acc)         the accumulator as compute_t<T> (then convert to the storage type)
template <Op kOp>
struct monoid;

#define GLIA_EW_MONOID(op, m)                                             \
  template <>                                                             \
  struct monoid<Op::op> {                                                 \
    static constexpr std::string_view c_stem = #m;                        \
    template <class T>                                                    \
    GLIA_HD static auto identity() {                                      \
      GLIA_EW_DISPATCH(numeric, compute_t<T>, glia_##m##_identity, )      \
    }                                                                     \
    template <class T>                                                    \
    using acc_t = decltype(identity<T>());                                \
    template <class T>                                                    \
    GLIA_HD static acc_t<T> widen(compute_t<T> x) {                       \
      GLIA_EW_DISPATCH(numeric, compute_t<T>, glia_##m##_widen, x)        \
    }                                                                     \
    template <class T>                                                    \
    GLIA_HD static acc_t<T> combine(acc_t<T> acc, acc_t<T> v) {           \
      GLIA_EW_DISPATCH(numeric, compute_t<T>, glia_##m##_combine, acc, v) \
    }                                                                     \
    template <class T>                                                    \
    GLIA_HD static compute_t<T> narrow(acc_t<T> acc) {                    \
      GLIA_EW_DISPATCH(numeric, compute_t<T>, glia_##m##_narrow, acc)     \
    }                                                                     \
  };
GLIA_REDUCTION_MONOIDS(GLIA_EW_MONOID)
#undef GLIA_EW_MONOID

}  // namespace glia
