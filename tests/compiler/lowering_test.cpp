// The backend-neutral lowering on its own, through targets written here: which specs it
// offers and in what order it falls back when a target declines, the specs' values
// (matmul strides, epilogues, fused sweeps, direct splits), the schedule, and the
// placement (arena, outputs, donors). No backend is needed.
#include <cmath>
#include <functional>

#include "compiler/cpu_test_util.hpp"
#include "glia/autograd/grad.hpp"

namespace glia::testing {
namespace {

using Step = EpilogueSpec::Step;

// A target that accepts what `accept` says and declares every fallback.
class TestTarget final : public LoweringTarget {
 public:
  explicit TestTarget(std::function<bool(const Kernel&)> accept) : accept_(std::move(accept)) {}
  std::string_view name() const override { return "test"; }
  bool accepts(const Graph&, const Kernel& k) const override {
    offered.push_back(k.kind());
    return accept_(k);
  }
  std::string fallback_reason(const Graph&, ValueId) const override { return "test target"; }
  bool stores_costly_values() const override { return stores_costly; }
  mutable std::vector<std::string> offered;
  bool stores_costly = true;

 private:
  std::function<bool(const Kernel&)> accept_;
};

bool all(const Kernel&) { return true; }

// relu(x . w + b): x [4, 3], w [3, 5], b [5].
Graph dense() {
  return trace(
      [](const std::vector<Expr>& in) {
        return std::vector<Expr>{relu(dot(in[0], in[1]) + broadcast(in[2], {4, 5}, {1}))};
      },
      {{f32, {4, 3}}, {f32, {3, 5}}, {f32, {5}}}, "dense");
}

TEST(Lowering, MatmulWithItsEpilogue) {
  Graph g = dense();
  Program p = lower(g, TestTarget(all));
  ASSERT_EQ(p.kernels.size(), 1u) << p.describe();
  const auto& mm = std::get<MatmulSpec>(p.kernels[0].spec);
  EXPECT_EQ(mm.lhs, 0);
  EXPECT_EQ(mm.rhs, 1);
  EXPECT_EQ((std::vector<std::int64_t>{mm.m, mm.k, mm.n}), (std::vector<std::int64_t>{4, 3, 5}));
  EXPECT_EQ(mm.lhs_strides, (std::vector<std::int64_t>{3, 1}));
  EXPECT_EQ(mm.rhs_strides, (std::vector<std::int64_t>{5, 1}));
  EXPECT_EQ(mm.out_strides, (std::vector<std::int64_t>{5, 1}));
  EXPECT_EQ(mm.epilogue.steps, (std::vector<Step>{Step::add, Step::relu}));
  ASSERT_EQ(mm.epilogue.operands.size(), 1u);
  EXPECT_EQ(mm.epilogue.operands[0].value, 2);  // b itself: its broadcast is covered
  EXPECT_EQ(mm.epilogue.operands[0].strides, (std::vector<std::int64_t>{0, 1}));
  // The kernel covers dot, broadcast, add, the zero splat's broadcast and max, and writes
  // the graph's output.
  EXPECT_EQ(p.kernels[0].outputs, std::vector<ValueId>{g.outputs()[0]});
  EXPECT_EQ(p.placement[std::size_t(g.outputs()[0])].kind, Placement::Kind::output);
  EXPECT_EQ(p.memory.arena_bytes, 0);
}

TEST(Lowering, ADeclinedEpilogueFallsBackStepByStep) {
  Graph g = dense();
  // No epilogues: the matmul alone, then the bias add and relu as one fused group.
  TestTarget plain([](const Kernel& k) {
    const auto* mm = std::get_if<MatmulSpec>(&k.spec);
    return mm == nullptr || mm->epilogue.empty();
  });
  Program p = lower(g, plain);
  EXPECT_EQ(plain.offered, (std::vector<std::string>{"matmul", "matmul", "fused"}));
  ASSERT_EQ(p.kernels.size(), 2u) << p.describe();
  EXPECT_TRUE(std::holds_alternative<MatmulSpec>(p.kernels[0].spec));
  EXPECT_TRUE(std::holds_alternative<FusedSpec>(p.kernels[1].spec));
  // The product passes through the arena: [4, 5] f32 = 80 B in one 128-byte slot.
  ValueId product = p.kernels[0].outputs[0];
  EXPECT_EQ(p.placement[std::size_t(product)].kind, Placement::Kind::arena);
  EXPECT_EQ(p.memory.arena_bytes, 128);
  EXPECT_EQ(p.memory.last_use[std::size_t(product)], 1);
  // Nothing accepted: one reference kernel per node, each with the target's reason.
  Program none = lower(g, TestTarget([](const Kernel&) { return false; }));
  for (const Kernel& k : none.kernels) {
    const auto* r = std::get_if<ReferenceSpec>(&k.spec);
    ASSERT_NE(r, nullptr) << none.describe();
    EXPECT_EQ(r->reason, "test target");
  }
  std::size_t computed = 0;  // every node but the parameters and the relu's zero constant
  for (const Node& n : g.nodes()) computed += n.op != Op::parameter && n.op != Op::constant;
  EXPECT_EQ(none.kernels.size(), computed);
  EXPECT_EQ(computed, 5u);  // dot, broadcast, add, broadcast of zero, max
}

TEST(Lowering, SoftmaxSweepsAndExtents) {
  Graph g = trace([](const std::vector<Expr>& in) { return std::vector<Expr>{softmax(in[0], 0)}; },
                  {{f32, {6, 4}}}, "softmax_columns");
  Program p = lower(optimize(g), TestTarget(all));
  ASSERT_EQ(p.kernels.size(), 1u) << p.describe();
  const auto& f = std::get<FusedSpec>(p.kernels[0].spec);
  ASSERT_EQ(f.sweeps.size(), 4u);  // max | exp, sum | reciprocal | multiply
  // Over axis 0: the reduced extent is the outer one.
  const auto& max = f.sweeps[0].reductions.at(0);
  EXPECT_EQ(max.op, Op::reduce_max);
  ASSERT_EQ(max.extents.size(), 2u);
  EXPECT_TRUE(max.extents[0].reduced);
  EXPECT_EQ(max.extents[0].size, 6);
  EXPECT_FALSE(max.extents[1].reduced);
  EXPECT_EQ(max.extents[1].size, 4);
  EXPECT_EQ(max.numel, 4);
  // Each sweep defines its registers in order and stores last.
  for (const auto& sweep : f.sweeps) {
    int defined = 0;
    bool stored = false;
    for (const auto& in : sweep.code) {
      if (in.dst >= 0) {
        EXPECT_EQ(in.dst, defined++);
      }
      if (in.code == FusedSpec::Code::store)
        stored = true;
      else
        EXPECT_FALSE(stored) << "an instruction after a store";
    }
    EXPECT_EQ(sweep.registers, defined);
  }
  // The two reductions, the reciprocals and the exponentials are kept for the later
  // sweeps: temporaries of this kernel alone; the multiplication's sweep loads the
  // exponentials, it computes none.
  EXPECT_EQ(p.kernels[0].temporaries.size(), 4u);
  for (ValueId t : p.kernels[0].temporaries) {
    EXPECT_EQ(p.placement[std::size_t(t)].kind, Placement::Kind::arena);
    EXPECT_EQ(p.memory.last_use[std::size_t(t)], 0);
  }
  auto exps = [](const FusedSpec::Sweep& s) {
    int n = 0;
    for (const auto& in : s.code) n += in.code == FusedSpec::Code::unary && in.op == Op::exp;
    return n;
  };
  EXPECT_EQ(exps(f.sweeps[1]), 1);
  EXPECT_EQ(exps(f.sweeps[2]), 0);
  EXPECT_EQ(exps(f.sweeps[3]), 0);
  // A target that recomputes them (cuda) keeps the reductions and the reciprocals alone.
  TestTarget recompute(all);
  recompute.stores_costly = false;
  Program q = lower(optimize(g), recompute);
  const auto& h = std::get<FusedSpec>(q.kernels.at(0).spec);
  EXPECT_EQ(q.kernels[0].temporaries.size(), 3u);
  ASSERT_EQ(h.sweeps.size(), 4u);
  EXPECT_EQ(exps(h.sweeps[3]), 1);
}

// Adam's shape: a scalar computed in the group (a bias correction) broadcast over the
// moments. The scalar's sweep (domain 1) runs before the moments' (domain 64) in the
// same level, so the moment and the update that reads it share one sweep.
TEST(Lowering, AScalarBroadcastFromASmallerSweepIsReadInTheSameLevel) {
  Graph g = trace(
      [](const std::vector<Expr>& in) {
        Expr c = 1.0 - pow(0.9, cast(in[2] + 1, DType::f32));
        Expr m = in[1] * 0.9 + in[0] * 0.1;
        return std::vector<Expr>{m, m / broadcast_to(c, {64})};
      },
      {{f32, {64}}, {f32, {64}}, {DType::i64, {}}}, "bias_corrected");
  Program p = lower(optimize(g), TestTarget(all));
  ASSERT_EQ(p.kernels.size(), 1u) << p.describe();
  const auto& f = std::get<FusedSpec>(p.kernels[0].spec);
  ASSERT_EQ(f.sweeps.size(), 2u) << p.describe();
  EXPECT_EQ(f.sweeps[0].numel, 1);
  EXPECT_EQ(f.sweeps[1].numel, 64);
  int stores = 0;
  for (const auto& in : f.sweeps[1].code) stores += in.code == FusedSpec::Code::store;
  EXPECT_EQ(stores, 2);  // the moment and the update
  std::vector<Tensor> in = {seeded({64}, f32, -1, 1, 3), seeded({64}, f32, -1, 1, 4),
                            Tensor::from<std::int64_t>({4}, Shape{})};
  auto cpu = compile_graph(g, default_backend())->run(in);
  auto ref = interpret(g, in);
  const float c = 1.f - std::pow(0.9f, 5.f);
  for (int i = 0; i < 64; ++i) {
    const float m = in[1].data<float>()[i] * 0.9f + in[0].data<float>()[i] * 0.1f;
    EXPECT_NEAR(ref[1].data<float>()[i], m / c, 1e-5f) << i;
    EXPECT_NEAR(cpu[1].data<float>()[i], m / c, 1e-5f) << i;
  }
}

TEST(Lowering, DonorsAreInputsOfTheOutputsTypeThatDieInTime) {
  // p2 = p - 0.1 * g, element for element: p and g die in the kernel that writes p2.
  Graph g = trace(
      [](const std::vector<Expr>& in) {
        return std::vector<Expr>{in[0] - 0.1 * in[1], sum(in[2])};
      },
      {{f32, {8}}, {f32, {8}}, {f32, {3}}}, "sgd");
  Program p = lower(g, TestTarget(all));
  const Placement& updated = p.placement[std::size_t(g.outputs()[0])];
  EXPECT_EQ(updated.kind, Placement::Kind::output);
  EXPECT_GE(updated.donor, 0);
  EXPECT_LE(updated.donor, 1);
  // The sum's input is f32[3], not its type: no donor.
  EXPECT_EQ(p.placement[std::size_t(g.outputs()[1])].donor, -1);
  // A value read after the update cannot give its storage to it.
  Graph later = trace(
      [](const std::vector<Expr>& in) {
        Expr u = exp(in[0]);
        return std::vector<Expr>{u, dot(in[0], in[1])};
      },
      {{f32, {2, 2}}, {f32, {2, 2}}}, "read_later");
  Program q = lower(later, TestTarget(all));
  EXPECT_EQ(q.placement[std::size_t(later.outputs()[0])].donor, -1) << q.describe();
}

TEST(Lowering, ConvolutionGradientsAreTheTwoBackwardPasses) {
  Graph g = trace(
      [](const std::vector<Expr>& in) {
        Expr loss =
            sum(conv(in[0], in[1], {.padding_low = {1, 1}, .padding_high = {1, 1}}) * in[2]);
        return gradients(loss, {in[0], in[1]});
      },
      {{f32, {2, 3, 5, 5}}, {f32, {4, 3, 3, 3}}, {f32, {2, 4, 5, 5}}}, "conv_grads");
  Program p = lower(optimize(g), TestTarget(all));
  auto convs = p.specs<ConvSpec>();
  ASSERT_EQ(convs.size(), 2u) << p.describe();
  const ConvSpec* data = convs[0]->pass == ConvSpec::Pass::backward_data ? convs[0] : convs[1];
  const ConvSpec* weights =
      convs[0]->pass == ConvSpec::Pass::backward_weights ? convs[0] : convs[1];
  ASSERT_EQ(data->pass, ConvSpec::Pass::backward_data);
  ASSERT_EQ(weights->pass, ConvSpec::Pass::backward_weights);
  // The input gradient reads the kernel (its reverse and transposes covered) as [O, I, K...].
  EXPECT_EQ(data->weights.value, 1);
  EXPECT_EQ(data->weights.dims, (std::vector<std::int64_t>{4, 3, 3, 3}));
  EXPECT_EQ(data->src.dims, (std::vector<std::int64_t>{2, 3, 5, 5}));
  EXPECT_EQ(data->padding_low, (std::vector<std::int64_t>{1, 1}));
  // The kernel gradient writes the [O, I, K...] kernel's shape.
  EXPECT_EQ(weights->weights.dims, (std::vector<std::int64_t>{4, 3, 3, 3}));
  EXPECT_EQ(weights->src.value, 0);
  EXPECT_TRUE(p.specs<ReferenceSpec>().empty()) << p.describe();
}

TEST(Lowering, DirectKernelsSplitAroundTheirAxis) {
  Graph g = trace(
      [](const std::vector<Expr>& in) {
        return std::vector<Expr>{take(in[0], in[1], 1), argmax(in[0], 2)};
      },
      {{f32, {2, 7, 3}}, {i32, {4}}}, "direct");
  Program p = lower(g, TestTarget(all));
  auto direct = p.specs<DirectSpec>();
  ASSERT_EQ(direct.size(), 2u);
  EXPECT_EQ(direct[0]->op, Op::gather);
  const AxisSplit& gather = direct[0]->split;
  EXPECT_EQ((std::vector<std::int64_t>{gather.outer, gather.size, gather.inner}),
            (std::vector<std::int64_t>{2, 7, 3}));
  EXPECT_EQ(direct[1]->op, Op::argmax);
  const AxisSplit& arg = direct[1]->split;
  EXPECT_EQ((std::vector<std::int64_t>{arg.outer, arg.size, arg.inner}),
            (std::vector<std::int64_t>{14, 3, 1}));
}

TEST(Lowering, KernelsRunAfterWhatTheyRead) {
  Graph g = trace(
      [](const std::vector<Expr>& in) {
        Expr a = exp(in[0]);
        Expr m = dot(a, in[1]);
        return std::vector<Expr>{tanh(m) + a, sum(m)};
      },
      {{f32, {3, 3}}, {f32, {3, 3}}}, "order");
  Program p = lower(g, TestTarget(all));
  std::vector<int> position(std::size_t(g.size()), -1);
  for (std::size_t k = 0; k < p.kernels.size(); ++k)
    for (ValueId out : p.kernels[k].outputs) position[std::size_t(out)] = int(k);
  for (std::size_t k = 0; k < p.kernels.size(); ++k)
    for (ValueId in : p.kernels[k].inputs)
      if (position[std::size_t(in)] >= 0) {
        EXPECT_LT(position[std::size_t(in)], int(k));
      }
}

}  // namespace
}  // namespace glia::testing
