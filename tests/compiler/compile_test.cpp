// compile: one trace for the given templates, and a clear error for any other signature.
#include "core/test_util.hpp"
#include "glia/compiler.hpp"

namespace {

using glia::Expr;
using glia::Tensor;
using glia::TensorType;
using glia::testing::f32s;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::ThrowsMessage;
using Params = std::map<std::string, Tensor>;
using ParamTypes = std::map<std::string, TensorType>;

}  // namespace

TEST(Compile, TracesOnceAndRuns) {
  int traces = 0;
  auto f = glia::compile(
      [&traces](const Expr& x, const Expr& y) {
        ++traces;
        return x * y - x;
      },
      TensorType{glia::f32, {3}}, TensorType{glia::f32, {3}});
  EXPECT_EQ(traces, 1);
  EXPECT_EQ(f(f32s({1, 2, 3}), f32s({4, 5, 6})).to_vector<float>(), (std::vector<float>{3, 8, 15}));
  EXPECT_EQ(f(f32s({0, 1, -1}), f32s({1, 1, 1})).to_vector<float>(), (std::vector<float>{0, 0, 0}));
  EXPECT_EQ(traces, 1);
  EXPECT_EQ(f.signature(), "(f32[3], f32[3])");
}

TEST(Compile, RejectsOtherShapesAndDtypes) {
  auto f = glia::compile([](const Expr& x, const Expr& y) { return x + y; },
                         TensorType{glia::f32, {3}}, TensorType{glia::f32, {3}});
  EXPECT_THAT(
      [&] {
        f(f32s({1, 2, 3, 4}), f32s({1, 2, 3}));
      },
      ThrowsMessage<glia::Error>(AllOf(HasSubstr("compiled for arguments (f32[3], f32[3])"),
                                       HasSubstr("given (f32[4], f32[3])"))));
  EXPECT_GLIA_ERROR(f(f32s({1, 2, 3}), Tensor::from<double>({1, 2, 3})), "given (f32[3], f64[3])");
  EXPECT_GLIA_ERROR(f(f32s({1, 2, 3}), Tensor()), "argument arg1 is an undefined Tensor");
}

TEST(Compile, MapTemplatesRejectOtherKeys) {
  auto predict = glia::compile(
      [](const std::map<std::string, Expr>& p, const Expr& x) { return p.at("w") * x + p.at("b"); },
      ParamTypes{{"w", {glia::f32, {2}}}, {"b", {glia::f32, {2}}}}, TensorType{glia::f32, {2}},
      glia::JitOptions{.name = "predict"});
  static_assert(std::is_same_v<decltype(predict), glia::CompiledFn<Tensor, Params, Tensor>>);
  Params params{{"w", f32s({2, 3})}, {"b", f32s({1, -1})}};
  EXPECT_EQ(predict(params, f32s({10, 20})).to_vector<float>(), (std::vector<float>{21, 59}));
  EXPECT_THAT(predict.graph_text(), HasSubstr("graph predict("));
  Params renamed{{"w", f32s({2, 3})}, {"bias", f32s({1, -1})}};
  EXPECT_THAT(
      [&] {
        predict(renamed, f32s({1, 1}));
      },
      ThrowsMessage<glia::Error>(
          AllOf(HasSubstr("'predict'"), HasSubstr(R"(({"b": f32[2], "w": f32[2]}, f32[2]))"),
                HasSubstr(R"(given ({"bias": f32[2], "w": f32[2]}, f32[2]))"))));
  Params fewer{{"w", f32s({2, 3})}};
  EXPECT_GLIA_ERROR(predict(fewer, f32s({1, 1})), R"(given ({"w": f32[2]}, f32[2]))");
}

TEST(Compile, VectorTemplatesAndVectorResults) {
  auto f = glia::compile(
      [](const std::vector<Expr>& xs) {
        std::vector<Expr> out;
        for (const Expr& x : xs) out.push_back(-x);
        return std::tuple{out, xs[0]};
      },
      std::vector<TensorType>{{glia::i32, {2}}, {glia::i32, {1}}});
  auto [negated, first] =
      f(std::vector<Tensor>{Tensor::from<std::int32_t>({1, -2}), Tensor::from<std::int32_t>({7})});
  ASSERT_EQ(negated.size(), 2u);
  EXPECT_EQ(negated[0].to_vector<std::int32_t>(), (std::vector<std::int32_t>{-1, 2}));
  EXPECT_EQ(negated[1].to_vector<std::int32_t>(), (std::vector<std::int32_t>{-7}));
  EXPECT_EQ(first.to_vector<std::int32_t>(), (std::vector<std::int32_t>{1, -2}));
  EXPECT_THAT(
      [&] {
        f(std::vector<Tensor>{Tensor::from<std::int32_t>({1, -2})});
      },
      ThrowsMessage<glia::Error>(
          AllOf(HasSubstr("([i32[2], i32[1]])"), HasSubstr("given ([i32[2]])"))));
}

TEST(Compile, StorableAndDescribable) {
  glia::CompiledFn<Tensor, Tensor> g;
  EXPECT_FALSE(g.defined());
  EXPECT_GLIA_ERROR(g(f32s({1})), "empty glia::CompiledFn");
  // The interpreter's plan: one value per op, nothing fused.
  g = glia::compile([](const Expr& x) { return glia::tanh(glia::exp(x)); },
                    TensorType{glia::f32, {2}}, glia::JitOptions{.backend = "interp"});
  EXPECT_NEAR(g(f32s({0, 0})).to_vector<float>()[1], std::tanh(1.0), 1e-6);
  const glia::Executable& exe = *g.compiled().executable;
  EXPECT_THAT(exe.describe(), AllOf(HasSubstr("exp"), HasSubstr("tanh")));
  // The memory plan is the program's: one arena value per value placed in the arena.
  int in_arena = 0;
  for (const glia::Placement& p : exe.program().placement)
    in_arena += p.kind == glia::Placement::Kind::arena;
  EXPECT_EQ(exe.memory_plan().value_count, in_arena);
  EXPECT_EQ(exe.program().placement[std::size_t(exe.program().graph.outputs()[0])].kind,
            glia::Placement::Kind::output);
}

TEST(Compile, TraceErrorsSurfaceAtCompile) {
  EXPECT_GLIA_ERROR(glia::compile([](const Expr& x, const Expr& y) { return x + y; },
                                  TensorType{glia::f32, {2}}, TensorType{glia::f32, {3}}),
                    "cannot be broadcast");
  EXPECT_GLIA_ERROR(glia::compile([](const Expr& x) { return x; }, TensorType{glia::f32, {2}},
                                  glia::JitOptions{.backend = "nope"}),
                    "known backends: ");
}
