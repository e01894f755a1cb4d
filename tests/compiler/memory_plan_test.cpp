// plan_memory: liveness, the peak of live bytes and arena offsets, hand-computed.
#include "glia/compiler/memory_plan.hpp"
#include "core/test_util.hpp"

namespace {

using glia::Op;

// Every pair of planned values alive at the same node must own disjoint bytes.
void expect_no_overlap(const glia::Graph& g, const glia::MemoryPlan& plan) {
  for (glia::ValueId a = 0; a < g.size(); ++a) {
    for (glia::ValueId b = a + 1; b < g.size(); ++b) {
      auto ia = static_cast<std::size_t>(a), ib = static_cast<std::size_t>(b);
      if (plan.offsets[ia] < 0 || plan.offsets[ib] < 0) continue;
      std::int64_t bytes_a = g.type(a).shape.numel() * glia::dtype_size(g.type(a).dtype);
      std::int64_t bytes_b = g.type(b).shape.numel() * glia::dtype_size(g.type(b).dtype);
      bool alive_together = b <= plan.last_use[ia];  // b is born after a
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
  // Two f32[4] (16 B) are alive at each exp: peak 32. a and c never meet, so they
  // share offset 0; b sits in the next 64-byte slot.
  auto plan = glia::plan_memory(g);
  EXPECT_EQ(plan.value_count, 3);
  EXPECT_EQ(plan.peak_live_bytes, 32);
  EXPECT_EQ(plan.arena_bytes, 128);
  EXPECT_EQ(plan.offsets, (std::vector<std::int64_t>{-1, 0, 64, 0}));
  EXPECT_EQ(plan.last_use, (std::vector<std::int64_t>{1, 2, 3, 4}));
  auto tight = glia::plan_memory(g, 16);
  EXPECT_EQ(tight.offsets, (std::vector<std::int64_t>{-1, 0, 16, 0}));
  EXPECT_EQ(tight.arena_bytes, 32);
  expect_no_overlap(g, plan);
  EXPECT_EQ(plan.to_string(), "3 values, peak 32 B live, arena 128 B");
}

TEST(MemoryPlan, MixedSizes) {
  glia::Graph g("mixed");
  auto x = g.add_parameter({glia::f32, {4}});
  auto a = g.add(Op::cast, {x}, glia::CastAttrs{glia::f64});  // 32 B
  auto b = g.add(Op::exp, {a});                               // 32 B
  auto c = g.add(Op::cast, {b}, glia::CastAttrs{glia::f32});  // 16 B
  g.set_outputs({g.add(Op::add, {c, x})});                    // 16 B
  // Live at each node: a=32; a+b=64; b+c=48; c+d=32.
  auto plan = glia::plan_memory(g);
  EXPECT_EQ(plan.peak_live_bytes, 64);
  // Largest first: a@0, b@64 (meets a), c@0 (meets only b), d@64 (meets only c).
  EXPECT_EQ(plan.offsets, (std::vector<std::int64_t>{-1, 0, 64, 0, 64}));
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
  EXPECT_EQ(plan.value_count, 2);
  EXPECT_EQ(plan.peak_live_bytes, 8);  // neg's 8 B are gone before add's are made
  EXPECT_EQ(plan.offsets, (std::vector<std::int64_t>{-1, -1, 0, 0}));
  EXPECT_EQ(plan.last_use[2], 2);
  EXPECT_EQ(plan.arena_bytes, 64);
}

TEST(MemoryPlan, ZeroSizeValuesTakeNoSpace) {
  glia::Graph g("empty");
  auto x = g.add_parameter({glia::f32, {0, 3}});
  g.set_outputs({g.add(Op::exp, {g.add(Op::exp, {x})})});
  auto plan = glia::plan_memory(g);
  EXPECT_EQ(plan.value_count, 2);
  EXPECT_EQ(plan.peak_live_bytes, 0);
  EXPECT_EQ(plan.arena_bytes, 0);
}

TEST(MemoryPlan, RejectsBadAlignment) {
  glia::Graph g("g");
  g.set_outputs({g.add_parameter({glia::f32, {1}})});
  EXPECT_GLIA_ERROR(glia::plan_memory(g, 0), "alignment must be positive");
}
