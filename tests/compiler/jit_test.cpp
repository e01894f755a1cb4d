// jit: one trace per argument signature, results of every container kind, and the
// errors a caller can run into. Expected values come from std:: math in the test.
#include <cmath>

#include "core/test_util.hpp"
#include "glia/compiler.hpp"

namespace {

using glia::Expr;
using glia::Tensor;
using glia::testing::f32s;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

void expect_floats(const Tensor& t, const std::vector<double>& want) {
  ASSERT_EQ(t.numel(), static_cast<std::int64_t>(want.size())) << t.type();
  for (std::size_t i = 0; i < want.size(); ++i)
    EXPECT_NEAR(t.element(static_cast<std::int64_t>(i)), want[i], 1e-5 * (1 + std::abs(want[i])))
        << "element " << i;
}

}  // namespace

TEST(Jit, OneTracePerSignature) {
  int traces = 0;
  auto f = glia::jit([&traces](const Expr& x, const Expr& y) {
    ++traces;
    return glia::exp(x) * y;
  });
  Tensor x = f32s({0, 1, 2}), y = f32s({1, 2, 3});
  Tensor z = f(x, y);
  expect_floats(z, {1, 2 * std::exp(1.0), 3 * std::exp(2.0)});
  expect_floats(f(f32s({-1, 0, 1}), y), {std::exp(-1.0), 2, 3 * std::exp(1.0)});  // same types
  EXPECT_EQ(traces, 1);
  auto s = f.cache_stats();
  EXPECT_EQ(s.misses, 1);
  EXPECT_EQ(s.hits, 1);
  EXPECT_EQ(s.entries, 1);

  expect_floats(f(f32s({0, 0}), f32s({5, 6})), {5, 6});  // new shape: second trace
  EXPECT_EQ(f.cache_stats().misses, 2);
  Tensor d = f(Tensor::from<double>({1}), Tensor::from<double>({2}));  // new dtype: third
  EXPECT_EQ(d.dtype(), glia::f64);
  expect_floats(d, {2 * std::exp(1.0)});
  s = f.cache_stats();
  EXPECT_EQ(s.misses, 3);
  EXPECT_EQ(s.hits, 1);
  EXPECT_EQ(s.entries, 3);
  EXPECT_EQ(traces, 3);
  EXPECT_THAT(f.signatures(), ::testing::Contains("(f64[1], f64[1])"));
}

TEST(Jit, CopiesShareTheCache) {
  auto f = glia::jit([](const Expr& x) { return -x; });
  auto g = f;
  Tensor x = Tensor::from<std::int32_t>({1, -2});
  EXPECT_EQ(f(x).to_vector<std::int32_t>(), (std::vector<std::int32_t>{-1, 2}));
  EXPECT_EQ(g(x).to_vector<std::int32_t>(), (std::vector<std::int32_t>{-1, 2}));
  EXPECT_EQ(f.cache_stats().misses, 1);
  EXPECT_EQ(f.cache_stats().hits, 1);
}

TEST(Jit, ScalarsAndNumbers) {
  auto f = glia::jit([](const Expr& x) { return x * 2.0 + 1.0; });  // rank 0: no broadcast
  expect_floats(f(Tensor::scalar(3.5)), {8});
  EXPECT_EQ(f(Tensor::scalar(3.5)).rank(), 0);
  Tensor i = f(Tensor::scalar(3, glia::i32));  // a float number beside an integer gives f32
  EXPECT_EQ(i.type(), (glia::TensorType{glia::f32, {}}));
  expect_floats(i, {7});
  EXPECT_EQ(f.cache_stats().misses, 2);
}

TEST(Jit, VectorInVectorOut) {
  auto f = glia::jit([](const std::vector<Expr>& xs) {
    return std::vector<Expr>{xs[0] + xs[1], xs[0] * xs[1]};
  });
  auto out = f(std::vector<Tensor>{f32s({1, 2}), f32s({3, 4})});
  static_assert(std::is_same_v<decltype(out), std::vector<Tensor>>);
  ASSERT_EQ(out.size(), 2u);
  expect_floats(out[0], {4, 6});
  expect_floats(out[1], {3, 8});
  f(std::vector<Tensor>{f32s({1}), f32s({2}), f32s({3})});  // a longer vector: a new structure
  EXPECT_EQ(f.cache_stats().misses, 2);
}

TEST(Jit, TupleOut) {
  auto f = glia::jit([](const Expr& x, const Expr& y) { return std::tuple{x + y, x - y, x}; });
  auto [sum, diff, same] = f(f32s({5, 1}), f32s({2, 3}));
  expect_floats(sum, {7, 4});
  expect_floats(diff, {3, -2});
  expect_floats(same, {5, 1});  // a parameter returned as is
}

TEST(Jit, TupleInMixedContainers) {
  auto f = glia::jit([](const std::tuple<Expr, std::vector<Expr>>& t) {
    Expr acc = std::get<0>(t);
    for (const Expr& e : std::get<1>(t)) acc = acc + e;
    return acc;
  });
  Tensor r = f(std::tuple<Tensor, std::vector<Tensor>>{f32s({1}), {f32s({10}), f32s({100})}});
  expect_floats(r, {111});
}

TEST(Jit, MapInMapOut) {
  using Params = std::map<std::string, Tensor>;
  auto f = glia::jit([](const std::map<std::string, Expr>& p, const Expr& x) {
    Expr y = p.at("w") * x + p.at("b");
    return std::map<std::string, Expr>{{"y", y}, {"loss", y * y}};
  });
  Params params{{"w", f32s({2, -1})}, {"b", f32s({0.5f, 1})}};
  auto out = f(params, f32s({3, 4}));
  static_assert(std::is_same_v<decltype(out), std::map<std::string, Tensor>>);
  expect_floats(out.at("y"), {6.5, -3});
  expect_floats(out.at("loss"), {42.25, 9});
  EXPECT_EQ(out.size(), 2u);
  // The graph names its parameters by their place in the arguments.
  std::string text = f.graph_text(params, f32s({3, 4}));
  EXPECT_THAT(text, AllOf(HasSubstr("arg0.b"), HasSubstr("arg0.w"), HasSubstr("arg1"),
                          HasSubstr("multiply"), HasSubstr("add")));
  EXPECT_EQ(f.cache_stats().misses, 1);  // graph_text found the entry and counted nothing
  EXPECT_EQ(f.cache_stats().hits, 0);
  // Other keys are another structure: a second trace (which here fails: no "w").
  Params other{{"v", f32s({1, 1})}, {"b", f32s({0, 0})}};
  EXPECT_THROW(f(other, f32s({1, 1})), std::out_of_range);
  EXPECT_EQ(f.cache_stats().entries, 1);
}

TEST(Jit, NestedMapOfVectors) {
  using In = std::map<std::string, std::vector<Tensor>>;
  auto f = glia::jit([](const std::map<std::string, std::vector<Expr>>& groups) {
    std::map<std::string, std::vector<Expr>> out;
    for (const auto& [name, xs] : groups)
      for (const Expr& x : xs) out[name].push_back(glia::exp(x) + x);
    return out;
  });
  In in{{"layer1", {f32s({0, 1}), f32s({2, 3})}}, {"layer2", {f32s({-1, 0})}}};
  auto out = f(in);
  ASSERT_EQ(out.at("layer1").size(), 2u);
  expect_floats(out.at("layer1")[0], {1, std::exp(1.0) + 1});
  expect_floats(out.at("layer1")[1], {std::exp(2.0) + 2, std::exp(3.0) + 3});
  expect_floats(out.at("layer2")[0], {std::exp(-1.0) - 1, 1});
  EXPECT_THAT(f.signatures()[0], HasSubstr(R"({"layer1": [f32[2], f32[2]], "layer2": [f32[2]]})"));
}

TEST(Jit, AlikeFlattenedTypesGetTheirOwnEntries) {
  // An empty vector of vectors and an empty vector flatten alike; the results differ.
  auto f =
      glia::jit([](const auto& xs, const Expr& y) { return std::vector<Expr>(xs.size() + 1, y); });
  EXPECT_EQ(f(std::vector<std::vector<Tensor>>{}, f32s({1})).size(), 1u);
  EXPECT_EQ(f(std::vector<Tensor>{}, f32s({1})).size(), 1u);
  EXPECT_EQ(f.cache_stats().entries, 2);
}

TEST(Jit, InlinesInsideAnotherTrace) {
  auto inner = glia::jit([](const Expr& x) { return x * x; });
  auto outer = glia::jit([&inner](const Expr& x) { return inner(x) + x; });
  expect_floats(outer(f32s({3, -1})), {12, 0});
  EXPECT_EQ(inner.cache_stats().entries, 0);  // inlined, never compiled on its own
}

TEST(Jit, UsesTheChosenBackendAndNameAndDescribes) {
  auto f = glia::jit([](const Expr& x) { return glia::exp(x); },
                     glia::JitOptions{.backend = "interp", .name = "expo"});
  Tensor x = f32s({0, 0, 0});
  EXPECT_THAT(f.graph_text(x), HasSubstr("graph expo("));
  auto entry = f.compiled(x);
  EXPECT_THAT(entry->executable->describe(),
              AllOf(HasSubstr("interp"), HasSubstr("reference exp")));
  ASSERT_EQ(entry->executable->program().kernels.size(), 1u);
  EXPECT_EQ(entry->executable->memory_plan().arena_bytes, 0);  // exp writes the output
  EXPECT_EQ(entry->signature, "(f32[3])");
}

TEST(Jit, CompilesOnTheDefaultBackend) {
  auto f = glia::jit([](const Expr& x) { return x + 1.0; });
  EXPECT_EQ(f.options().backend, glia::default_backend());
  EXPECT_EQ(glia::JitOptions{.name = "g"}.backend, glia::default_backend());
  expect_floats(f(f32s({1, 2})), {2, 3});
  EXPECT_THAT(f.compiled(f32s({1, 2}))->executable->describe(),
              HasSubstr(glia::default_backend() + " executable"));
}

TEST(Jit, Errors) {
  EXPECT_THAT([] { glia::jit([](const Expr& x) { return x; }, {.backend = "gpu9000"}); },
              ThrowsMessage<glia::Error>(
                  AllOf(HasSubstr("unknown backend 'gpu9000'"), HasSubstr("interp"))));
  auto f =
      glia::jit([](const std::map<std::string, Expr>& p, const Expr& x) { return p.at("w") + x; },
                {.name = "affine"});
  EXPECT_THAT(
      [&] {
        f(std::map<std::string, Tensor>{{"w", Tensor()}}, f32s({1}));
      },
      ThrowsMessage<glia::Error>(AllOf(HasSubstr("'affine'"),
                                       HasSubstr("argument arg0.w is an undefined Tensor"),
                                       HasSubstr(R"(({"w": undefined}, f32[1]))"))));
  EXPECT_GLIA_ERROR(f(std::map<std::string, Tensor>{{"w", f32s({1, 2})}}, f32s({1, 2, 3})),
                    "cannot be broadcast");
  EXPECT_EQ(f.cache_stats().entries, 0);

  glia::Graph elsewhere("elsewhere");
  Expr foreign(&elsewhere, elsewhere.add_parameter({glia::f32, {1}}));
  auto leak = glia::jit([&foreign](const Expr&) { return foreign; });
  EXPECT_GLIA_ERROR(leak(f32s({1})), "result leaf 0 is an Expr of another trace");
  auto undefined = glia::jit([](const Expr& x) { return std::vector<Expr>{x, Expr()}; });
  EXPECT_GLIA_ERROR(undefined(f32s({1})), "result leaf 1 is an undefined Expr");
  auto nothing = glia::jit([](const Expr&) { return std::vector<Expr>{}; });
  EXPECT_GLIA_ERROR(nothing(f32s({1})), "returned no Expr");
}

TEST(Jit, NoArguments) {
  auto f = glia::jit([] { return glia::scalar(2.5) * glia::scalar(4.0); });
  EXPECT_EQ(f().item<float>(), 10.0f);
  EXPECT_EQ(f().item<float>(), 10.0f);
  EXPECT_EQ(f.signatures(), std::vector<std::string>{"()"});
  EXPECT_EQ(f.cache_stats().hits, 1);
  auto g = glia::compile([] { return std::vector<Expr>{glia::scalar(1.0, glia::i32)}; });
  EXPECT_EQ(g()[0].item<std::int32_t>(), 1);
}
