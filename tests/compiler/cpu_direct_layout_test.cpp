// The `cpu` backend's direct pad and concatenate against the interpreter: every dtype,
// negative (cropping) and interior padding, every axis, zero-size operands, repeated
// operands, and that the program runs them as direct kernels, not reference ones.
#include <string>

#include "compiler/cpu_test_util.hpp"

namespace glia::testing {
namespace {

const DType kAll[] = {boolean, u8, u32, i32, i64, f16, bf16, f32, f64};

Tensor values_of(const Shape& s, DType t, unsigned seed) {
  if (t == boolean) return seeded(s, boolean, 0, 2, seed);
  return seeded(s, t, (t == u8 || t == u32) ? 0.0 : -8.0, 8.0, seed);
}

struct PadCase {
  std::string name;
  Shape x;
  Ints low, high, interior;
};

std::vector<PadCase> pad_cases() {
  return {
      {"nhwc_same", {2, 5, 7, 3}, {0, 1, 1, 0}, {0, 1, 1, 0}, {0, 0, 0, 0}},
      {"last_axis", {3, 4}, {0, 2}, {0, 3}, {0, 0}},
      {"crop", {4, 6}, {-1, -2}, {1, -1}, {0, 0}},
      {"interior", {3, 4}, {1, 0}, {0, 2}, {2, 1}},
      {"crop_and_interior", {5, 5}, {-2, 1}, {-1, -3}, {1, 1}},
      {"zero_size_input", {0, 3}, {1, 1}, {2, 0}, {0, 0}},
      {"zero_size_output", {2, 3}, {0, -2}, {0, -1}, {0, 0}},
      {"1d", {9}, {3}, {4}, {0}},
  };
}

TEST(CpuDirectLayout, PadMatchesInterpForEveryDtype) {
  GLIA_REQUIRE_CPU_BACKEND();
  for (const PadCase& c : pad_cases())
    for (DType t : kAll) {
      SCOPED_TRACE(c.name + " " + std::string(dtype_name(t)));
      Graph g = trace(
          [&](const std::vector<Expr>& in) {
            return std::vector<Expr>{pad(in[0], in[1], c.low, c.high, c.interior)};
          },
          {{t, c.x}, {t, {}}}, c.name);
      auto cpu = expect_cpu_matches_interp(g, {values_of(c.x, t, 3), values_of({}, t, 4)});
      EXPECT_GE(count_direct(*cpu, Op::pad), 1) << cpu->describe();
      EXPECT_FALSE(on_reference(*cpu, Op::pad));
    }
}

TEST(CpuDirectLayout, PadByHand) {
  GLIA_REQUIRE_CPU_BACKEND();
  // [1 2 3], low 1, high -1, interior 1, value 9: [9 1 9 2 9] (3 crops off the end).
  Graph g = trace(
      [](const std::vector<Expr>& in) {
        return std::vector<Expr>{pad(in[0], in[1], {1}, {-1}, {1})};
      },
      {{f32, {3}}, {f32, {}}}, "by_hand");
  auto cpu = compile_graph(g, "cpu");
  Tensor y = cpu->run(std::vector<Tensor>{Tensor::from<float>({1, 2, 3}, Shape{3}),
                                          Tensor::from<float>({9}, Shape{})})[0];
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{9, 1, 9, 2, 9}));
}

TEST(CpuDirectLayout, ConcatenateMatchesInterpOnEveryAxis) {
  GLIA_REQUIRE_CPU_BACKEND();
  const std::vector<Shape> base = {{3, 4, 5}, {2, 0, 3}, {1, 7, 1}};
  for (const Shape& s : base)
    for (int axis = 0; axis < 3; ++axis)
      for (DType t : kAll) {
        SCOPED_TRACE(s.to_string() + " axis " + std::to_string(axis) + " " +
                     std::string(dtype_name(t)));
        Ints d1 = s.dims(), d2 = s.dims();
        d1[std::size_t(axis)] = 2;
        d2[std::size_t(axis)] = 0;
        Shape a = s, b{d1}, z{d2};
        // Three operands, one of them zero along the axis, one used twice.
        Graph g = trace(
            [&](const std::vector<Expr>& in) {
              return std::vector<Expr>{concatenate({in[0], in[1], in[2], in[0]}, axis)};
            },
            {{t, a}, {t, b}, {t, z}}, "concat");
        auto cpu = expect_cpu_matches_interp(
            g, {values_of(a, t, 1), values_of(b, t, 2), values_of(z, t, 3)});
        EXPECT_GE(count_direct(*cpu, Op::concatenate), 1) << cpu->describe();
        EXPECT_FALSE(on_reference(*cpu, Op::concatenate));
      }
}

TEST(CpuDirectLayout, ConcatenateByHand) {
  GLIA_REQUIRE_CPU_BACKEND();
  Graph g = trace(
      [](const std::vector<Expr>& in) {
        return std::vector<Expr>{concatenate({in[0], in[1]}, 1)};
      },
      {{i32, {2, 1}}, {i32, {2, 2}}}, "by_hand");
  auto cpu = compile_graph(g, "cpu");
  Tensor y =
      cpu->run(std::vector<Tensor>{Tensor::from<std::int32_t>({1, 2}, Shape{2, 1}),
                                   Tensor::from<std::int32_t>({3, 4, 5, 6}, Shape{2, 2})})[0];
  EXPECT_EQ(y.to_vector<std::int32_t>(), (std::vector<std::int32_t>{1, 3, 4, 2, 5, 6}));
}

TEST(CpuDirectLayout, LargeCopiesMatchInterp) {
  GLIA_REQUIRE_CPU_BACKEND();
  Graph g = trace(
      [](const std::vector<Expr>& in) {
        return std::vector<Expr>{pad(in[0], 0.0f, {0, 2, 2, 0}, {0, 2, 2, 0}),
                                 concatenate({in[0], in[0]}, 3)};
      },
      {{f32, {8, 32, 32, 16}}}, "large");
  auto cpu = expect_cpu_matches_interp(g, {values_of({8, 32, 32, 16}, f32, 5)});
  EXPECT_GE(count_direct(*cpu, Op::pad), 1) << cpu->describe();
}

}  // namespace
}  // namespace glia::testing
