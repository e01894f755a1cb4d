// The cuda suites' way to reach the backend's code without a GPU: glia::cuda::compile_kernels,
// or a skip with the reason where glia was built without the cuda backend or NVRTC cannot
// be loaded.
//   cuda::KernelReport r;
//   COMPILE_OR_SKIP(r, graph);      // the report: source, kernels, CUBIN size
//   Program p;
//   LOWER_OR_SKIP(p, graph);        // only the cuda lowering's Program
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "glia/compiler/cuda.hpp"
#include "glia/core/error.hpp"
#include "glia/core/expr.hpp"

#define GLIA_CUDA_OR_SKIP(target, expression)                                                   \
  if (!::glia::cuda::built()) GTEST_SKIP() << "glia was built without the cuda backend's code"; \
  try {                                                                                         \
    target = expression;                                                                        \
  } catch (const ::glia::Error& e) {                                                            \
    if (std::string(e.what()).find("cannot load NVRTC") != std::string::npos)                   \
      GTEST_SKIP() << e.what();                                                                 \
    throw;                                                                                      \
  }

#define COMPILE_OR_SKIP(report, graph) \
  GLIA_CUDA_OR_SKIP(report, ::glia::cuda::compile_kernels(graph))
#define LOWER_OR_SKIP(lowered, graph) \
  GLIA_CUDA_OR_SKIP(lowered, ::glia::cuda::compile_kernels(graph).program)

namespace glia::testing {

// Whether a generated source or a description holds `part`.
inline bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// The graph of fn's one output over parameters of `types`.
inline Graph traced(const std::vector<TensorType>& types,
                    const std::function<Expr(const std::vector<Expr>&)>& fn,
                    const std::string& name) {
  return trace([&](const std::vector<Expr>& in) { return std::vector<Expr>{fn(in)}; }, types, name);
}

}  // namespace glia::testing
