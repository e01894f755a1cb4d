// Shared helpers for the core tests: running a traced function on the interpreter and
// asserting on glia::Error messages.
#pragma once

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "glia/core.hpp"

namespace glia::testing {

// Traces fn over the types of `inputs`, interprets it and returns its outputs.
inline std::vector<Tensor> run(const TracedFn& fn, const std::vector<Tensor>& inputs) {
  std::vector<TensorType> types;
  for (const Tensor& t : inputs) types.push_back(t.type());
  Graph g = trace(fn, types);
  return interpret(g, inputs);
}

// Runs a one-output function.
inline Tensor run1(const std::function<Expr(const std::vector<Expr>&)>& fn,
                   const std::vector<Tensor>& inputs) {
  return run([&](const std::vector<Expr>& in) { return std::vector<Expr>{fn(in)}; }, inputs)[0];
}

// The message of the glia::Error `fn` throws ("" when it throws none).
inline std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace glia::testing

#define EXPECT_GLIA_ERROR(stmt, substring) \
  EXPECT_THAT(::glia::testing::error_of([&] { stmt; }), ::testing::HasSubstr(substring))
