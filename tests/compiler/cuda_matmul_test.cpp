// The cuda backend's matmuls as its lowering decides them, without a GPU: which
// dot_generals cuBLASLt takes (transposed, batched, f64 and half-precision operands), the
// epilogues it keeps (bias, residual, relu) and those it leaves to fused kernels (tanh, a
// step after relu, a bias along the output's rows), and the reasons the reference kernel
// gives for the rest. Every test skips where glia was built without the cuda backend.
#include <gtest/gtest.h>

#include <string>

#include "compiler/cuda_test_util.hpp"
#include "glia/compiler/cuda.hpp"
#include "glia/core/expr.hpp"

namespace glia {
namespace {

using Step = EpilogueSpec::Step;

Graph traced(const std::vector<TensorType>& types,
             const std::function<Expr(const std::vector<Expr>&)>& fn) {
  return trace([&](const std::vector<Expr>& in) { return std::vector<Expr>{fn(in)}; }, types,
               "matmul");
}

Graph dot_graph(DType t, const Shape& a, const Shape& b, const Ints& ca, const Ints& cb,
                const Ints& ba = {}, const Ints& bb = {}) {
  return traced({{t, a}, {t, b}}, [&](const std::vector<Expr>& in) {
    return dot_general(in[0], in[1], ca, cb, ba, bb);
  });
}

// x [4, 3] . w [3, 5] with `rest` applied, b [5] and r [4, 5] at hand.
Graph dense(const std::function<Expr(Expr, Expr, Expr)>& rest) {
  return traced({{f32, {4, 3}}, {f32, {3, 5}}, {f32, {5}}, {f32, {4, 5}}},
                [&](const std::vector<Expr>& in) {
                  return rest(dot(in[0], in[1]), broadcast(in[2], {4, 5}, {1}), in[3]);
                });
}

const MatmulSpec& only_matmul(const Program& p) {
  auto specs = p.specs<MatmulSpec>();
  if (specs.size() != 1) throw Error(cat("expected one matmul in\n", p.describe()));
  return *specs[0];
}

// What runs the graph's output: its kernel's kind.
std::string output_kernel(const Program& p) {
  const Kernel* k = p.kernel_of(p.graph.outputs()[0]);
  return k != nullptr ? k->kind() : "none";
}

TEST(CudaMatmul, DenseLayerWithBiasAndReluIsOneKernel) {
  Graph g = dense([](Expr y, Expr b, Expr) { return relu(y + b); });
  Program p;
  LOWER_OR_SKIP(p, g);
  ASSERT_EQ(p.kernels.size(), 1u) << p.describe();
  const MatmulSpec& mm = only_matmul(p);
  EXPECT_EQ(mm.m, 4);
  EXPECT_EQ(mm.k, 3);
  EXPECT_EQ(mm.n, 5);
  EXPECT_EQ(mm.epilogue.steps, (std::vector<Step>{Step::add, Step::relu}));
  ASSERT_EQ(mm.epilogue.operands.size(), 1u);
  EXPECT_TRUE(mm.epilogue.operands[0].bias);
  EXPECT_EQ(mm.epilogue.operands[0].value, g.parameters()[2]);
  EXPECT_EQ(p.kernels[0].outputs, std::vector<ValueId>{g.outputs()[0]});
}

TEST(CudaMatmul, ResidualAndBiasBeforeReluStayInTheEpilogue) {
  Graph g = dense([](Expr y, Expr b, Expr r) { return relu(y + b + r); });
  Program p;
  LOWER_OR_SKIP(p, g);
  ASSERT_EQ(p.kernels.size(), 1u) << p.describe();
  const MatmulSpec& mm = only_matmul(p);
  EXPECT_EQ(mm.epilogue.steps, (std::vector<Step>{Step::add, Step::add, Step::relu}));
  ASSERT_EQ(mm.epilogue.operands.size(), 2u);
  EXPECT_TRUE(mm.epilogue.operands[0].bias);
  EXPECT_FALSE(mm.epilogue.operands[1].bias);
  EXPECT_EQ(mm.epilogue.operands[1].value, g.parameters()[3]);

  // A residual alone, no relu.
  g = dense([](Expr y, Expr, Expr r) { return r + y; });
  LOWER_OR_SKIP(p, g);
  ASSERT_EQ(p.kernels.size(), 1u) << p.describe();
  EXPECT_EQ(only_matmul(p).epilogue.steps, std::vector<Step>{Step::add});
}

TEST(CudaMatmul, EpiloguesCuBlasLtLacksAreFusedAfterAPlainMatmul) {
  struct Case {
    const char* what;
    std::function<Expr(Expr, Expr, Expr)> rest;
  };
  const Case cases[] = {
      {"tanh", [](Expr y, Expr b, Expr) { return tanh(y + b); }},
      {"logistic", [](Expr y, Expr, Expr) { return logistic(y); }},
      {"add after relu", [](Expr y, Expr, Expr r) { return relu(y) + r; }},
      {"two biases", [](Expr y, Expr b, Expr) { return y + b + b; }},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    Graph g = dense(c.rest);
    Program p;
    LOWER_OR_SKIP(p, g);
    EXPECT_TRUE(only_matmul(p).epilogue.empty()) << p.describe();
    EXPECT_EQ(output_kernel(p), "fused") << p.describe();
    EXPECT_TRUE(p.specs<ReferenceSpec>().empty()) << p.describe();
  }
}

TEST(CudaMatmul, BiasAlongTheOutputsRowsIsFused) {
  // w [5, 3] . x [3, 4] + b [5] along rows: cuBLASLt adds its bias down the column-major
  // D's rows, which are the row-major output's columns.
  Graph g = traced({{f32, {5, 3}}, {f32, {3, 4}}, {f32, {5}}}, [](const std::vector<Expr>& in) {
    return dot(in[0], in[1]) + broadcast(in[2], {5, 4}, {0});
  });
  Program p;
  LOWER_OR_SKIP(p, g);
  EXPECT_TRUE(only_matmul(p).epilogue.empty()) << p.describe();
  EXPECT_EQ(output_kernel(p), "fused");

  // With one column, out and outᵀ are the same memory: the bias runs down D's rows.
  g = traced({{f32, {5, 3}}, {f32, {3, 1}}, {f32, {5}}}, [](const std::vector<Expr>& in) {
    return relu(dot(in[0], in[1]) + broadcast(in[2], {5, 1}, {0}));
  });
  LOWER_OR_SKIP(p, g);
  ASSERT_EQ(p.kernels.size(), 1u) << p.describe();
  EXPECT_EQ(only_matmul(p).epilogue.steps, (std::vector<Step>{Step::add, Step::relu}));
}

TEST(CudaMatmul, TransposedOperandsAreMatmuls) {
  const std::int64_t m = 7, k = 6, n = 3;
  for (bool lhs_t : {false, true})
    for (bool rhs_t : {false, true}) {
      SCOPED_TRACE(cat("lhs transposed ", lhs_t, ", rhs transposed ", rhs_t));
      Shape a = lhs_t ? Shape{k, m} : Shape{m, k};
      Shape b = rhs_t ? Shape{n, k} : Shape{k, n};
      Program p;
      LOWER_OR_SKIP(p, dot_graph(f32, a, b, {lhs_t ? 0 : 1}, {rhs_t ? 1 : 0}));
      ASSERT_EQ(p.kernels.size(), 1u) << p.describe();
      const MatmulSpec& mm = only_matmul(p);
      EXPECT_EQ(mm.lhs_strides,
                lhs_t ? (std::vector<std::int64_t>{1, m}) : (std::vector<std::int64_t>{k, 1}));
      EXPECT_EQ(mm.rhs_strides,
                rhs_t ? (std::vector<std::int64_t>{1, k}) : (std::vector<std::int64_t>{n, 1}));
    }
  // An explicit transpose of a parameter is read through strides too.
  Graph g = traced({{f32, {5, 4}}, {f32, {5, 3}}},
                   [](const std::vector<Expr>& in) { return dot(transpose(in[0]), in[1]); });
  Program p;
  LOWER_OR_SKIP(p, g);
  EXPECT_EQ(p.specs<MatmulSpec>().size(), 1u) << p.describe();
  EXPECT_TRUE(p.specs<ReferenceSpec>().empty()) << p.describe();
}

TEST(CudaMatmul, BatchedDotGeneralsAreMatmuls) {
  // Two leading batch axes (they fold into one strided batch of 6).
  Program p;
  LOWER_OR_SKIP(p, dot_graph(f32, {2, 3, 7, 5}, {2, 3, 5, 4}, {3}, {2}, {0, 1}, {0, 1}));
  ASSERT_EQ(p.kernels.size(), 1u) << p.describe();
  EXPECT_EQ(only_matmul(p).batch, (std::vector<std::int64_t>{2, 3}));
  // A batch axis in the middle of the lhs, a transposed lhs and rhs.
  LOWER_OR_SKIP(p, dot_graph(f32, {5, 4, 3}, {4, 6, 5}, {0}, {2}, {1}, {0}));
  ASSERT_EQ(p.kernels.size(), 1u) << p.describe();
  const MatmulSpec& mm = only_matmul(p);
  EXPECT_EQ(mm.batch, std::vector<std::int64_t>{4});
  EXPECT_EQ(mm.lhs_strides, (std::vector<std::int64_t>{3, 1, 12}));
  EXPECT_EQ(mm.rhs_strides, (std::vector<std::int64_t>{30, 1, 5}));
  // Vectors: M = N = 1.
  LOWER_OR_SKIP(p, dot_graph(f32, {5}, {5}, {0}, {0}));
  EXPECT_EQ(p.specs<MatmulSpec>().size(), 1u) << p.describe();
}

TEST(CudaMatmul, FloatTypesAreMatmuls) {
  for (DType t : {f64, f16, bf16}) {
    SCOPED_TRACE(dtype_name(t));
    Program p;
    LOWER_OR_SKIP(p, dot_graph(t, {3, 4}, {4, 2}, {1}, {0}));
    ASSERT_EQ(p.kernels.size(), 1u) << p.describe();
    EXPECT_EQ(only_matmul(p).dtype, t);
  }
}

// The one reference kernel of `p`, which must run a dot_general.
const ReferenceSpec& only_reference_dot(const Program& p) {
  auto refs = p.specs<ReferenceSpec>();
  if (refs.size() != 1 || refs[0]->op != Op::dot_general)
    throw Error(cat("expected one reference dot_general in\n", p.describe()));
  return *refs[0];
}

TEST(CudaMatmul, OtherDotGeneralsSayWhyTheyRunOnTheReferenceKernel) {
  // Integers: cuBLASLt has no i32 matmul.
  Program p;
  LOWER_OR_SKIP(p, dot_graph(i32, {3, 4}, {4, 2}, {1}, {0}));
  EXPECT_TRUE(p.specs<MatmulSpec>().empty());
  EXPECT_NE(only_reference_dot(p).reason.find("not i32"), std::string::npos)
      << only_reference_dot(p).reason;
  // Contracting axes against memory order: no single stride for K.
  LOWER_OR_SKIP(p, dot_graph(f32, {4, 3, 2}, {2, 3, 5}, {2, 1}, {0, 1}));
  EXPECT_NE(only_reference_dot(p).reason.find("do not fold"), std::string::npos)
      << only_reference_dot(p).reason;
  // The batch axis last on the lhs: its matrices step by 8 and 2, no unit stride.
  LOWER_OR_SKIP(p, dot_graph(f32, {3, 4, 2}, {2, 4, 5}, {1}, {1}, {2}, {0}));
  EXPECT_EQ(only_reference_dot(p).reason,
            "cuBLASLt: an operand with no unit stride (lhs strides [1, 8, 2], rhs [20, 5, 1])");
}

}  // namespace
}  // namespace glia
