// The `cpu` backend's direct kernels (window_sum, gather, scatter_add, argmax/argmin)
// against the interpreter over every dtype, axis, odd and zero sizes, padding, dilations,
// ties and NaNs, and that the program runs them as direct kernels, not reference ones.
#include <limits>
#include <string>

#include "compiler/cpu_test_util.hpp"

namespace glia::testing {
namespace {

const DType kNumeric[] = {u8, u32, i32, i64, f16, bf16, f32, f64};

// Values small enough that every dtype holds them and its sums exactly (u8 wraps the same
// on both backends).
Tensor values_of(const Shape& s, DType t, unsigned seed) {
  bool is_unsigned = t == u8 || t == u32;
  return seeded(s, t, is_unsigned ? 0.0 : -8.0, 8.0, seed);
}

struct WindowCase {
  std::string name;
  Shape x;
  Ints window;
  WindowOptions o;
};

std::vector<WindowCase> window_cases() {
  return {
      {"avg_nhwc_2x2", {3, 8, 8, 5}, {1, 2, 2, 1}, {.strides = {1, 2, 2, 1}}},
      {"odd_stride1", {1, 7, 9, 3}, {1, 3, 2, 1}, {}},
      {"padded", {2, 5, 6}, {1, 3, 3}, {.padding_low = {0, 1, 2}, .padding_high = {0, 2, 1}}},
      {"all_padding_windows", {2, 2}, {1, 3}, {.padding_low = {0, 4}, .padding_high = {0, 4}}},
      {"dilated",
       {2, 9, 9},
       {1, 2, 3},
       {.strides = {1, 2, 1}, .base_dilation = {1, 2, 1}, .window_dilation = {1, 2, 3}}},
      {"every_axis", {4, 5, 3}, {2, 3, 2}, {.strides = {2, 1, 1}}},
      {"1d", {11}, {4}, {.strides = {3}}},
      {"zero_batch", {0, 4, 3}, {1, 2, 1}, {}},
      {"window_larger_than_input", {2, 3}, {1, 5}, {}},
      {"scalar", {}, {}, {}},
  };
}

TEST(CpuDirect, WindowSumMatchesInterpForEveryDtype) {
  GLIA_REQUIRE_CPU_BACKEND();
  for (const WindowCase& c : window_cases())
    for (DType t : kNumeric) {
      SCOPED_TRACE(c.name + " " + std::string(dtype_name(t)));
      Graph g = trace(
          [&](const std::vector<Expr>& in) {
            return std::vector<Expr>{window_sum(in[0], c.window, c.o)};
          },
          {{t, c.x}}, c.name);
      auto cpu = expect_cpu_matches_interp(g, {values_of(c.x, t, 7)});
      EXPECT_GE(count_direct(*cpu, Op::window_sum), 1) << cpu->describe();
      EXPECT_FALSE(on_reference(*cpu, Op::window_sum));
    }
}

TEST(CpuDirect, WindowSumByHand) {
  GLIA_REQUIRE_CPU_BACKEND();
  // [1 2 3 4 5] with window 2, stride 2, one zero of padding each side: [1, 5, 9].
  Graph g = trace(
      [](const std::vector<Expr>& in) {
        return std::vector<Expr>{
            window_sum(in[0], {2}, {.strides = {2}, .padding_low = {1}, .padding_high = {1}})};
      },
      {{f32, {5}}}, "by_hand");
  auto cpu = compile_graph(g, "cpu");
  Tensor y = cpu->run(std::vector<Tensor>{Tensor::from<float>({1, 2, 3, 4, 5}, Shape{5})})[0];
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{1, 5, 9}));
}

struct IndexCase {
  std::string name;
  Shape x, indices;
  std::int64_t axis;
};

std::vector<IndexCase> index_cases() {
  return {
      {"embedding", {50, 16}, {4, 7}, 0},  {"rows_axis1", {3, 10, 5}, {6}, 1},
      {"last_axis", {4, 3, 9}, {2, 2}, 2}, {"scalar_index", {6, 4}, {}, 0},
      {"zero_indices", {5, 3}, {0}, 0},    {"zero_inner", {4, 5, 0}, {3}, 1},
      {"zero_outer", {0, 5, 2}, {3}, 1},   {"large", {1000, 128}, {64, 40}, 0},
  };
}

// Indices in [0, size), with repeats (scatter_add must sum duplicates).
Tensor indices_of(const Shape& s, DType t, std::int64_t size, unsigned seed) {
  return seeded(s, t, 0.0, double(size) - 1e-9, seed);
}

TEST(CpuDirect, GatherMatchesInterpForEveryDtypeAndAxis) {
  GLIA_REQUIRE_CPU_BACKEND();
  for (const IndexCase& c : index_cases())
    for (DType t : {boolean, u8, i32, i64, f16, bf16, f32, f64})
      for (DType it : {u8, u32, i32, i64}) {
        SCOPED_TRACE(c.name + " " + std::string(dtype_name(t)) + " " + std::string(dtype_name(it)));
        if (c.x[static_cast<int>(c.axis)] == 0) continue;
        Graph g = trace(
            [&](const std::vector<Expr>& in) {
              return std::vector<Expr>{take(in[0], in[1], c.axis)};
            },
            {{t, c.x}, {it, c.indices}}, c.name);
        Tensor x = t == boolean ? seeded(c.x, boolean, 0, 2, 3) : values_of(c.x, t, 3);
        auto cpu = expect_cpu_matches_interp(
            g, {x, indices_of(c.indices, it, c.x[static_cast<int>(c.axis)], 5)});
        EXPECT_GE(count_direct(*cpu, Op::gather), 1) << cpu->describe();
        EXPECT_FALSE(on_reference(*cpu, Op::gather));
      }
}

TEST(CpuDirect, ScatterAddMatchesInterpForEveryDtypeAndAxis) {
  GLIA_REQUIRE_CPU_BACKEND();
  for (const IndexCase& c : index_cases())
    for (DType t : kNumeric)
      for (DType it : {u8, i32, i64}) {
        SCOPED_TRACE(c.name + " " + std::string(dtype_name(t)) + " " + std::string(dtype_name(it)));
        if (c.x[static_cast<int>(c.axis)] == 0) continue;
        Graph probe = trace(
            [&](const std::vector<Expr>& in) {
              return std::vector<Expr>{take(in[0], in[1], c.axis)};
            },
            {{t, c.x}, {it, c.indices}}, "shape");
        Shape u = probe.type(probe.outputs()[0]).shape;
        Graph g = trace(
            [&](const std::vector<Expr>& in) {
              return std::vector<Expr>{scatter_add(in[0], in[1], in[2], c.axis)};
            },
            {{t, c.x}, {it, c.indices}, {t, u}}, c.name);
        auto cpu = expect_cpu_matches_interp(
            g, {values_of(c.x, t, 11), indices_of(c.indices, it, c.x[static_cast<int>(c.axis)], 13),
                values_of(u, t, 17)});
        EXPECT_GE(count_direct(*cpu, Op::scatter_add), 1) << cpu->describe();
        EXPECT_FALSE(on_reference(*cpu, Op::scatter_add));
      }
}

TEST(CpuDirect, ScatterAddSumsDuplicatesByHand) {
  GLIA_REQUIRE_CPU_BACKEND();
  Graph g = trace(
      [](const std::vector<Expr>& in) {
        return std::vector<Expr>{scatter_add(in[0], in[1], in[2], 0)};
      },
      {{f32, {3, 2}}, {i32, {3}}, {f32, {3, 2}}}, "dup");
  auto cpu = compile_graph(g, "cpu");
  Tensor y = cpu->run(std::vector<Tensor>{Tensor::from<float>({1, 1, 1, 1, 1, 1}, Shape{3, 2}),
                                          Tensor::from<std::int32_t>({2, 0, 2}, Shape{3}),
                                          Tensor::from<float>({1, 2, 3, 4, 5, 6}, Shape{3, 2})})[0];
  // Row 0 gets updates row 1; row 2 gets rows 0 and 2; row 1 stays.
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{4, 5, 1, 1, 7, 9}));
}

TEST(CpuDirect, OutOfRangeIndicesAreErrors) {
  GLIA_REQUIRE_CPU_BACKEND();
  Graph gather =
      trace([](const std::vector<Expr>& in) { return std::vector<Expr>{take(in[0], in[1], 0)}; },
            {{f32, {4, 3}}, {i32, {2}}}, "gather");
  auto g = compile_graph(gather, "cpu");
  for (std::int32_t bad : {4, -1})
    EXPECT_THROW(g->run(std::vector<Tensor>{seeded({4, 3}, f32, 0, 1, 1),
                                            Tensor::from<std::int32_t>({0, bad}, Shape{2})}),
                 Error);
  Graph scatter = trace(
      [](const std::vector<Expr>& in) {
        return std::vector<Expr>{scatter_add(in[0], in[1], in[2], 1)};
      },
      {{f32, {2, 3}}, {i64, {1}}, {f32, {2, 1}}}, "scatter");
  auto s = compile_graph(scatter, "cpu");
  EXPECT_THROW(s->run(std::vector<Tensor>{seeded({2, 3}, f32, 0, 1, 1),
                                          Tensor::from<std::int64_t>({3}, Shape{1}),
                                          seeded({2, 1}, f32, 0, 1, 2)}),
               Error);
}

TEST(CpuDirect, ArgmaxArgminMatchInterpOnEveryAxisAndDtype) {
  GLIA_REQUIRE_CPU_BACKEND();
  const std::vector<Shape> shapes = {{7}, {4, 10}, {3, 5, 6}, {2, 1, 9}, {0, 4}, {300, 1000}};
  for (const Shape& s : shapes)
    for (int axis = 0; axis < s.rank(); ++axis)
      for (DType t : kNumeric)
        for (bool keep : {false, true}) {
          if (s[axis] == 0) continue;
          SCOPED_TRACE(s.to_string() + " axis " + std::to_string(axis) + " " +
                       std::string(dtype_name(t)));
          Graph g = trace(
              [&](const std::vector<Expr>& in) {
                return std::vector<Expr>{argmax(in[0], axis, keep), argmin(in[0], axis, keep)};
              },
              {{t, s}}, "arg");
          // Few distinct values: many ties, which resolve to the lowest index.
          auto cpu = expect_cpu_matches_interp(g, {values_of(s, t, 21)});
          EXPECT_GE(count_direct(*cpu, Op::argmax), 1) << cpu->describe();
          EXPECT_GE(count_direct(*cpu, Op::argmin), 1) << cpu->describe();
          EXPECT_TRUE(reference_ops(*cpu).empty());
        }
}

TEST(CpuDirect, ArgmaxTiesAndNaNsByHand) {
  GLIA_REQUIRE_CPU_BACKEND();
  Graph g = trace(
      [](const std::vector<Expr>& in) {
        return std::vector<Expr>{argmax(in[0], 1), argmin(in[0], 1), argmax(in[0], 0)};
      },
      {{f32, {3, 4}}}, "nan");
  auto cpu = compile_graph(g, "cpu");
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<Tensor> y = cpu->run(std::vector<Tensor>{
      Tensor::from<float>({1, 5, 5, 0, 2, nan, 9, nan, -1, -1, 3, -1}, Shape{3, 4})});
  // Rows: ties go to the first index; the first NaN wins for both max and min.
  EXPECT_EQ(y[0].to_vector<std::int64_t>(), (std::vector<std::int64_t>{1, 1, 2}));
  EXPECT_EQ(y[1].to_vector<std::int64_t>(), (std::vector<std::int64_t>{3, 1, 0}));
  // Columns: [1 2 -1] -> 1, [5 nan -1] -> 1, [5 9 3] -> 1, [0 nan -1] -> 1.
  EXPECT_EQ(y[2].to_vector<std::int64_t>(), (std::vector<std::int64_t>{1, 1, 1, 1}));
}

}  // namespace
}  // namespace glia::testing
