// The registry of gradient-check cases, one list per differentiable op. A case builds
// the op through the Expr API on f64 inputs taken where the op is smooth; the
// op_gradcheck suite reduces the result with a fixed random weight and checks it.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "autograd/gradcheck.hpp"

namespace glia::testing {

struct OpCase {
  std::string name;
  std::vector<Tensor> inputs;
  ScalarFn build;  // the op's result (any shape): the suite reduces it
  GradCheckOptions options = {};
};
using OpCases = std::map<Op, std::vector<OpCase>>;

// Each group's file fills in its ops' cases.
void add_elementwise_cases(OpCases& cases);  // unary, binary, select, cast
void add_structure_cases(OpCases& cases);    // layout and indexing
void add_contraction_cases(OpCases& cases);  // reductions, dot_general, convolution, windows
void add_control_cases(OpCases& cases);      // scan

inline Tensor f64(const std::vector<double>& values, const Shape& shape) {
  return Tensor::from<double>(values, shape);
}

inline Tensor i64(const std::vector<std::int64_t>& values, const Shape& shape) {
  return Tensor::from<std::int64_t>(values, shape);
}

// Magnitudes uniform in [lo, hi), signs random: values kept away from zero.
inline Tensor away_from_zero(const Shape& shape, double lo, double hi, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> mag(lo, hi);
  std::bernoulli_distribution negative(0.5);
  std::vector<double> v(static_cast<std::size_t>(shape.numel()));
  for (double& x : v) x = negative(rng) ? -mag(rng) : mag(rng);
  return f64(v, shape);
}

// Tensors of the given shapes whose elements, all together, are distinct values at
// least 1.5/n apart in [-1.5, 1.5], shuffled: no ties for max and min.
inline std::vector<Tensor> distinct_values(const std::vector<Shape>& shapes, unsigned seed) {
  std::size_t n = 0;
  for (const Shape& s : shapes) n += static_cast<std::size_t>(s.numel());
  std::vector<double> pool(n);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> jitter(0, 0.5);
  double step = 3.0 / static_cast<double>(std::max<std::size_t>(n, 1));
  for (std::size_t k = 0; k < n; ++k)
    pool[k] = -1.5 + step * (static_cast<double>(k) + jitter(rng));
  std::shuffle(pool.begin(), pool.end(), rng);
  std::vector<Tensor> out;
  auto at = pool.begin();
  for (const Shape& s : shapes) {
    auto next = at + static_cast<std::ptrdiff_t>(s.numel());
    out.push_back(f64(std::vector<double>(at, next), s));
    at = next;
  }
  return out;
}

}  // namespace glia::testing
