// The `cpu` backend's small matmul kernel (tiny f32 products, below oneDNN's per-call
// cost) against the interpreter: many shapes, transposed and batched operands, each
// epilogue (bias along either axis, residual, relu, tanh, logistic) on every block of
// columns, one product by hand, and the size where products go back to oneDNN.
#include <array>
#include <string>

#include "compiler/cpu_test_util.hpp"

namespace glia::testing {
namespace {

using ::testing::HasSubstr;

std::unique_ptr<Executable> check(const Graph& g) {
  return expect_cpu_matches_interp(g, seeded_inputs(g, 7), 1e-5, 1e-5);
}

// How the cpu backend realised the program's matmul.
bool on_small_kernel(const Executable& exe) {
  return count_text(exe.describe(), "-> glia small matmul") == 1;
}

Graph dot_graph(const Shape& a, const Shape& b, const Ints& ca, const Ints& cb, const Ints& ba = {},
                const Ints& bb = {}) {
  return trace(
      [&](const std::vector<Expr>& in) {
        return std::vector<Expr>{dot_general(in[0], in[1], ca, cb, ba, bb)};
      },
      {{f32, a}, {f32, b}}, "dot");
}

TEST(CpuSmallMatmul, ByHand) {
  GLIA_REQUIRE_CPU_BACKEND();
  Graph g = trace(
      [](const std::vector<Expr>& in) {
        return std::vector<Expr>{relu(dot(in[0], in[1]) + broadcast(in[2], {2, 2}, {1}))};
      },
      {{f32, {2, 2}}, {f32, {2, 2}}, {f32, {2}}}, "by_hand");
  auto exe = compile_graph(g, "cpu");
  // [[1,2],[3,4]]·[[5,6],[7,8]] = [[19,22],[43,50]]; + [1,-30]; relu.
  auto out = exe->run(std::vector<Tensor>{Tensor::from<float>({1, 2, 3, 4}, Shape{2, 2}),
                                          Tensor::from<float>({5, 6, 7, 8}, Shape{2, 2}),
                                          Tensor::from<float>({1, -30}, Shape{2})});
  EXPECT_TRUE(allclose(out[0], Tensor::from<float>({20, 0, 44, 20}, Shape{2, 2}), 0, 0)) << out[0];
  const MatmulSpec& mm = only_matmul(*exe);
  EXPECT_EQ(matmul_dims(mm), "2x2x2");
  EXPECT_EQ(mm.epilogue.text(), " + bias, relu");
  EXPECT_EQ(exe->program().kernels.size(), 1u);
  EXPECT_TRUE(on_small_kernel(*exe));
}

TEST(CpuSmallMatmul, ManySizes) {
  GLIA_REQUIRE_CPU_BACKEND();
  for (std::int64_t m : {1, 2, 5, 18})
    for (std::int64_t k : {1, 3, 18, 64})
      for (std::int64_t n : {1, 2, 7, 32, 100}) {
        SCOPED_TRACE(cat(m, "x", k, "x", n));
        auto exe = check(dot_graph({m, k}, {k, n}, {1}, {0}));
        EXPECT_EQ(matmul_dims(only_matmul(*exe)), cat(m, "x", k, "x", n));
        EXPECT_EQ(on_small_kernel(*exe), m * k * n <= 32768);
      }
}

TEST(CpuSmallMatmul, TransposedOperands) {
  GLIA_REQUIRE_CPU_BACKEND();
  // lhs [k, m] (contract axis 0), rhs [n, k] (contract axis 1), and both.
  for (auto [a, b, ca, cb] :
       std::vector<std::tuple<Shape, Shape, Ints, Ints>>{{{9, 4}, {9, 6}, {0}, {0}},
                                                         {{4, 9}, {6, 9}, {1}, {1}},
                                                         {{9, 4}, {6, 9}, {0}, {1}},
                                                         {{9, 1}, {1, 9}, {0}, {1}},
                                                         {{3, 2, 5}, {2, 5, 3}, {1, 2}, {0, 1}}}) {
    SCOPED_TRACE(to_text(dot_graph(a, b, ca, cb)));
    auto exe = check(dot_graph(a, b, ca, cb));
    only_matmul(*exe);
    EXPECT_TRUE(on_small_kernel(*exe));
  }
  // Through transposes in the graph (read as strided views).
  Graph t = trace(
      [](const std::vector<Expr>& in) {
        return std::vector<Expr>{dot(transpose(in[0]), transpose(in[1]))};
      },
      {{f32, {5, 3}}, {f32, {4, 5}}}, "transposed");
  auto exe = check(t);
  EXPECT_EQ(matmul_dims(only_matmul(*exe)), "3x5x4");
  EXPECT_TRUE(on_small_kernel(*exe));
}

TEST(CpuSmallMatmul, Batched) {
  GLIA_REQUIRE_CPU_BACKEND();
  for (auto [a, b, ca, cb, ba, bb] : std::vector<std::tuple<Shape, Shape, Ints, Ints, Ints, Ints>>{
           {{3, 4, 5}, {3, 5, 2}, {2}, {1}, {0}, {0}},
           {{4, 3, 5}, {5, 3, 2}, {2}, {0}, {1}, {1}},  // batch axis in the middle
           {{2, 3, 4, 5}, {2, 3, 5, 6}, {3}, {2}, {0, 1}, {0, 1}},
           {{2, 3, 4, 5}, {3, 2, 6, 5}, {3}, {3}, {0, 1}, {1, 0}}}) {
    SCOPED_TRACE(to_text(dot_graph(a, b, ca, cb, ba, bb)));
    auto exe = check(dot_graph(a, b, ca, cb, ba, bb));
    EXPECT_FALSE(only_matmul(*exe).batch.empty());
    EXPECT_TRUE(on_small_kernel(*exe));
  }
}

TEST(CpuSmallMatmul, Epilogues) {
  GLIA_REQUIRE_CPU_BACKEND();
  struct Case {
    std::string text;
    std::function<Expr(const Expr& product, const std::vector<Expr>& in)> tail;
  };
  auto bias_n = [](const std::vector<Expr>& in) { return broadcast(in[2], {6, 5}, {1}); };
  auto bias_m = [](const std::vector<Expr>& in) { return broadcast(in[3], {6, 5}, {0}); };
  for (const Case& c : std::vector<Case>{
           {"+ bias, relu", [&](const Expr&p, auto&in) { return relu(p + bias_n(in)); }},
           {"+ bias, tanh", [&](const Expr&p, auto&in) { return tanh(p + bias_n(in)); }},
           {"+ bias, logistic", [&](const Expr&p, auto&in) { return logistic(bias_n(in) + p); }},
           {"+ bias", [&](const Expr&p, auto&in) { return bias_m(in) + p; }},
           {"+ residual, tanh", [&](const Expr&p, auto&in) { return tanh(p + in[4]); }},
           {"+ bias, residual, relu, logistic",
            [&](const Expr&p, auto&in) { return logistic(relu(p + bias_m(in) + in[4])); }},
           {"+ relu", [&](const Expr&p, auto&) { return relu(p); }}}) {
    SCOPED_TRACE(c.text);
    Graph g = trace(
        [&](const std::vector<Expr>& in) {
          return std::vector<Expr>{c.tail(dot(in[0], in[1]), in)};
        },
        {{f32, {6, 8}}, {f32, {8, 5}}, {f32, {5}}, {f32, {6}}, {f32, {6, 5}}}, "epilogue");
    auto exe = check(g);
    const MatmulSpec& mm = only_matmul(*exe);
    EXPECT_EQ(matmul_dims(mm), "6x8x5");
    EXPECT_EQ(mm.epilogue.text(), " " + c.text);
    EXPECT_EQ(exe->program().kernels.size(), 1u);
    EXPECT_TRUE(on_small_kernel(*exe));
  }
  // A batched product with a residual that is itself a transposed view's reader.
  Graph batched = trace(
      [](const std::vector<Expr>& in) {
        return std::vector<Expr>{tanh(dot_general(in[0], in[1], {2}, {1}, {0}, {0}) + in[2])};
      },
      {{f32, {3, 4, 5}}, {f32, {3, 5, 2}}, {f32, {3, 4, 2}}}, "batched_epilogue");
  auto exe = check(batched);
  EXPECT_EQ(matmul_dims(only_matmul(*exe)), "3 x 4x5x2");
  EXPECT_EQ(only_matmul(*exe).epilogue.text(), " + residual, tanh");
  EXPECT_TRUE(on_small_kernel(*exe));
}

// Columns run in register blocks of 64, 32, 16 and 8, then the last one to seven
// together, k spread over up to four sets of sums (k = 33 leaves one step over); each
// block's epilogue reads its part of a bias along the columns, one along the rows and a
// residual of its own row. Widths around every block size, one and three rows.
TEST(CpuSmallMatmul, EpiloguesOnEveryColumnBlock) {
  GLIA_REQUIRE_CPU_BACKEND();
  for (std::int64_t m : {1, 3})
    for (std::int64_t k : {1, 6, 33})
      for (std::int64_t n : {3, 8, 9, 12, 13, 14, 15, 16, 24, 42, 63, 64, 71, 127}) {
        SCOPED_TRACE(cat(m, "x", k, "x", n));
        Graph g = trace(
            [&](const std::vector<Expr>& in) {
              Expr p = dot(in[0], in[1]) + broadcast(in[2], {m, n}, {1});
              return std::vector<Expr>{relu(p + broadcast(in[3], {m, n}, {0}) + in[4])};
            },
            {{f32, {m, k}}, {f32, {k, n}}, {f32, {n}}, {f32, {m}}, {f32, {m, n}}}, "blocks");
        auto exe = check(g);
        EXPECT_EQ(only_matmul(*exe).epilogue.text(), " + bias, bias, residual, relu");
        EXPECT_TRUE(on_small_kernel(*exe));
      }
}

// One row against weights read along their contiguous columns runs on the small kernel at
// any size, and from 65,536 multiply-adds on splits its columns between the threads:
// ranges of whole 16-column vectors (one of 16, one of 17, a last block short of 64),
// each with its part of the epilogue.
TEST(CpuSmallMatmul, RowProductsSplitTheirColumnsBetweenThreads) {
  GLIA_REQUIRE_CPU_BACKEND();
  CompileOptions options;
  options.optimize = false;
  options.cpu.threads = 2;
  for (auto [m, k, n] : std::vector<std::array<std::int64_t, 3>>{
           {1, 784, 128}, {1, 600, 130}, {1, 40, 1700}, {1, 2048, 33}, {1, 100, 200}}) {
    SCOPED_TRACE(cat(m, "x", k, "x", n));
    Graph g = trace(
        [&](const std::vector<Expr>& in) {
          return std::vector<Expr>{tanh(dot(in[0], in[1]) + broadcast(in[2], {m, n}, {1}) + in[3])};
        },
        {{f32, {m, k}}, {f32, {k, n}}, {f32, {n}}, {f32, {m, n}}}, "rows");
    auto exe = compile_graph(g, "cpu", options);
    std::vector<Tensor> in = seeded_inputs(g, 3);
    // f32 sums of up to 784 products, in another order than the interpreter's.
    EXPECT_TRUE(allclose(exe->run(in)[0], interpret(g, in)[0], 1e-4, 1e-5)) << exe->describe();
    EXPECT_EQ(only_matmul(*exe).epilogue.text(), " + bias, residual, tanh");
    EXPECT_TRUE(on_small_kernel(*exe)) << exe->describe();
    EXPECT_EQ(count_text(exe->describe(), "columns split between threads"),
              m * k * n >= 65536 ? 1 : 0);
  }
  // Two rows, or weights read across their columns, go to oneDNN.
  for (auto [a, b, cb] : std::vector<std::tuple<Shape, Shape, Ints>>{{{2, 784}, {784, 128}, {0}},
                                                                     {{1, 784}, {128, 784}, {1}}}) {
    auto exe = compile_graph(dot_graph(a, b, {1}, cb), "cpu", options);
    EXPECT_FALSE(on_small_kernel(*exe)) << exe->describe();
  }
}

TEST(CpuSmallMatmul, LargerProductsStayOnOneDnn) {
  GLIA_REQUIRE_CPU_BACKEND();
  // 64 x 64 x 16 = 65536 multiply-adds: past the small kernel's limit; the epilogues
  // run as oneDNN post-ops.
  struct Case {
    std::string text;
    std::function<Expr(const Expr& pre, const Expr& r)> tail;
  };
  for (const Case& c : std::vector<Case>{
           {"+ bias, relu", [](const Expr&p, const Expr&) { return relu(p); }},
           {"+ bias, tanh", [](const Expr&p, const Expr&) { return tanh(p); }},
           {"+ bias, logistic", [](const Expr&p, const Expr&) { return logistic(p); }},
           {"+ bias, residual, relu", [](const Expr&p, const Expr&r) { return relu(p + r); }}}) {
    SCOPED_TRACE(c.text);
    Graph g = trace(
        [&](const std::vector<Expr>& in) {
          return std::vector<Expr>{
              c.tail(dot(in[0], in[1]) + broadcast(in[2], {64, 16}, {1}), in[3])};
        },
        {{f32, {64, 64}}, {f32, {64, 16}}, {f32, {16}}, {f32, {64, 16}}}, "large");
    auto exe = check(g);
    const MatmulSpec& mm = only_matmul(*exe);
    EXPECT_EQ(matmul_dims(mm), "64x64x16");
    EXPECT_EQ(mm.epilogue.text(), " " + c.text);
    EXPECT_EQ(exe->program().kernels.size(), 1u);
    EXPECT_FALSE(on_small_kernel(*exe));
    EXPECT_THAT(exe->describe(), HasSubstr("-> onednn ("));
  }
}

}  // namespace
}  // namespace glia::testing
