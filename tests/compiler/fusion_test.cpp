// Fused element-wise and reduction kernels: the grouping analysis (which nodes share a
// kernel, convexity), the `cpu` fused kernels against the interpreter (odd shapes,
// broadcasts, reductions over leading, trailing, middle and all axes, every dtype
// class, a 1,000,000-element softmax, the dropout mask bit for bit) and in-place updates
// of donated parameters.
#include <functional>
#include <map>
#include <set>
#include <string>

#include "compiler/cpu_test_util.hpp"
#include "glia/autograd/grad.hpp"
#include "glia/compiler/fusion.hpp"

namespace glia::testing {
namespace {

// Compiles g (optimized, as a training step is) on cpu, compares with the interpreter,
// checks that nothing runs on a reference kernel, and returns the executable.
std::unique_ptr<Executable> fused_kernels(const Graph& g, const std::vector<Tensor>& inputs,
                                          double rtol = 1e-5, double atol = 1e-6) {
  auto cpu = compile_graph(g, "cpu");
  auto want = interpret(g, inputs);
  auto got = cpu->run(inputs);
  EXPECT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < std::min(got.size(), want.size()); ++i)
    EXPECT_TRUE(allclose(got[i], want[i], rtol, atol))
        << "output " << i << "\ncpu: " << got[i] << "\ninterp: " << want[i] << "\n"
        << cpu->describe();
  EXPECT_TRUE(reference_ops(*cpu).empty()) << cpu->describe();
  return cpu;
}

std::size_t kernel_count(const Executable& exe) { return exe.program().kernels.size(); }

Graph trace1(const TensorType& t, std::function<Expr(const Expr&)> fn, std::string name) {
  return trace([&](const std::vector<Expr>& in) { return std::vector<Expr>{fn(in[0])}; }, {t},
               name);
}

TEST(Fusion, SoftmaxIsOneKernelOfFourPhases) {
  GLIA_REQUIRE_CPU_BACKEND();
  Graph g = trace1(
      {f32, {128, 10}}, [](const Expr& x) { return softmax(x); }, "softmax");
  auto exe = fused_kernels(g, {seeded({128, 10}, f32, -5, 5, 1)});
  ASSERT_EQ(kernel_count(*exe), 1u);
  const auto& f = std::get<FusedSpec>(exe->program().kernels[0].spec);
  ASSERT_EQ(f.sweeps.size(), 4u);
  // max over rows | exp, and its sum over rows | the sums' reciprocals, one a row |
  // multiply: the first two and the last over all 1280 elements.
  ASSERT_EQ(f.sweeps[0].reductions.size(), 1u);
  EXPECT_EQ(f.sweeps[0].reductions[0].op, Op::reduce_max);
  ASSERT_EQ(f.sweeps[0].reductions[0].extents.size(), 2u);
  EXPECT_EQ(f.sweeps[0].reductions[0].extents[0].size, 128);
  EXPECT_FALSE(f.sweeps[0].reductions[0].extents[0].reduced);
  EXPECT_EQ(f.sweeps[0].reductions[0].extents[1].size, 10);
  EXPECT_TRUE(f.sweeps[0].reductions[0].extents[1].reduced);
  ASSERT_EQ(f.sweeps[1].reductions.size(), 1u);
  EXPECT_EQ(f.sweeps[1].reductions[0].op, Op::reduce_sum);
  EXPECT_TRUE(f.sweeps[2].reductions.empty());
  EXPECT_TRUE(f.sweeps[3].reductions.empty());
  EXPECT_EQ(f.sweeps[0].numel, 1280);
  EXPECT_EQ(f.sweeps[1].numel, 1280);
  EXPECT_EQ(f.sweeps[2].numel, 128);
  EXPECT_EQ(f.sweeps[3].numel, 1280);
  // The two row results, the reciprocals and the exponentials are kept between sweeps:
  // the cpu target stores a transcendental value a later sweep reads rather than
  // computing it again.
  EXPECT_EQ(exe->program().kernels[0].temporaries.size(), 4u);
}

TEST(Fusion, LogSoftmaxAndLayerNormAreOneKernelEach) {
  GLIA_REQUIRE_CPU_BACKEND();
  Graph ls = trace1(
      {f32, {33, 17}}, [](const Expr& x) { return log_softmax(x); }, "log_softmax");
  EXPECT_EQ(kernel_count(*fused_kernels(ls, {seeded({33, 17}, f32, -5, 5, 2)})), 1u);
  Graph ln = trace(
      [](const std::vector<Expr>& in) {
        Expr m = mean(in[0], {1}, true);
        Expr c = in[0] - m;
        Expr y = c * rsqrt(mean(square(c), {1}, true) + 1e-5);
        return std::vector<Expr>{y * in[1] + in[2]};
      },
      {{f32, {37, 300}}, {f32, {300}}, {f32, {300}}}, "layer_norm");
  auto exe = fused_kernels(ln, {seeded({37, 300}, f32, -3, 3, 3), seeded({300}, f32, 0.5, 2, 4),
                                seeded({300}, f32, -1, 1, 5)});
  EXPECT_EQ(kernel_count(*exe), 1u);
}

TEST(Fusion, AdamUpdateIsOneKernelUpdatingInPlace) {
  GLIA_REQUIRE_CPU_BACKEND();
  Shape s{784, 128};
  Graph g = trace(
      [](const std::vector<Expr>& in) {
        const Expr &p = in[0], &grad = in[1], &m = in[2], &v = in[3];
        Expr m2 = 0.9 * m + 0.1 * grad;
        Expr v2 = 0.999 * v + 0.001 * square(grad);
        Expr p2 = p - 1e-3 * (m2 / 0.1) / (sqrt(v2 / 0.001) + 1e-8);
        return std::vector<Expr>{p2, m2, v2};
      },
      {{f32, s}, {f32, s}, {f32, s}, {f32, s}}, "adam");
  std::vector<Tensor> in{seeded(s, f32, -1, 1, 6), seeded(s, f32, -1, 1, 7),
                         seeded(s, f32, -0.1, 0.1, 8), seeded(s, f32, 0, 0.01, 9)};
  auto exe = fused_kernels(g, in);
  ASSERT_EQ(kernel_count(*exe), 1u);
  // p2, m2 and v2 each take the storage of an input that dies in this kernel (every
  // input is read element for element, before the same element of an output is written).
  const Program& prog = exe->program();
  std::set<int> donors;
  for (ValueId out : prog.graph.outputs()) {
    int d = prog.placement[static_cast<std::size_t>(out)].donor;
    EXPECT_GE(d, 0) << exe->describe();
    donors.insert(d);
  }
  EXPECT_EQ(donors.size(), 3u) << exe->describe();
  ASSERT_EQ(prog.kernels[0].in_place.size(), 12u);  // 4 inputs x 3 outputs, all f32[784][128]
}

TEST(Fusion, CrossEntropyAndItsGradientAreAtMostTwoKernels) {
  GLIA_REQUIRE_CPU_BACKEND();
  Graph g = trace(
      [](const std::vector<Expr>& in) {
        Expr loss = -mean(sum(in[1] * log_softmax(in[0]), {1}));
        return std::vector<Expr>{loss, gradients(loss, {in[0]})[0]};
      },
      {{f32, {128, 10}}, {f32, {128, 10}}}, "xent");
  Tensor labels = Tensor::from<float>(std::vector<float>(1280, 0.0f), Shape{128, 10});
  auto* y = static_cast<float*>(labels.raw_data());
  for (int i = 0; i < 128; ++i) y[i * 10 + (i * 7) % 10] = 1;
  auto exe = fused_kernels(g, {seeded({128, 10}, f32, -4, 4, 10), labels});
  EXPECT_LE(kernel_count(*exe), 2u);
  EXPECT_EQ(count_kernels(*exe, "fused"), int(kernel_count(*exe)));
}

TEST(Fusion, GroupsAreConvexAroundAMatmul) {
  // exp(x) feeds both a matmul and the add that reads the matmul: fusing exp with the
  // add would make the kernel and the matmul wait for each other.
  Graph g = trace(
      [](const std::vector<Expr>& in) {
        Expr a = exp(in[0]);
        return std::vector<Expr>{a + matmul(a, in[1])};
      },
      {{f32, {4, 4}}, {f32, {4, 4}}}, "diamond");
  std::vector<bool> eligible;
  for (const Node& n : g.nodes()) eligible.push_back(n.op != Op::dot_general);
  auto groups = fusion_groups(g, eligible);
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_EQ(groups[0].nodes.size(), 1u);
  EXPECT_EQ(g.node(groups[0].nodes[0]).op, Op::exp);
  EXPECT_EQ(g.node(groups[1].nodes.back()).op, Op::add);
  EXPECT_EQ(groups[1].inputs.size(), 2u);  // exp's result and the matmul's
  if (!cpu_backend_built()) return;
  // On cpu the add becomes the matmul's residual epilogue: exp, then matmul + residual.
  auto exe = fused_kernels(g, {seeded({4, 4}, f32, -1, 1, 11), seeded({4, 4}, f32, -1, 1, 12)});
  EXPECT_EQ(kernel_count(*exe), 2u);
  EXPECT_EQ(count_kernels(*exe, "fused"), 1);
  EXPECT_EQ(only_matmul(*exe).epilogue.text(), " + residual");
}

// True when the groups, each contracted to one node, depend on each other in a cycle.
bool groups_form_a_cycle(const Graph& g, const std::vector<FusionGroup>& groups) {
  std::vector<int> group(static_cast<std::size_t>(g.size()), -1);
  for (std::size_t k = 0; k < groups.size(); ++k)
    for (ValueId v : groups[k].nodes) group[static_cast<std::size_t>(v)] = int(k);
  // A unit is a group or a lone node; unit u depends on unit w when a node of u reads w.
  auto unit = [&](ValueId v) {
    int k = group[static_cast<std::size_t>(v)];
    return k >= 0 ? k : int(groups.size()) + int(v);
  };
  std::map<int, std::set<int>> deps;
  for (std::int64_t i = 0; i < g.size(); ++i) {
    auto id = static_cast<ValueId>(i);
    for (ValueId in : g.node(id).inputs)
      if (unit(in) != unit(id)) deps[unit(id)].insert(unit(in));
  }
  std::map<int, int> state;  // 1: on the path, 2: done
  std::function<bool(int)> cyclic = [&](int u) {
    if (state[u] == 1) return true;
    if (state[u] == 2) return false;
    state[u] = 1;
    for (int w : deps[u])
      if (cyclic(w)) return true;
    state[u] = 2;
    return false;
  };
  for (const auto& [u, ws] : deps)
    if (cyclic(u)) return true;
  return false;
}

TEST(Fusion, GroupsNeverFeedEachOtherBothWays) {
  // Each group alone is convex, but a group computing a scalar for the Adam-like update
  // (k) must not also take the update after the matmul when the matmul reads the other
  // group: the kernels would wait for each other.
  Graph g = trace(
      [](const std::vector<Expr>& in) {
        Expr a = exp(in[0]);
        Expr k = in[2] * 2.0;
        Expr m = matmul(a, in[1]);
        Expr u = m * broadcast(k, {4, 4}, {});
        Expr v = a + broadcast(k, {4, 4}, {});
        return std::vector<Expr>{u, v, m + v};
      },
      {{f32, {4, 4}}, {f32, {4, 4}}, {f32, {}}}, "both_ways");
  std::vector<bool> eligible;
  for (const Node& n : g.nodes()) eligible.push_back(n.op != Op::dot_general);
  EXPECT_FALSE(groups_form_a_cycle(g, fusion_groups(g, eligible)));
  if (!cpu_backend_built()) return;
  fused_kernels(
      g, {seeded({4, 4}, f32, -1, 1, 1), seeded({4, 4}, f32, -1, 1, 2), seeded({}, f32, -1, 1, 3)});
}

TEST(Fusion, GroupsNeverFeedEachOtherThroughAYoungerMember) {
  // A dense layer of one unit trained with Adam (seen failing to compile): the bias
  // group (a) takes in a scalar from the bias-correction group (k) through a broadcast of
  // the same size, then k's group would merge with the group after the matmul (b). Each
  // check alone sees nothing older than k's nodes depend on it, but a's group, older
  // than k, now reads k and feeds the matmul: the two kernels would wait for each other.
  Graph g = trace(
      [](const std::vector<Expr>& in) {
        Expr a = -in[0];                               // [4][1]
        Expr m = matmul(a, in[1]);                     // [4][4], a library kernel
        Expr b = -m;                                   // [4][4]
        Expr k = -in[2];                               // scalar, younger than the matmul
        Expr t = sum(a, {0}) + broadcast(k, {1}, {});  // [1]: joins a's group, reads k
        Expr u = b + broadcast(k, {4, 4}, {});         // would merge k's and b's groups
        return std::vector<Expr>{t, u};
      },
      {{f32, {4, 1}}, {f32, {1, 4}}, {f32, {}}}, "younger_member");
  std::vector<bool> eligible;
  for (const Node& n : g.nodes()) eligible.push_back(n.op != Op::dot_general);
  EXPECT_FALSE(groups_form_a_cycle(g, fusion_groups(g, eligible)));
  if (!cpu_backend_built()) return;
  fused_kernels(
      g, {seeded({4, 1}, f32, -1, 1, 1), seeded({1, 4}, f32, -1, 1, 2), seeded({}, f32, -1, 1, 3)});
}

TEST(Fusion, ReductionsOverAnyAxesMatchTheInterpreter) {
  GLIA_REQUIRE_CPU_BACKEND();
  Shape s{7, 5, 9};
  for (DType t : {f32, f64, i32, u8, f16, bf16, i64})
    for (Ints axes : std::vector<Ints>{{0}, {2}, {1}, {0, 1}, {1, 2}, {0, 2}, {0, 1, 2}})
      for (int which = 0; which < 4; ++which) {
        SCOPED_TRACE(cat(dtype_name(t), " axes ", axes.size(), " op ", which));
        Graph g = trace1(
            {t, s},
            [&](const Expr& x) {
              Expr y = x * x + x;  // an element-wise prologue in the same kernel
              return which == 0   ? sum(y, axes)
                     : which == 1 ? reduce_max(y, axes, true)
                     : which == 2 ? reduce_min(y, axes)
                                  : product(x, axes);
            },
            "reduce");
        double lo = is_float(t) ? -2 : 0, hi = is_float(t) ? 2 : 4;
        double tol = (t == f16 || t == bf16) ? 2e-2 : 1e-5;
        expect_cpu_matches_interp(
            g, {seeded(s, t, which == 3 ? 0.8 : lo, which == 3 ? 1.2 : hi, 13)}, tol, tol);
      }
}

TEST(Fusion, ElementwiseChainsWithBroadcastsAndViewsMatchTheInterpreter) {
  GLIA_REQUIRE_CPU_BACKEND();
  Graph g = trace(
      [](const std::vector<Expr>& in) {
        Expr a = in[0], b = in[1], c = in[2];
        Expr t = transpose(a, {1, 0});                                   // [13][1030]
        Expr y = tanh(t) * b + sigmoid(reverse(t, {1})) - exp(c) / 3.0;  // b: [1030], c: [13][1]
        Expr z = select(greater(y, 0.1), y, slice(t, {0, 0}, {13, 1030}) * 2.0);
        Expr i = cast(iota(Shape{13, 1030}, 1, i32), f32);
        return std::vector<Expr>{z + i * 1e-3, cast(greater(z, 0.0), i32) + 1, sum(z, {0})};
      },
      {{f32, {1030, 13}}, {f32, {1030}}, {f32, {13, 1}}}, "chains");
  auto exe = fused_kernels(g, {seeded({1030, 13}, f32, -2, 2, 14), seeded({1030}, f32, -1, 1, 15),
                               seeded({13, 1}, f32, -1, 1, 16)});
  EXPECT_LE(kernel_count(*exe), 3u);
}

TEST(Fusion, DropoutMaskIsBitExact) {
  GLIA_REQUIRE_CPU_BACKEND();
  for (std::int64_t n : {1, 7, 512, 1001, 70001}) {
    Graph g = trace(
        [&](const std::vector<Expr>& in) {
          Expr keep = less(random::uniform(in[1], in[0].shape()), 0.5);
          return std::vector<Expr>{select(keep, in[0] * 2.0, zeros(in[0].shape())),
                                   random::bits(in[1], Shape{n})};
        },
        {{f32, {n}}, {u32, {2}}}, "dropout");
    std::vector<Tensor> in{seeded({n}, f32, -1, 1, 17), random::key(42 + std::uint64_t(n))};
    auto cpu = compile_graph(g, "cpu");
    auto got = cpu->run(in);
    auto want = interpret(g, in);
    EXPECT_TRUE(allclose(got[0], want[0], 0, 0)) << n;
    EXPECT_TRUE(allclose(got[1], want[1], 0, 0)) << n;
    EXPECT_TRUE(reference_ops(*cpu).empty()) << cpu->describe();
  }
}

TEST(Fusion, SoftmaxOfAMillionMatchesTheInterpreter) {
  GLIA_REQUIRE_CPU_BACKEND();
  Graph g = trace1(
      {f32, {1000000}}, [](const Expr& x) { return softmax(x); }, "softmax_1m");
  Tensor x = seeded({1000000}, f32, -10, 10, 18);
  for (int threads : {1, 2}) {
    CompileOptions o;
    o.cpu.threads = threads;
    auto cpu = compile_graph(g, "cpu", o);
    EXPECT_TRUE(allclose(cpu->run(std::vector<Tensor>{x})[0],
                         interpret(g, std::vector<Tensor>{x})[0], 1e-5, 1e-12))
        << threads;
  }
}

TEST(Fusion, DonatedParameterIsUpdatedInPlace) {
  GLIA_REQUIRE_CPU_BACKEND();
  Graph g =
      trace([](const std::vector<Expr>& in) { return std::vector<Expr>{in[0] - 0.1 * in[1]}; },
            {{f32, {1000}}, {f32, {1000}}}, "sgd");
  auto exe = compile_graph(g, "cpu");
  Tensor grad = seeded({1000}, f32, -1, 1, 19);
  Tensor p = seeded({1000}, f32, -1, 1, 20);
  Tensor expected = interpret(g, std::vector<Tensor>{p, grad})[0];
  const void* storage = p.raw_data();
  std::vector<Tensor> args{std::move(p), grad};
  Tensor out = exe->run_donated(std::move(args))[0];
  EXPECT_EQ(out.raw_data(), storage);
  EXPECT_TRUE(allclose(out, expected, 1e-6, 1e-7));

  Tensor held = seeded({1000}, f32, -1, 1, 21);
  Tensor before = seeded({1000}, f32, -1, 1, 21);  // the same values, its own storage
  Tensor out2 = exe->run_donated({held, grad})[0];
  EXPECT_NE(out2.raw_data(), held.raw_data());
  EXPECT_TRUE(allclose(held, before, 0, 0));
  EXPECT_TRUE(allclose(out2, interpret(g, std::vector<Tensor>{before, grad})[0], 1e-6, 1e-7));
}

}  // namespace
}  // namespace glia::testing
