// Helpers of the `cpu` backend tests: whether the backend is built, seeded inputs, and
// running one graph on `cpu` and on `interp` to compare the two.
#pragma once

#include <algorithm>
#include <cmath>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/test_util.hpp"
#include "glia/compiler.hpp"

namespace glia::testing {

// Built only with oneDNN: the tests skip themselves without it.
inline bool cpu_backend_built() {
  auto names = backend_names();
  return std::find(names.begin(), names.end(), "cpu") != names.end();
}

#define GLIA_REQUIRE_CPU_BACKEND() \
  if (!::glia::testing::cpu_backend_built()) GTEST_SKIP() << "glia was built without oneDNN"

// How many times `part` occurs in `text` (kernels of a kind in a describe() dump).
inline int count_text(const std::string& text, const std::string& part) {
  int n = 0;
  for (auto at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

// Uniform values in [lo, hi) of `dtype` (integers and bool: rounded / thresholded).
inline Tensor seeded(const Shape& shape, DType dtype, double lo, double hi, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(lo, hi);
  std::vector<double> v(static_cast<std::size_t>(shape.numel()));
  for (double& x : v) {
    x = u(rng);
    if (!is_float(dtype)) x = std::floor(x);
  }
  Tensor t = Tensor::from<double>(v, shape);
  return t.cast(dtype);
}

// Seeded values in [-1, 1) for each of the graph's parameters, seeds counting up.
inline std::vector<Tensor> seeded_inputs(const Graph& g, unsigned seed = 1) {
  std::vector<Tensor> inputs;
  for (ValueId p : g.parameters())
    inputs.push_back(seeded(g.type(p).shape, g.type(p).dtype, -1, 1, seed++));
  return inputs;
}

// Runs g on `cpu` and on `interp`; each output must have the same type and be allclose.
// Returns the cpu executable, for its describe(). The graph is compiled as traced (no
// optimization passes), so each op under test reaches the backend.
inline std::unique_ptr<Executable> expect_cpu_matches_interp(const Graph& g,
                                                             const std::vector<Tensor>& inputs,
                                                             double rtol = 1e-5,
                                                             double atol = 1e-6) {
  CompileOptions as_traced;
  as_traced.optimize = false;
  auto cpu = compile_graph(g, "cpu", as_traced);
  auto interp = compile_graph(g, "interp", as_traced);
  std::vector<Tensor> got = cpu->run(inputs);
  std::vector<Tensor> want = interp->run(inputs);
  EXPECT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < std::min(got.size(), want.size()); ++i) {
    EXPECT_EQ(got[i].type(), want[i].type()) << "output " << i << " of " << g.name();
    EXPECT_TRUE(allclose(got[i], want[i], rtol, atol))
        << "output " << i << " of " << g.name() << "\ncpu: " << got[i] << "\ninterp: " << want[i]
        << "\n"
        << cpu->describe();
  }
  return cpu;
}

}  // namespace glia::testing
