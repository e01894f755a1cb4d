// plan_memory: liveness over kernel positions, the peak of live bytes and arena offsets,
// hand-computed. A graph's reference program runs one kernel per computed node in graph
// order; its outputs live in buffers of their own, outside the arena.
#include "glia/compiler/memory_plan.hpp"
#include "core/test_util.hpp"

namespace {

using glia::Op;

// Every pair of arena values alive at the same kernel must own disjoint bytes.
void expect_no_overlap(const glia::Graph& g, const glia::MemoryPlan& plan) {
  // The kernel position of each computed node (one kernel per node, in graph order).
  std::vector<std::int64_t> born(static_cast<std::size_t>(g.size()), -1);
  std::int64_t position = 0;
  for (glia::ValueId v = 0; v < g.size(); ++v)
    if (g.node(v).op != Op::parameter && g.node(v).op != Op::constant)
      born[static_cast<std::size_t>(v)] = position++;
  for (glia::ValueId a = 0; a < g.size(); ++a) {
    for (glia::ValueId b = a + 1; b < g.size(); ++b) {
      auto ia = static_cast<std::size_t>(a), ib = static_cast<std::size_t>(b);
      if (plan.offsets[ia] < 0 || plan.offsets[ib] < 0) continue;
      std::int64_t bytes_a = g.type(a).shape.numel() * glia::dtype_size(g.type(a).dtype);
      std::int64_t bytes_b = g.type(b).shape.numel() * glia::dtype_size(g.type(b).dtype);
      bool alive_together = born[ib] <= plan.last_use[ia];  // b is born after a
      bool disjoint = plan.offsets[ia] + bytes_a <= plan.offsets[ib] ||
                      plan.offsets[ib] + bytes_b <= plan.offsets[ia];
      if (alive_together && bytes_a > 0 && bytes_b > 0) {
        EXPECT_TRUE(disjoint) << "%" << a << " and %" << b;
      }
    }
  }
}

}  // namespace

TEST(MemoryPlan, ChainReusesSlots) {
  glia::Graph g("chain");
  auto x = g.add_parameter({glia::f32, {4}});
  auto a = g.add(Op::exp, {x});
  auto b = g.add(Op::exp, {a});
  g.set_outputs({g.add(Op::exp, {b})});
  // Kernels 0, 1, 2 make a, b and the output. a and b (16 B each) meet at kernel 1: peak
  // 32, b in the next 64-byte slot; the output has a buffer of its own.
  auto plan = glia::plan_memory(g);
  EXPECT_EQ(plan.value_count, 2);
  EXPECT_EQ(plan.peak_live_bytes, 32);
  EXPECT_EQ(plan.arena_bytes, 128);
  EXPECT_EQ(plan.offsets, (std::vector<std::int64_t>{-1, 0, 64, -1}));
  // x is read by kernel 0, a by 1, b by 2; the output lives to the end (3 kernels).
  EXPECT_EQ(plan.last_use, (std::vector<std::int64_t>{0, 1, 2, 3}));
  auto tight = glia::plan_memory(g, 16);
  EXPECT_EQ(tight.offsets, (std::vector<std::int64_t>{-1, 0, 16, -1}));
  EXPECT_EQ(tight.arena_bytes, 32);
  expect_no_overlap(g, plan);
  EXPECT_EQ(plan.to_string(), "2 values, peak 32 B live, arena 128 B");
}

TEST(MemoryPlan, MixedSizes) {
  glia::Graph g("mixed");
  auto x = g.add_parameter({glia::f32, {4}});
  auto a = g.add(Op::cast, {x}, glia::CastAttrs{glia::f64});  // 32 B
  auto b = g.add(Op::exp, {a});                               // 32 B
  auto c = g.add(Op::cast, {b}, glia::CastAttrs{glia::f32});  // 16 B
  g.set_outputs({g.add(Op::add, {c, x})});                    // 16 B, the output
  // Arena values alive at each kernel: a=32; a+b=64; b+c=48; c=16.
  auto plan = glia::plan_memory(g);
  EXPECT_EQ(plan.peak_live_bytes, 64);
  // Largest first: a@0, b@64 (meets a), c@0 (meets only b).
  EXPECT_EQ(plan.offsets, (std::vector<std::int64_t>{-1, 0, 64, 0, -1}));
  EXPECT_EQ(plan.arena_bytes, 128);
  expect_no_overlap(g, plan);
}

TEST(MemoryPlan, ConstantsParametersAndUnusedValues) {
  glia::Graph g("leaves");
  auto x = g.add_parameter({glia::i32, {2}});
  auto k = g.add(Op::constant, {}, glia::ConstantAttrs{glia::Tensor::from<std::int32_t>({1, 2})});
  g.add(Op::neg, {x});  // never read: dies where it is born
  auto s = g.add(Op::add, {x, k});
  g.set_outputs({s, x});
  auto plan = glia::plan_memory(g);
  EXPECT_EQ(plan.value_count, 1);  // neg's result; add's is an output
  EXPECT_EQ(plan.peak_live_bytes, 8);
  EXPECT_EQ(plan.offsets, (std::vector<std::int64_t>{-1, -1, 0, -1}));
  EXPECT_EQ(plan.last_use[2], 0);  // nobody reads it: it dies in the kernel that makes it
  EXPECT_EQ(plan.last_use[1], 1);  // the constant, read by add (kernel 1)
  EXPECT_EQ(plan.last_use[0], 2);  // x is returned: held to the end
  EXPECT_EQ(plan.arena_bytes, 64);
}

TEST(MemoryPlan, ZeroSizeValuesTakeNoSpace) {
  glia::Graph g("empty");
  auto x = g.add_parameter({glia::f32, {0, 3}});
  g.set_outputs({g.add(Op::exp, {g.add(Op::exp, {x})})});
  auto plan = glia::plan_memory(g);
  EXPECT_EQ(plan.value_count, 1);
  EXPECT_EQ(plan.peak_live_bytes, 0);
  EXPECT_EQ(plan.arena_bytes, 0);
}

TEST(MemoryPlan, RejectsBadAlignment) {
  glia::Graph g("g");
  g.set_outputs({g.add_parameter({glia::f32, {1}})});
  EXPECT_GLIA_ERROR(glia::plan_memory(g, 0), "alignment must be positive");
}
