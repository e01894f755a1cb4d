// The backend registry, compile_graph and the interp backend behind the Backend interface.
#include <algorithm>
#include <cmath>

#include "core/test_util.hpp"
#include "glia/compiler.hpp"

namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::ThrowsMessage;

// x + y then exp: two computed f32[3] values.
glia::Graph add_exp_graph() {
  glia::Graph g("add_exp");
  auto x = g.add_parameter({glia::f32, {3}}, "x");
  auto y = g.add_parameter({glia::f32, {3}}, "y");
  auto s = g.add(glia::Op::add, {x, y});
  g.set_outputs({g.add(glia::Op::exp, {s})});
  return g;
}

// A backend that claims only `add`, to check that compile_graph refuses the rest.
class AddOnlyBackend final : public glia::Backend {
 public:
  std::string_view name() const override { return "add_only"; }
  bool supports(glia::Op op) const override {
    return op == glia::Op::add || op == glia::Op::parameter;
  }
  std::unique_ptr<glia::Executable> compile(const glia::Graph& g,
                                            const glia::CompileOptions& o) const override {
    return glia::backend("interp").compile(g, o);
  }
};

void register_add_only() {
  static const bool once = [] {
    glia::register_backend("add_only", [] { return std::make_unique<AddOnlyBackend>(); });
    return true;
  }();
  (void)once;
}

}  // namespace

TEST(Registry, InterpIsAlwaysThere) {
  auto names = glia::backend_names();
  EXPECT_NE(std::find(names.begin(), names.end(), "interp"), names.end());
  EXPECT_EQ(glia::backend("interp").name(), "interp");
  EXPECT_EQ(&glia::backend("interp"), &glia::backend("interp"));  // one instance
}

TEST(Registry, UnknownNameListsKnownOnes) {
  EXPECT_THAT(
      [] { glia::backend("tpu"); },
      ThrowsMessage<glia::Error>(AllOf(HasSubstr("unknown backend 'tpu'"), HasSubstr("interp"))));
}

TEST(Registry, RegisterAndRejectDuplicates) {
  register_add_only();
  auto names = glia::backend_names();
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
  EXPECT_NE(std::find(names.begin(), names.end(), "add_only"), names.end());
  EXPECT_GLIA_ERROR(
      glia::register_backend("interp", [] { return std::make_unique<AddOnlyBackend>(); }),
      "already registered");
  EXPECT_GLIA_ERROR(glia::register_backend("", [] { return std::make_unique<AddOnlyBackend>(); }),
                    "name is empty");
  EXPECT_GLIA_ERROR(glia::register_backend("nothing", nullptr), "factory is empty");
}

TEST(Registry, CompileGraphChecksSupportedOps) {
  register_add_only();
  EXPECT_THAT([] { glia::compile_graph(add_exp_graph(), "add_only"); },
              ThrowsMessage<glia::Error>(AllOf(HasSubstr("'add_only' does not support"),
                                               HasSubstr("exp"), Not(HasSubstr("add,")))));
  glia::Graph g("sum");
  auto x = g.add_parameter({glia::i32, {2}});
  g.set_outputs({g.add(glia::Op::add, {x, x})});
  auto exe = glia::compile_graph(g, "add_only");
  auto out = exe->run(std::vector<glia::Tensor>{glia::Tensor::from<std::int32_t>({3, -4})});
  EXPECT_EQ(out[0].to_vector<std::int32_t>(), (std::vector<std::int32_t>{6, -8}));
}

TEST(Registry, CompileGraphRejectsBadOptionsAndGraphs) {
  EXPECT_GLIA_ERROR(glia::compile_graph(add_exp_graph(), "interp", {.cpu = {.threads = -1}}),
                    "cpu threads must be >= 0");
  glia::Graph broken("broken");
  auto x = broken.add_parameter({glia::f32, {3}});
  glia::Node bad{glia::Op::exp, {x}, glia::NoAttrs{}, {glia::f64, {3}}};  // wrong type
  broken.set_outputs({broken.append(bad)});
  EXPECT_GLIA_ERROR(glia::compile_graph(broken, "interp"), "verify");
  // The interp backend verifies even when asked not to: its kernels trust their inputs.
  EXPECT_GLIA_ERROR(glia::compile_graph(broken, "interp", {.verify = false}), "verify");
}

TEST(Interp, RunsAGraph) {
  auto exe = glia::compile_graph(add_exp_graph(), "interp");
  std::vector<glia::Tensor> in{glia::Tensor::from<float>({0, 1, -2}),
                               glia::Tensor::from<float>({0, 0.5f, 1})};
  auto out = exe->run(in);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].type(), (glia::TensorType{glia::f32, {3}}));
  auto v = out[0].to_vector<float>();
  EXPECT_FLOAT_EQ(v[0], 1.0f);
  EXPECT_FLOAT_EQ(v[1], std::exp(1.5f));
  EXPECT_FLOAT_EQ(v[2], std::exp(-1.0f));
}

TEST(Interp, RunChecksInputs) {
  auto exe = glia::compile_graph(add_exp_graph(), "interp");
  EXPECT_GLIA_ERROR(exe->run(std::vector<glia::Tensor>{glia::Tensor::from<float>({1, 2, 3})}),
                    "takes 2 input(s), got 1");
  std::vector<glia::Tensor> wrong{glia::Tensor::from<float>({1, 2, 3}),
                                  glia::Tensor::from<double>({1, 2, 3})};
  EXPECT_GLIA_ERROR(exe->run(wrong), "expected f32[3]");
}

// run_refs takes the inputs by address (jit's path): the same results as run, the same
// checks, on the interpreter (the default, which copies) and on cpu (placed buffers).
TEST(Executable, RunRefsRunsAndChecksLikeRun) {
  for (const char* name : {"interp", "cpu"}) {
    SCOPED_TRACE(name);
    auto exe = glia::compile_graph(add_exp_graph(), name);
    glia::Tensor x = glia::Tensor::from<float>({0, 1, -2});
    glia::Tensor y = glia::Tensor::from<float>({0, 0.5f, 1});
    std::vector<const glia::Tensor*> refs{&x, &y};
    std::vector<float> got = exe->run_refs(refs)[0].to_vector<float>();
    ASSERT_EQ(got.size(), 3u);
    EXPECT_FLOAT_EQ(got[0], 1.0f);
    EXPECT_FLOAT_EQ(got[1], std::exp(1.5f));
    EXPECT_FLOAT_EQ(got[2], std::exp(-1.0f));
    std::vector<const glia::Tensor*> swapped{&y, &x};  // x + y either way
    EXPECT_EQ(exe->run_refs(swapped)[0].to_vector<float>(), got);
    std::vector<const glia::Tensor*> one{&x};
    EXPECT_GLIA_ERROR(exe->run_refs(one), "takes 2 input(s), got 1");
    glia::Tensor wide = glia::Tensor::from<double>({1, 2, 3});
    std::vector<const glia::Tensor*> wrong{&x, &wide};
    EXPECT_GLIA_ERROR(exe->run_refs(wrong), "input 1 expected f32[3], got f64[3]");
    glia::Tensor none;
    std::vector<const glia::Tensor*> undefined{&none, &y};
    EXPECT_GLIA_ERROR(exe->run_refs(undefined), "input 0 is undefined");
  }
}

TEST(Interp, ItsProgramIsOneReferenceKernelPerNode) {
  auto exe = glia::compile_graph(add_exp_graph(), "interp");
  const glia::Program& p = exe->program();
  ASSERT_EQ(p.kernels.size(), 2u);
  auto refs = p.specs<glia::ReferenceSpec>();
  ASSERT_EQ(refs.size(), 2u);
  EXPECT_EQ(refs[0]->op, glia::Op::add);
  EXPECT_EQ(refs[1]->op, glia::Op::exp);
  EXPECT_THAT(refs[0]->reason, HasSubstr("interp"));
  // add's result passes to exp through the arena; exp's is the output.
  EXPECT_EQ(p.placement[2].kind, glia::Placement::Kind::arena);
  EXPECT_EQ(p.placement[3].kind, glia::Placement::Kind::output);
  std::string text = exe->describe();
  EXPECT_THAT(text, HasSubstr("interp"));
  EXPECT_THAT(text, HasSubstr("reference add"));
  EXPECT_THAT(text, HasSubstr("graph add_exp("));
}

TEST(Interp, MemoryPlanFollowsLiveness) {
  auto exe = glia::compile_graph(add_exp_graph(), "interp");
  const glia::MemoryPlan& plan = exe->memory_plan();
  // Only add's f32[3] (12 B) passes between kernels (exp's is the output): one slot.
  EXPECT_EQ(plan.value_count, 1);
  EXPECT_EQ(plan.peak_live_bytes, 12);
  EXPECT_EQ(plan.arena_bytes, 64);
  EXPECT_EQ(plan.offsets, (std::vector<std::int64_t>{-1, -1, 0, -1}));
  EXPECT_EQ(plan.last_use, (std::vector<std::int64_t>{0, 0, 1, 2}));
}
