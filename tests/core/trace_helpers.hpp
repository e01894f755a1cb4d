// Helpers shared by the core op tests: infer a node's type through Graph::add, trace
// and run a function through the interpreter, and compare results with expectations.
#pragma once

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "glia/core.hpp"

namespace glia::testing_helpers {

using ::testing::HasSubstr;
using ::testing::ThrowsMessage;
using V = std::vector<double>;

// The type Graph::add infers for `op` on parameters of the given types.
inline TensorType infer(Op op, const std::vector<TensorType>& inputs, Attrs attrs) {
  Graph g;
  std::vector<ValueId> ids;
  for (const TensorType& t : inputs) ids.push_back(g.add_parameter(t));
  return g.type(g.add(op, ids, std::move(attrs)));
}

inline Graph trace_on(const TracedFn& fn, const std::vector<Tensor>& inputs) {
  std::vector<TensorType> types;
  for (const Tensor& t : inputs) types.push_back(t.type());
  return trace(fn, types);
}

// Traces fn on inputs of the given tensors' types and runs it; the first output.
inline Tensor run(const std::function<Expr(const std::vector<Expr>&)>& fn,
                  const std::vector<Tensor>& inputs) {
  Graph g =
      trace_on([&](const std::vector<Expr>& in) { return std::vector<Expr>{fn(in)}; }, inputs);
  return interpret(g, inputs)[0];
}

// Traces fn, expecting the trace itself to throw a glia::Error containing `text`.
inline void expect_trace_error(const std::function<Expr(const std::vector<Expr>&)>& fn,
                               const std::vector<TensorType>& inputs, const std::string& text) {
  EXPECT_THAT(
      [&] {
        trace([&](const std::vector<Expr>& in) { return std::vector<Expr>{fn(in)}; }, inputs);
      },
      ThrowsMessage<Error>(HasSubstr(text)));
}

inline int count_ops(const Graph& g, Op op) {
  int n = 0;
  for (const Node& node : g.nodes()) n += node.op == op;
  return n;
}

inline Tensor f32s(const V& v, Shape s) {
  std::vector<float> f(v.begin(), v.end());
  return Tensor::from<float>(f, s);
}
// 0, 1, 2, ... of `dtype` in `shape`.
inline Tensor counting(Shape s, DType dtype = f32) { return Tensor::iota(std::move(s), {}, dtype); }

inline void expect_tensor(const Tensor& t, DType dtype, const Shape& shape, const V& values) {
  EXPECT_EQ(t.dtype(), dtype);
  EXPECT_EQ(t.shape(), shape);
  EXPECT_EQ(t.to_vector<double>(), values);
}

}  // namespace glia::testing_helpers
