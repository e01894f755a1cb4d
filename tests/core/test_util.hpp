// Helpers shared by the core and compiler tests: small input tensors, running one op or a
// traced function on the interpreter, and assertions on values and glia::Error messages.
#pragma once

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "glia/core.hpp"

namespace glia::testing {

// Element values as doubles: what tests compare against.
using V = std::vector<double>;
// A function of traced inputs with one output.
using ExprFn = std::function<Expr(const std::vector<Expr>&)>;

constexpr double kInf = std::numeric_limits<double>::infinity();

// ---- Inputs --------------------------------------------------------------------------

// v as an f32 tensor of shape s, or 1-D.
inline Tensor f32s(const V& v, Shape s) {
  return Tensor::from<float>(std::vector<float>(v.begin(), v.end()), std::move(s));
}
inline Tensor f32s(const V& v) {
  return Tensor::from<float>(std::vector<float>(v.begin(), v.end()));
}

// 0, 1, 2, ... of `dtype` in shape s.
inline Tensor counting(Shape s, DType dtype = f32) { return Tensor::iota(std::move(s), {}, dtype); }

// n small distinct values, some negative: (7 i + salt) mod 11 - 5.
inline std::vector<float> pattern(std::int64_t n, int salt = 0) {
  std::vector<float> v;
  for (std::int64_t i = 0; i < n; ++i) v.push_back(static_cast<float>((7 * i + salt) % 11 - 5));
  return v;
}

// [[1, 2, 3], [4, 5, 6]] as f32[2][3].
inline Tensor m23() { return Tensor::from<float>({1, 2, 3, 4, 5, 6}, Shape{2, 3}); }

// t's elements, converted to double.
inline V values(const Tensor& t) { return t.to_vector<double>(); }

// ---- Running ops and traced functions ------------------------------------------------

// The type Graph::add infers for `op` on parameters of the given types.
inline TensorType infer_op(Op op, const std::vector<TensorType>& types, Attrs attrs) {
  Graph g("op");
  std::vector<ValueId> ids;
  for (const TensorType& t : types) ids.push_back(g.add_parameter(t));
  return g.type(g.add(op, ids, std::move(attrs)));
}

// Builds one op with Graph::add on parameters like `inputs`, verifies it, runs it on them.
inline Tensor run_op(Op op, const std::vector<Tensor>& inputs, Attrs attrs) {
  Graph g("op");
  std::vector<ValueId> ids;
  for (const Tensor& t : inputs) ids.push_back(g.add_parameter(t.type()));
  g.set_outputs({g.add(op, ids, std::move(attrs))});
  verify(g);
  return interpret(g, inputs)[0];
}

// Traces fn on parameters of the given types.
inline Graph trace_expr(const ExprFn& fn, const std::vector<TensorType>& types) {
  return trace([&](const std::vector<Expr>& in) { return std::vector<Expr>{fn(in)}; }, types);
}

// The type of fn's output when traced on parameters of the given types.
inline TensorType infer_expr(const ExprFn& fn, const std::vector<TensorType>& types) {
  Graph g = trace_expr(fn, types);
  return g.type(g.outputs()[0]);
}

// Traces fn on the types of `inputs` and interprets it on them.
inline Tensor run_expr(const ExprFn& fn, const std::vector<Tensor>& inputs) {
  std::vector<TensorType> types;
  for (const Tensor& t : inputs) types.push_back(t.type());
  return interpret(trace_expr(fn, types), inputs)[0];
}

// The number of `op` nodes in g.
inline int count_ops(const Graph& g, Op op) {
  int n = 0;
  for (const Node& node : g.nodes()) n += node.op == op;
  return n;
}

// ---- Assertions ----------------------------------------------------------------------

// t has exactly this dtype, shape and these element values.
inline void expect_tensor(const Tensor& t, DType dtype, const Shape& shape, const V& expected) {
  EXPECT_EQ(t.dtype(), dtype);
  EXPECT_EQ(t.shape(), shape);
  EXPECT_EQ(values(t), expected);
}

// t has as many elements as `expected`, each within tol of its counterpart.
inline void expect_near(const Tensor& t, const V& expected, double tol) {
  V v = values(t);
  ASSERT_EQ(v.size(), expected.size());
  for (std::size_t i = 0; i < v.size(); ++i) EXPECT_NEAR(v[i], expected[i], tol) << "at " << i;
}

}  // namespace glia::testing

// `stmt` throws a glia::Error whose message contains `substring`.
#define EXPECT_GLIA_ERROR(stmt, substring) \
  EXPECT_THAT([&] { stmt; },               \
              ::testing::ThrowsMessage<::glia::Error>(::testing::HasSubstr(substring)))
