// The fused kernels' shortcuts against values computed here: float max and min keeping
// a NaN wherever it lies (in a row, across threads), scalar operands filled once per
// run and passed to binary ops by value (an integer divisor that is a power of two as a
// shift), tiles shortened for many live buffers, operands read straight from inputs by
// several outputs, and a broadcast read by another group moved into it rather than
// written out.
#include <cmath>
#include <cstdint>
#include <limits>

#include "compiler/cpu_test_util.hpp"

namespace glia::testing {
namespace {

std::vector<Tensor> on_cpu(const Graph& g, int threads, const std::vector<Tensor>& inputs) {
  CompileOptions o;
  o.cpu.threads = threads;
  return compile_graph(g, "cpu", o)->run(inputs);
}

Graph trace1_max(std::int64_t n) {
  return trace([](const std::vector<Expr>& in) { return std::vector<Expr>{reduce_max(in[0])}; },
               {{f32, {n}}}, "max_all");
}

TEST(FusedExec, MaxAndMinKeepANaNWhereverItLies) {
  GLIA_REQUIRE_CPU_BACKEND();
  constexpr int kRows = 4, kCols = 1000;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> x(kRows * kCols);
  for (int r = 0; r < kRows; ++r)
    for (int i = 0; i < kCols; ++i)
      x[std::size_t(r * kCols + i)] = float((i * 37 + r * 11) % 1000) - 500.f;
  x[1 * kCols + 517] = nan;  // inside a full block of lanes
  x[3 * kCols + 999] = nan;  // in a tile's tail
  Graph g = trace(
      [](const std::vector<Expr>& in) {
        return std::vector<Expr>{reduce_max(in[0], {1}), reduce_min(in[0], {1})};
      },
      {{f32, {kRows, kCols}}}, "max_min_nan");
  auto out = on_cpu(g, 1, {Tensor::from<float>(x, Shape{kRows, kCols})});
  for (int r = 0; r < kRows; ++r) {
    const float* row = x.data() + r * kCols;
    if (r == 1 || r == 3) {
      EXPECT_TRUE(std::isnan(out[0].data<float>()[r])) << r;
      EXPECT_TRUE(std::isnan(out[1].data<float>()[r])) << r;
      continue;
    }
    float hi = row[0], lo = row[0];
    for (int i = 1; i < kCols; ++i) hi = std::max(hi, row[i]), lo = std::min(lo, row[i]);
    EXPECT_EQ(out[0].data<float>()[r], hi) << r;
    EXPECT_EQ(out[1].data<float>()[r], lo) << r;
  }
}

TEST(FusedExec, WholeArrayMaxOnTwoThreadsCombinesBothHalves) {
  GLIA_REQUIRE_CPU_BACKEND();
  constexpr int kN = 200000;
  std::vector<float> x(kN);
  for (int i = 0; i < kN; ++i) x[std::size_t(i)] = float(i % 977) * 0.5f;
  Graph g = trace1_max(kN);
  EXPECT_EQ(on_cpu(g, 2, {Tensor::from<float>(x)})[0].data<float>()[0], 976 * 0.5f);
  // All negative: each thread's partial maximum is read where it was written.
  std::vector<float> neg(kN);
  for (int i = 0; i < kN; ++i) neg[std::size_t(i)] = -1.f - float(i % 977) * 0.5f;
  EXPECT_EQ(on_cpu(g, 2, {Tensor::from<float>(neg)})[0].data<float>()[0], -1.f);
  x[150001] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_TRUE(std::isnan(on_cpu(g, 2, {Tensor::from<float>(x)})[0].data<float>()[0]));
}

TEST(FusedExec, ScalarOperandsHoldAcrossTilesAndThreads) {
  GLIA_REQUIRE_CPU_BACKEND();
  constexpr int kN = 70001;  // several tiles per thread and a short last tile
  Graph g = trace(
      [](const std::vector<Expr>& in) {
        Expr s = broadcast_to(in[1], {kN}), c = broadcast_to(in[2], {kN});
        return std::vector<Expr>{max(in[0] * s + c, 0.25)};
      },
      {{f32, {kN}}, {f32, {}}, {f32, {}}}, "scalar_operands");
  std::vector<float> x(kN);
  for (int i = 0; i < kN; ++i) x[std::size_t(i)] = float(i % 101) / 50.f - 1.f;
  for (int threads : {1, 2}) {
    auto y = on_cpu(g, threads,
                    {Tensor::from<float>(x), Tensor::from<float>({1.5f}, Shape{}),
                     Tensor::from<float>({-0.5f}, Shape{})});
    for (int i = 0; i < kN; ++i)
      ASSERT_NEAR(y[0].data<float>()[i], std::max(x[std::size_t(i)] * 1.5f - 0.5f, 0.25f), 1e-6)
          << i << " on " << threads;
  }
}

// An integer divided by a splat that is a power of two runs as a shift: truncating toward
// zero for negative dividends as a division does; other divisors (and zero) divide.
TEST(FusedExec, IntegerDivisionByASplatTruncatesTowardZero) {
  GLIA_REQUIRE_CPU_BACKEND();
  constexpr int kN = 3000;
  std::vector<std::int32_t> a(kN);
  std::vector<std::uint32_t> u(kN);
  for (int i = 0; i < kN; ++i) {
    a[std::size_t(i)] = (i * 7919) % 20011 - 10005;
    u[std::size_t(i)] = std::uint32_t(i) * 2654435761u;
  }
  for (std::int32_t d : {1, 2, 256, 3, 0, -4}) {
    Graph g = trace(
        [](const std::vector<Expr>& in) {
          return std::vector<Expr>{in[0] / broadcast_to(in[1], {kN}),
                                   in[2] / broadcast_to(cast(in[1], DType::u32), {kN})};
        },
        {{DType::i32, {kN}}, {DType::i32, {}}, {DType::u32, {kN}}}, "int_divide");
    auto y = on_cpu(g, 1,
                    {Tensor::from<std::int32_t>(a), Tensor::from<std::int32_t>({d}, Shape{}),
                     Tensor::from<std::uint32_t>(u)});
    const auto ud = std::uint32_t(d);
    for (int i = 0; i < kN; ++i) {
      const std::int32_t x = a[std::size_t(i)];
      ASSERT_EQ(y[0].data<std::int32_t>()[i], d == 0 ? 0 : d == -1 ? -x : x / d) << x << "/" << d;
      ASSERT_EQ(y[1].data<std::uint32_t>()[i], ud == 0 ? 0u : u[std::size_t(i)] / ud)
          << u[std::size_t(i)] << "/" << ud;
    }
  }
}

// Splats on the left (1 - x, 2 / x) and a sweep with more live buffers than fit L1 at
// the longest tile (shorter tiles), over several tiles and both threads.
TEST(FusedExec, SplatsOnEitherSideAndManyLiveBuffers) {
  GLIA_REQUIRE_CPU_BACKEND();
  constexpr int kN = 100003;
  Graph g = trace(
      [](const std::vector<Expr>& in) {
        std::vector<Expr> t;
        for (int k = 0; k < 12; ++k) t.push_back(in[0] * double(k + 1) + double(k));
        Expr acc = 1.0 - t[0];
        for (int k = 1; k < 12; ++k) acc = acc + 2.0 / (t[k] + 20.0);
        return std::vector<Expr>{acc};
      },
      {{f32, {kN}}}, "splats");
  std::vector<float> x(kN);
  for (int i = 0; i < kN; ++i) x[std::size_t(i)] = float(i % 997) / 997.f;
  for (int threads : {1, 2}) {
    auto y = on_cpu(g, threads, {Tensor::from<float>(x)});
    for (int i = 0; i < kN; ++i) {
      const float v = x[std::size_t(i)];
      float acc = 1.f - v;
      for (int k = 1; k < 12; ++k) acc += 2.f / (v * float(k + 1) + float(k) + 20.f);
      ASSERT_NEAR(y[0].data<float>()[i], acc, 1e-5f) << i << " on " << threads;
    }
  }
}

TEST(FusedExec, SeveralOutputsReadTheSameInputsDirectly) {
  GLIA_REQUIRE_CPU_BACKEND();
  constexpr int kN = 5000;
  Graph g = trace(
      [](const std::vector<Expr>& in) {
        return std::vector<Expr>{in[0] + in[1], in[0] * 2.0, in[1] - in[0]};
      },
      {{f32, {kN}}, {f32, {kN}}}, "shared_input");
  std::vector<float> a(kN), b(kN);
  for (int i = 0; i < kN; ++i)
    a[std::size_t(i)] = float(i % 7), b[std::size_t(i)] = float(i % 5) - 2.f;
  auto y = on_cpu(g, 1, {Tensor::from<float>(a), Tensor::from<float>(b)});
  for (int i = 0; i < kN; ++i) {
    ASSERT_EQ(y[0].data<float>()[i], a[std::size_t(i)] + b[std::size_t(i)]) << i;
    ASSERT_EQ(y[1].data<float>()[i], a[std::size_t(i)] * 2.f) << i;
    ASSERT_EQ(y[2].data<float>()[i], b[std::size_t(i)] - a[std::size_t(i)]) << i;
  }
}

TEST(FusedExec, ABroadcastReadByAnotherGroupIsNotWrittenOut) {
  GLIA_REQUIRE_CPU_BACKEND();
  Graph g = trace(
      [](const std::vector<Expr>& in) {
        Expr s = 1.0 - pow(0.9, in[2]);
        Expr x = in[0] * broadcast_to(s, {64, 32});
        return std::vector<Expr>{matmul(x, in[1]) / broadcast_to(s, {64, 16})};
      },
      {{f32, {64, 32}}, {f32, {32, 16}}, {f32, {}}}, "broadcast_between_groups");
  auto cpu = compile_graph(g, "cpu");
  const Program& p = cpu->program();
  // The producer returns the scalar; the divide's kernel broadcasts it itself.
  const Kernel* divide = p.kernel_of(p.graph.outputs()[0]);
  ASSERT_NE(divide, nullptr);
  ASSERT_TRUE(std::holds_alternative<FusedSpec>(divide->spec)) << cpu->describe();
  ASSERT_EQ(divide->covered.size(), 2u);
  EXPECT_EQ(p.graph.node(divide->covered[0]).op, Op::broadcast);
  EXPECT_EQ(p.graph.node(divide->covered[1]).op, Op::divide);
  // The matmul's result is the only [64][16] array held in the arena.
  int held = 0;
  for (std::int64_t v = 0; v < p.graph.size(); ++v)
    held += p.placement[std::size_t(v)].kind == Placement::Kind::arena &&
            p.graph.type(ValueId(v)).shape == Shape{64, 16};
  EXPECT_EQ(held, 1) << cpu->describe();
  std::vector<Tensor> in = {seeded({64, 32}, f32, -1, 1, 7), seeded({32, 16}, f32, -1, 1, 8),
                            Tensor::from<float>({3.f}, Shape{})};
  EXPECT_TRUE(allclose(cpu->run(in)[0], interpret(g, in)[0], 1e-5, 1e-6));
}

}  // namespace
}  // namespace glia::testing
