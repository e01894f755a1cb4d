// Helpers of the convolution and pooling tests: row-major index arithmetic for the
// naive reference loops, layout moves, random inputs and value and error expectations.
#pragma once

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "autograd/gradcheck.hpp"
#include "expect_error.hpp"
#include "glia/layers.hpp"

namespace glia::spatial_test {

inline Ints unravel(std::int64_t flat, const Ints& dims) {
  Ints idx(dims.size());
  for (std::size_t i = dims.size(); i-- > 0;) {
    idx[i] = flat % dims[i];
    flat /= dims[i];
  }
  return idx;
}

inline std::int64_t ravel(const Ints& idx, const Ints& dims) {
  std::int64_t flat = 0;
  for (std::size_t i = 0; i < dims.size(); ++i) flat = flat * dims[i] + idx[i];
  return flat;
}

inline std::int64_t numel(const Ints& dims) {
  std::int64_t n = 1;
  for (std::int64_t d : dims) n *= d;
  return n;
}

// Moves axis 1 of a row-major array to the end ([N, C, S...] -> [N, S..., C]).
inline std::vector<double> channels_to_last(const std::vector<double>& v, const Ints& dims) {
  Ints out{dims[0]};
  out.insert(out.end(), dims.begin() + 2, dims.end());
  out.push_back(dims[1]);
  std::vector<double> r(v.size());
  for (std::int64_t f = 0; f < numel(dims); ++f) {
    Ints i = unravel(f, dims), j{i[0]};
    j.insert(j.end(), i.begin() + 2, i.end());
    j.push_back(i[1]);
    r[static_cast<std::size_t>(ravel(j, out))] = v[static_cast<std::size_t>(f)];
  }
  return r;
}

inline Tensor random_f32(const Shape& s, unsigned seed, double lo = -1, double hi = 1) {
  return glia::testing::random_tensor(s, lo, hi, seed).cast(DType::f32);
}

inline std::vector<double> values(const Tensor& t) { return t.to_vector<double>(); }

inline void expect_values(const std::vector<double>& g, const std::vector<double>& want,
                          double tol = 1e-5) {
  ASSERT_EQ(g.size(), want.size());
  for (std::size_t i = 0; i < g.size(); ++i) EXPECT_NEAR(g[i], want[i], tol) << "element " << i;
}
inline void expect_values(const Tensor& got, const std::vector<double>& want, double tol = 1e-5) {
  expect_values(values(got), want, tol);
}

using ::glia::testing::expect_error;

}  // namespace glia::spatial_test
