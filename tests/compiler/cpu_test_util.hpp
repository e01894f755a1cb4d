// Helpers of the `cpu` backend tests: whether the backend is built, seeded inputs, and
// running one graph on `cpu` and on `interp` to compare the two.
#pragma once

#include <algorithm>
#include <cmath>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <string_view>
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

// How many times `part` occurs in `text`.
inline int count_text(const std::string& text, const std::string& part) {
  int n = 0;
  for (auto at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

// How many kernels of the executable's program are of this kind ("matmul", "fused", ...).
inline int count_kernels(const Executable& exe, std::string_view kind) {
  int n = 0;
  for (const Kernel& k : exe.program().kernels) n += kind == k.kind();
  return n;
}

// The ops of the program's reference kernels, in run order.
inline std::vector<Op> reference_ops(const Executable& exe) {
  std::vector<Op> ops;
  for (const auto* r : exe.program().specs<ReferenceSpec>()) ops.push_back(r->op);
  return ops;
}

// The first line of exe's description that contains `kernel` ("convolution src").
inline std::string kernel_line(const Executable& exe, const std::string& kernel) {
  std::istringstream lines(exe.describe());
  for (std::string line; std::getline(lines, line);)
    if (line.find(kernel) != std::string::npos) return line;
  return "";
}

inline bool on_reference(const Executable& exe, Op op) {
  auto ops = reference_ops(exe);
  return std::find(ops.begin(), ops.end(), op) != ops.end();
}

// Direct kernels of the program computing `op`.
inline int count_direct(const Executable& exe, Op op) {
  int n = 0;
  for (const auto* d : exe.program().specs<DirectSpec>()) n += d->op == op;
  return n;
}

// The program's only matmul (the calling test fails when there is not exactly one).
inline const MatmulSpec& only_matmul(const Executable& exe) {
  auto found = exe.program().specs<MatmulSpec>();
  EXPECT_EQ(found.size(), 1u) << exe.describe();
  static const MatmulSpec none;
  return found.empty() ? none : *found[0];
}

// "[batch x ]MxKxN" of a matmul spec, for comparisons.
inline std::string matmul_dims(const MatmulSpec& mm) {
  std::string s;
  for (std::int64_t b : mm.batch) s += cat(b, " x ");
  return s + cat(mm.m, "x", mm.k, "x", mm.n);
}

// The kernel computing `value`: glia::Error-free null when none covers it.
template <class S>
const S* spec_of(const Executable& exe, ValueId value) {
  const Kernel* k = exe.program().kernel_of(value);
  return k ? std::get_if<S>(&k->spec) : nullptr;
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

// Runs g on a backend and on `interp`; each output must have the same type and be
// allclose. Returns the backend's executable, for its program. The graph is compiled as
// traced (no optimization passes), so each op under test reaches the backend.
inline std::unique_ptr<Executable> expect_backend_matches_interp(const std::string& backend_name,
                                                                 const Graph& g,
                                                                 const std::vector<Tensor>& inputs,
                                                                 double rtol = 1e-5,
                                                                 double atol = 1e-6) {
  CompileOptions as_traced;
  as_traced.optimize = false;
  auto exe = compile_graph(g, backend_name, as_traced);
  auto interp = compile_graph(g, "interp", as_traced);
  std::vector<Tensor> got = exe->run(inputs);
  std::vector<Tensor> want = interp->run(inputs);
  EXPECT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < std::min(got.size(), want.size()); ++i) {
    Tensor host = got[i].to_host();  // a device backend's outputs stay on its device
    EXPECT_EQ(host.type(), want[i].type()) << "output " << i << " of " << g.name();
    EXPECT_TRUE(allclose(host, want[i], rtol, atol))
        << "output " << i << " of " << g.name() << "\n"
        << backend_name << ": " << host << "\ninterp: " << want[i] << "\n"
        << exe->describe();
  }
  return exe;
}

inline std::unique_ptr<Executable> expect_cpu_matches_interp(const Graph& g,
                                                             const std::vector<Tensor>& inputs,
                                                             double rtol = 1e-5,
                                                             double atol = 1e-6) {
  return expect_backend_matches_interp("cpu", g, inputs, rtol, atol);
}

// g on `cpu` as a user compiles it (the optimization passes leave the activations
// channels-last in the gradients too; the traced graph's transposes do not), against
// `interp`.
inline std::unique_ptr<Executable> expect_optimized_matches_interp(const Graph& g,
                                                                   const std::vector<Tensor>& in,
                                                                   double tol) {
  auto exe = compile_graph(g, "cpu");
  std::vector<Tensor> got = exe->run(in), want = compile_graph(g, "interp")->run(in);
  EXPECT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < std::min(got.size(), want.size()); ++i)
    EXPECT_TRUE(allclose(got[i], want[i], tol, tol)) << "output " << i << " of " << g.name();
  return exe;
}

}  // namespace glia::testing
