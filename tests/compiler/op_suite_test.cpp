// The op suite: every op of the op table (a table of small traced graphs per op, f32 and
// other dtypes where the op takes them) on every registered backend against the
// interpreter; a backend joins by registering. A node that a backend runs on the
// reference kernel without declaring that fallback fails the suite.
#include <algorithm>
#include <map>
#include <string>
#include <tuple>

#include "compiler/cpu_test_util.hpp"
#include "glia/autograd/grad.hpp"
#include "glia/compiler/cuda.hpp"
#include "glia/core/collective.hpp"
#include "glia/core/scan.hpp"

namespace glia::testing {
namespace {

struct OpCase {
  std::string name;
  std::vector<Tensor> inputs;
  ExprFn fn;
};
using OpCases = std::map<Op, std::vector<OpCase>>;

Tensor f(const Shape& s, unsigned seed, double lo = -2, double hi = 2, DType t = f32) {
  return seeded(s, t, lo, hi, seed);
}
Tensor ints(const Shape& s, unsigned seed, double lo = -9, double hi = 9) {
  return seeded(s, i32, lo, hi, seed);
}
Tensor bools(const Shape& s, unsigned seed) { return seeded(s, boolean, 0, 2, seed); }

using Unary = Expr (*)(const Expr&);
using Binary = Expr (*)(const Operand&, const Operand&);

void add_unary(OpCases& c, Op op, Unary fn, double lo, double hi, bool ints_too) {
  ExprFn e = [fn](const std::vector<Expr>& x) { return fn(x[0]); };
  c[op].push_back({"f32", {f({3, 5}, 1, lo, hi)}, e});
  c[op].push_back({"f64", {f({7}, 2, lo, hi, f64)}, e});
  if (ints_too) c[op].push_back({"i32", {ints({4, 3}, 3)}, e});
}

void add_binary(OpCases& c, Op op, Binary fn, double lo, double hi, bool ints_too) {
  ExprFn e = [fn](const std::vector<Expr>& x) { return fn(x[0], x[1]); };
  c[op].push_back({"f32", {f({3, 4}, 4, lo, hi), f({3, 4}, 5, lo, hi)}, e});
  c[op].push_back({"f32_broadcast", {f({3, 1}, 6, lo, hi), f({1, 5}, 7, lo, hi)}, e});
  c[op].push_back({"f64", {f({6}, 8, lo, hi, f64), f({6}, 9, lo, hi, f64)}, e});
  if (ints_too) c[op].push_back({"i32", {ints({2, 5}, 10), ints({2, 5}, 11, 1, 7)}, e});
}

void add_elementwise(OpCases& c) {
  add_unary(c, Op::neg, &neg, -3, 3, true);
  add_unary(c, Op::abs, &glia::abs, -3, 3, true);
  add_unary(c, Op::sign, &sign, -3, 3, true);
  add_unary(c, Op::exp, &glia::exp, -3, 3, false);
  add_unary(c, Op::expm1, &glia::expm1, -1, 1, false);
  add_unary(c, Op::log, &glia::log, 0.1, 5, false);
  add_unary(c, Op::log1p, &glia::log1p, -0.5, 5, false);
  add_unary(c, Op::sqrt, &glia::sqrt, 0, 9, false);
  add_unary(c, Op::rsqrt, &rsqrt, 0.1, 9, false);
  add_unary(c, Op::tanh, &glia::tanh, -3, 3, false);
  add_unary(c, Op::logistic, &sigmoid, -5, 5, false);
  add_unary(c, Op::erf, &glia::erf, -2, 2, false);
  add_unary(c, Op::sin, &glia::sin, -4, 4, false);
  add_unary(c, Op::cos, &glia::cos, -4, 4, false);
  add_unary(c, Op::floor, &glia::floor, -4, 4, false);
  add_unary(c, Op::ceil, &glia::ceil, -4, 4, false);
  add_unary(c, Op::round, &glia::round, -4, 4, false);
  ExprFn not_fn = [](const std::vector<Expr>& x) { return logical_not(x[0]); };
  c[Op::not_] = {{"bool", {bools({2, 3}, 12)}, not_fn}, {"i32", {ints({5}, 13)}, not_fn}};

  add_binary(c, Op::add, &glia::add, -3, 3, true);
  add_binary(c, Op::subtract, &subtract, -3, 3, true);
  add_binary(c, Op::multiply, &multiply, -3, 3, true);
  add_binary(c, Op::divide, &divide, 0.5, 3, true);
  add_binary(c, Op::pow, &glia::pow, 0.5, 2, false);
  add_binary(c, Op::max, &glia::max, -3, 3, true);
  add_binary(c, Op::min, &glia::min, -3, 3, true);
  add_binary(c, Op::remainder, &remainder, 0.5, 5, true);
  add_binary(c, Op::atan2, &glia::atan2, -3, 3, false);
  for (auto [op, fn] : {std::pair<Op, Binary>{Op::and_, &logical_and}, {Op::or_, &logical_or}}) {
    ExprFn e = [fn](const std::vector<Expr>& x) { return fn(x[0], x[1]); };
    c[op] = {{"bool", {bools({4}, 14), bools({4}, 15)}, e},
             {"i32", {ints({3, 2}, 16), ints({3, 2}, 17)}, e}};
  }
  std::pair<Op, Binary> compares[] = {{Op::eq, &glia::equal}, {Op::ne, &not_equal},
                                      {Op::lt, &less},        {Op::le, &less_equal},
                                      {Op::gt, &greater},     {Op::ge, &greater_equal}};
  for (auto [op, fn] : compares) {
    ExprFn e = [fn](const std::vector<Expr>& x) { return fn(x[0], x[1]); };
    // Small integers as floats: ties occur, so eq/le/ge see both outcomes.
    c[op] = {{"f32",
              {seeded({3, 4}, f32, -2, 2, 18).cast(i32).cast(f32),
               seeded({3, 4}, f32, -2, 2, 19).cast(i32).cast(f32)},
              e},
             {"i32", {ints({6}, 20, -2, 2), ints({6}, 21, -2, 2)}, e}};
  }
  c[Op::select] = {{"f32",
                    {bools({2, 4}, 22), f({2, 4}, 23), f({2, 4}, 24)},
                    [](const std::vector<Expr>& x) { return select(x[0], x[1], x[2]); }}};
  c[Op::cast] = {{"f32_to_i32", {f({5}, 25, -9, 9)}, [](auto& x) { return cast(x[0], i32); }},
                 {"i32_to_f64", {ints({5}, 26)}, [](auto& x) { return cast(x[0], f64); }},
                 {"f32_to_bf16", {f({5}, 27)}, [](auto& x) { return cast(x[0], bf16); }}};
}

void add_structure(OpCases& c) {
  c[Op::broadcast] = {{"f32",
                       {f({3}, 30)},
                       [](auto& x) {
                         return broadcast(x[0], {2, 3, 4}, {1});
                       }},
                      {"i32", {ints({2, 1}, 31)}, [](auto& x) {
                         return broadcast_to(x[0], {2, 5});
                       }}};
  c[Op::reshape] = {{"f32", {f({2, 6}, 32)}, [](auto& x) { return reshape(x[0], {3, -1}); }}};
  c[Op::transpose] = {{"f32",
                       {f({2, 3, 4}, 33)},
                       [](auto& x) {
                         return transpose(x[0], {2, 0, 1});
                       }},
                      {"i32", {ints({3, 5}, 34)}, [](auto& x) { return transpose(x[0]); }}};
  c[Op::slice] = {{"f32", {f({5, 6}, 35)}, [](auto& x) {
                     return slice(x[0], {1, 0}, {5, 6}, {2, 3});
                   }}};
  c[Op::pad] = {{"f32", {f({2, 3}, 36)}, [](auto& x) {
                   return pad(x[0], 0.5, {1, -1}, {0, 2}, {1, 1});
                 }}};
  c[Op::concatenate] = {{"f32",
                         {f({2, 3}, 37), f({4, 3}, 38)},
                         [](auto& x) {
                           return concatenate({x[0], x[1]}, 0);
                         }},
                        {"i32", {ints({2, 1}, 39), ints({2, 2}, 40)}, [](auto& x) {
                           return concatenate({x[0], x[1], x[0]}, 1);
                         }}};
  c[Op::reverse] = {{"f32", {f({3, 4}, 41)}, [](auto& x) { return reverse(x[0], {1}); }}};
  c[Op::gather] = {{"f32",
                    {f({4, 3}, 42), Tensor::from<std::int32_t>({3, 0, 0, 2, 1}, Shape{5})},
                    [](auto& x) { return take(x[0], x[1], 0); }},
                   {"i32_axis1",
                    {ints({2, 4}, 43), Tensor::from<std::int64_t>({1, 3, 3}, Shape{3})},
                    [](auto& x) { return take(x[0], x[1], 1); }}};
  c[Op::scatter_add] = {
      {"f32",
       {f({4, 2}, 44), Tensor::from<std::int32_t>({1, 3, 1}, Shape{3}), f({3, 2}, 45)},
       [](auto& x) { return scatter_add(x[0], x[1], x[2], 0); }}};
}

void add_reductions(OpCases& c) {
  using Reduce = Expr (*)(const Expr&, const Ints&, bool);
  std::pair<Op, Reduce> reductions[] = {{Op::reduce_sum, &sum},
                                        {Op::reduce_max, &reduce_max},
                                        {Op::reduce_min, &reduce_min},
                                        {Op::reduce_prod, &product}};
  for (auto [op, fn] : reductions) {
    c[op] = {
        {"f32_axis1", {f({3, 4, 2}, 50, 0.5, 1.5)}, [fn](auto& x) { return fn(x[0], {1}, false); }},
        {"f32_all_keep", {f({3, 4}, 51, 0.5, 1.5)}, [fn](auto& x) { return fn(x[0], {}, true); }},
        {"i32", {ints({4, 3}, 52, -3, 3)}, [fn](auto& x) { return fn(x[0], {0}, false); }}};
  }
  using ArgReduce = Expr (*)(const Expr&, std::optional<std::int64_t>, bool);
  for (auto [op, fn] : {std::pair<Op, ArgReduce>{Op::argmax, &argmax}, {Op::argmin, &argmin}}) {
    c[op] = {{"f32", {f({3, 5}, 53)}, [fn](auto& x) { return fn(x[0], 1, false); }},
             {"i32_keep", {ints({4, 3}, 54)}, [fn](auto& x) { return fn(x[0], 0, true); }}};
  }
}

void add_contractions_and_windows(OpCases& c) {
  c[Op::dot_general] = {
      {"f32", {f({3, 4}, 60), f({4, 5}, 61)}, [](auto& x) { return dot(x[0], x[1]); }},
      {"f64",
       {f({3, 4}, 62, -2, 2, f64), f({4, 2}, 63, -2, 2, f64)},
       [](auto& x) { return dot(x[0], x[1]); }},
      {"i32", {ints({2, 3}, 64), ints({3, 2}, 65)}, [](auto& x) { return dot(x[0], x[1]); }}};
  c[Op::convolution] = {{"f32", {f({2, 3, 6, 5}, 66), f({4, 3, 3, 2}, 67)}, [](auto& x) {
                           return conv(x[0], x[1], {.strides = {2, 1}, .padding_low = {1, 0}});
                         }}};
  c[Op::window_sum] = {{"f32", {f({2, 6, 4}, 68)}, [](auto& x) {
                          return window_sum(x[0], {1, 2, 2});
                        }}};
  c[Op::window_max] = {{"f32",
                        {f({2, 6, 4}, 69)},
                        [](auto& x) {
                          return window_max(x[0], {1, 3, 2}, {.strides = {1, 1, 2}});
                        }},
                       {"i32", {ints({5, 4}, 70)}, [](auto& x) {
                          return window_max(x[0], {2, 2});
                        }}};
  c[Op::select_and_scatter] = {{"f32", {f({4, 6}, 71), f({2, 3}, 72)}, [](auto& x) {
                                  return select_and_scatter(x[0], x[1], {2, 2});
                                }}};
}

void add_leaves(OpCases& c) {
  c[Op::parameter] = {{"identity", {f({2, 2}, 80)}, [](auto& x) { return x[0]; }}};
  c[Op::constant] = {{"f32",
                      {f({3}, 81)},
                      [](auto& x) {
                        return x[0] + constant(Tensor::from<float>({1.5f, -2, 4}));
                      }},
                     {"alone", {}, [](auto&) {
                        return constant(Tensor::from<std::int32_t>({7, 8}));
                      }}};
  c[Op::iota] = {{"i64",
                  {},
                  [](auto&) {
                    return iota({3, 4}, 1);
                  }},
                 {"f32", {}, [](auto&) { return iota({5}, std::nullopt, f32); }}};
  c[Op::random_bits] = {
      {"u32",
       {random::key(42)},
       [](auto& x) {
         return random::bits(x[0], {3, 5});
       }},
      {"uniform", {random::key(7)}, [](auto& x) { return random::uniform(x[0], {4}); }}};
  c[Op::stop_gradient] = {{"f32", {f({4}, 82)}, [](auto& x) { return stop_grad(x[0]) * 2.0; }}};
  // One process: the sum over the processes is the value. Element-wise neighbours on both
  // sides (which must not fuse across it) and a constant input (which must not fold).
  static const auto one_process = std::make_shared<LocalCommunicator>();
  static const std::int64_t local = register_communicator(one_process);
  c[Op::all_reduce] = {
      {"f32_between_sweeps",
       {f({3, 5}, 83)},
       [](auto& x) { return all_reduce(x[0] * 2.0, local, 1) + 1.0; }},
      {"f64", {f({6}, 84, -2, 2, f64)}, [](auto& x) { return all_reduce(x[0], local, 0); }},
      {"i64_constant", {f({2}, 85)}, [](auto& x) {
         return cast(x[0], i64) +
                all_reduce(constant(Tensor::from<std::int64_t>({3, 4})), local, 2);
       }}};
}

// Loops: a tanh RNN (final carry and stacked outputs of one loop), its gradient (the
// reverse loop, reading the stored carries), and an integer loop without sequences.
void add_loops(OpCases& c) {
  using Vs = std::vector<Expr>;
  auto rnn = [](const Vs& in) {
    return scan(
        [](const Vs& h, const Vs& x, const Vs& w) {
          return ScanResult{{tanh(dot(h[0], w[0]) + x[0])}, {h[0] * 2.0}};
        },
        {in[0]}, {in[1]}, {in[2]});
  };
  auto inputs = [](DType t) {
    return std::vector<Tensor>{f({2, 3}, 91, -1, 1, t), f({5, 2, 3}, 92, -1, 1, t),
                               f({3, 3}, 93, -0.7, 0.7, t)};
  };
  c[Op::scan] = {
      {"rnn_f32", inputs(f32),
       [rnn](const Vs& in) {
         ScanResult r = rnn(in);
         return r.outputs[0] + expand_dims(r.carries[0], 0);
       }},
      {"rnn_gradient_f32", inputs(f32),
       [rnn](const Vs& in) {
         ScanResult r = rnn(in);
         Expr loss = sum(r.outputs[0] * r.outputs[0]) + sum(r.carries[0]);
         std::vector<Expr> g = gradients(loss, {in[0], in[1], in[2]});
         return concatenate({reshape(g[0], {-1}), reshape(g[1], {-1}), reshape(g[2], {-1})});
       }},
      {"reverse_f64", inputs(f64),
       [](const Vs& in) {
         return scan(
                    [](const Vs& h, const Vs& x, const Vs&) {
                      return ScanResult{{h[0] * 0.5 + x[0]}, {h[0]}};
                    },
                    {in[0]}, {in[1]}, {}, {true})
             .outputs[0];
       }},
      {"counter_i32", {ints({3}, 94)}, [](const Vs& in) {
         return scan(
                    [](const Vs& h, const Vs&, const Vs& k) {
                      return ScanResult{{multiply(h[0], 2) + k[0]}, {}};
                    },
                    {zeros({3}, i32)}, {}, {in[0]}, {.length = 4})
             .carries[0];
       }}};
}

const OpCases& op_cases() {
  static const OpCases cases = [] {
    OpCases c;
    add_elementwise(c);
    add_structure(c);
    add_reductions(c);
    add_contractions_and_windows(c);
    add_leaves(c);
    add_loops(c);
    return c;
  }();
  return cases;
}

class OpSuite : public ::testing::TestWithParam<std::tuple<std::string, int>> {};

TEST_P(OpSuite, MatchesInterpAndFallsBackOnlyWhereDeclared) {
  const auto& [backend_name, op_index] = GetParam();
  auto op = static_cast<Op>(op_index);
  auto it = op_cases().find(op);
  ASSERT_TRUE(it != op_cases().end() && !it->second.empty()) << "no test case for op " << op;
  if (std::string why = backend(backend_name).unavailable(); !why.empty())
    GTEST_SKIP() << backend_name << ": " << why;
  if (!backend(backend_name).supports(op)) GTEST_SKIP() << backend_name << " does not run " << op;
  for (const OpCase& c : it->second) {
    SCOPED_TRACE(c.name);
    std::vector<TensorType> types;
    for (const Tensor& t : c.inputs) types.push_back(t.type());
    Graph g = trace([&](const std::vector<Expr>& in) { return std::vector<Expr>{c.fn(in)}; }, types,
                    cat(op_name(op), "_", c.name));
    ASSERT_GE(count_ops(g, op), 1) << "the case does not use " << op << ":\n" << to_text(g);
    auto exe = expect_backend_matches_interp(backend_name, g, c.inputs);
    const Program& p = exe->program();
    // Every computed node is covered by exactly one kernel.
    for (std::int64_t v = 0; v < g.size(); ++v) {
      Op node_op = g.node(static_cast<ValueId>(v)).op;
      if (node_op == Op::parameter || node_op == Op::constant) continue;
      int covering = 0;
      for (const Kernel& k : p.kernels)
        covering += int(std::count(k.covered.begin(), k.covered.end(), ValueId(v)));
      EXPECT_EQ(covering, 1) << "%" << v << "\n" << exe->describe();
    }
    for (const auto* r : p.specs<ReferenceSpec>())
      EXPECT_FALSE(r->reason.empty())
          << backend_name << " runs " << r->op << " on its reference kernel without declaring it\n"
          << exe->describe();
  }
}

// A backend that claims to run every op must have a real kernel for an f32 matmul.
TEST(OpSuite, CpuRunsF32MatmulsOnAKernelOfItsOwn) {
  GLIA_REQUIRE_CPU_BACKEND();
  const OpCase& c = op_cases().at(Op::dot_general).front();
  Graph g = trace([&](const std::vector<Expr>& in) { return std::vector<Expr>{c.fn(in)}; },
                  {c.inputs[0].type(), c.inputs[1].type()}, "f32_dot");
  auto exe = expect_cpu_matches_interp(g, c.inputs);
  EXPECT_EQ(count_kernels(*exe, "matmul"), 1);
}

// Every kernel the cuda backend generates for the suite's graphs, and their gradients
// (backward kernels: scatter_add, select_and_scatter's sums, ...), compiles under NVRTC
// for an H100 (sm_90). NVRTC needs no GPU: this runs wherever the toolkit is.
TEST(OpSuite, CudaKernelsCompileWithNvrtc) {
  if (!cuda::built()) GTEST_SKIP() << "glia was built without the cuda backend's code";
  std::size_t kernels = 0, cases = 0;
  for (const auto& [op, list] : op_cases())
    for (const OpCase& c : list) {
      SCOPED_TRACE(cat(op_name(op), "_", c.name));
      std::vector<TensorType> types;
      for (const Tensor& t : c.inputs) types.push_back(t.type());
      Graph g = trace([&](const std::vector<Expr>& in) { return std::vector<Expr>{c.fn(in)}; },
                      types, cat(op_name(op), "_", c.name));
      cuda::KernelReport r;
      try {
        r = cuda::compile_kernels(g);
      } catch (const Error& e) {
        if (std::string(e.what()).find("cannot load NVRTC") != std::string::npos)
          GTEST_SKIP() << e.what();
        ADD_FAILURE() << e.what() << "\n" << to_text(g);
        continue;
      }
      // Every fused and direct kernel of the program became generated code.
      std::size_t generated_specs =
          r.program.specs<FusedSpec>().size() + r.program.specs<DirectSpec>().size();
      if (generated_specs > 0) {
        EXPECT_GT(r.kernels, 0u) << r.program.describe();
      }
      if (r.kernels > 0) {
        EXPECT_GT(r.cubin_bytes, 0u);
      }
      for (const auto* ref : r.program.specs<ReferenceSpec>())
        EXPECT_FALSE(ref->reason.empty()) << "cuda leaves " << ref->op << " undeclared";
      kernels += r.kernels;
      ++cases;
    }
  EXPECT_GT(kernels, cases / 2) << "most cases generate kernels";
}

INSTANTIATE_TEST_SUITE_P(EveryBackend, OpSuite,
                         ::testing::Combine(::testing::ValuesIn(backend_names()),
                                            ::testing::Range(0, kOpCount)),
                         [](const ::testing::TestParamInfo<std::tuple<std::string, int>>& info) {
                           return std::get<0>(info.param) + "_" +
                                  std::string(op_name(static_cast<Op>(std::get<1>(info.param))));
                         });

}  // namespace
}  // namespace glia::testing
