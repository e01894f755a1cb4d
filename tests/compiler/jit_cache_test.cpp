// jit's cache on the hit path: arguments that differ from a seen signature only in a map
// key, a container size, an order, a dtype or a shape miss and equal ones hit; a hit
// allocates nothing of its own; calls from several threads, and jitted calls made while
// another function is being traced, each get their own arguments.
#include <atomic>
#include <cstdlib>
#include <new>
#include <thread>

#include "core/test_util.hpp"
#include "glia/compiler.hpp"

namespace {

// Heap allocations made by this thread while counting is on (every operator new in the
// suite, plain and nothrow, goes through here; only this file's tests turn counting on).
thread_local bool t_counting = false;
thread_local std::int64_t t_heap_allocations = 0;

}  // namespace

// Not inlined, so that the compiler never sees free() meet a pointer from operator new.
[[gnu::noinline]] void* operator new(std::size_t n) {
  if (t_counting) ++t_heap_allocations;
  if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
  throw std::bad_alloc();
}
[[gnu::noinline]] void operator delete(void* p) noexcept { std::free(p); }
[[gnu::noinline]] void operator delete(void* p, std::size_t) noexcept { std::free(p); }
// The nothrow forms as well (std::stable_sort's buffer comes from new(nothrow) and goes
// back through the sized delete above): a sanitizer's or the library's new(nothrow) would
// otherwise meet this file's free().
[[gnu::noinline]] void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  if (t_counting) ++t_heap_allocations;
  return std::malloc(n == 0 ? 1 : n);
}
[[gnu::noinline]] void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }

namespace {

using glia::Expr;
using glia::Tensor;
using glia::testing::f32s;

// Every leaf summed, weighted by its place in flattening order (1, 2, ...): a leaf read
// from another place changes the result.
struct WeightedSum {
  template <class Tree>
  Expr operator()(const Tree& tree) const {
    std::vector<Expr> leaves = glia::tree_leaves<Expr>(tree);
    Expr total = glia::scalar(0.0);
    for (std::size_t i = 0; i < leaves.size(); ++i)
      total = total + glia::sum(glia::cast(leaves[i], glia::f32)) * static_cast<double>(i + 1);
    return total;
  }
};

template <class Tree>
double weighted_sum(const Tree& tree) {
  double total = 0;
  std::vector<Tensor> leaves = glia::tree_leaves<Tensor>(tree);
  for (std::size_t i = 0; i < leaves.size(); ++i)
    for (double v : leaves[i].to_vector<double>()) total += v * static_cast<double>(i + 1);
  return total;
}

using Pair = std::tuple<Tensor, Tensor>;
using Tree = std::map<std::string, std::vector<Pair>>;

Tensor f64s(const std::vector<double>& v) { return Tensor::from<double>(v); }

}  // namespace

TEST(JitCache, AnyDifferenceInStructureOrTypesMissesAndEqualOnesHit) {
  int traces = 0;
  auto g = glia::jit([&traces](const auto& tree) {
    ++traces;
    return WeightedSum{}(tree);
  });
  // Leaves in order: a0 (f32[2], f32[1]), b0 (f32[1], f32[3]), b1 (f32[1], f32[1]).
  Tree base{{"a", {Pair{f32s({1, 2}), f32s({3})}}},
            {"b", {Pair{f32s({4}), f32s({5, 6, 7})}, Pair{f32s({8}), f32s({9})}}}};
  std::vector<Tree> others;
  others.push_back({{"a", base["a"]}, {"c", base["b"]}});  // a key
  Tree longer = base;                                      // a size
  longer["b"].push_back(Pair{f32s({1}), f32s({1})});
  others.push_back(longer);
  // The same leaves in the same order, the vectors' sizes moved: [a0, b0], [b1].
  others.push_back({{"a", {base["a"][0], base["b"][0]}}, {"b", {base["b"][1]}}});
  Tree swapped = base;  // an order: a0's two leaves change places
  swapped["a"][0] = Pair{f32s({3}), f32s({1, 2})};
  others.push_back(swapped);
  Tree dtype = base;  // a dtype
  std::get<1>(dtype["b"][0]) = f64s({5, 6, 7});
  others.push_back(dtype);
  Tree shape = base;  // a shape with the same element count
  std::get<1>(shape["b"][0]) = f32s({5, 6, 7}, {1, 3});
  others.push_back(shape);

  EXPECT_DOUBLE_EQ(g(base).item<double>(), weighted_sum(base));
  for (const Tree& other : others) EXPECT_DOUBLE_EQ(g(other).item<double>(), weighted_sum(other));
  auto stats = g.cache_stats();
  EXPECT_EQ(stats.misses, 7);
  EXPECT_EQ(stats.hits, 0);
  EXPECT_EQ(stats.entries, 7);
  EXPECT_EQ(traces, 7);

  // Equal signatures with other values hit, each its own entry.
  Tree fresh{{"a", {Pair{f32s({-1, 0}), f32s({2})}}},
             {"b", {Pair{f32s({1}), f32s({0, 0, 3})}, Pair{f32s({4}), f32s({-5})}}}};
  EXPECT_DOUBLE_EQ(g(fresh).item<double>(), weighted_sum(fresh));
  for (const Tree& other : others) EXPECT_DOUBLE_EQ(g(other).item<double>(), weighted_sum(other));
  stats = g.cache_stats();
  EXPECT_EQ(stats.misses, 7);
  EXPECT_EQ(stats.hits, 7);
  EXPECT_EQ(traces, 7);
}

TEST(JitCache, KeysAndRanksAreNotConfusedAcrossBoundaries) {
  auto f = glia::jit([](const auto& tree) { return WeightedSum{}(tree); });
  using Map = std::map<std::string, Tensor>;
  Map ab_c{{"ab", f32s({1})}, {"c", f32s({2})}}, a_bc{{"a", f32s({1})}, {"bc", f32s({2})}};
  EXPECT_DOUBLE_EQ(f(ab_c).item<double>(), 5);
  EXPECT_DOUBLE_EQ(f(a_bc).item<double>(), 5);
  EXPECT_EQ(f.cache_stats().misses, 2);
  // f32[2][3], f32[4] against f32[2], f32[3][4]: the same dims in a row, other ranks.
  std::vector<Tensor> first{glia::testing::counting({2, 3}), glia::testing::counting({4})};
  std::vector<Tensor> second{glia::testing::counting({2}), glia::testing::counting({3, 4})};
  EXPECT_DOUBLE_EQ(f(first).item<double>(), weighted_sum(first));
  EXPECT_DOUBLE_EQ(f(second).item<double>(), weighted_sum(second));
  EXPECT_DOUBLE_EQ(f(first).item<double>(), weighted_sum(first));
  EXPECT_EQ(f.cache_stats().misses, 4);
  EXPECT_EQ(f.cache_stats().hits, 1);
  EXPECT_EQ(f.signatures().size(), 4u);
}

TEST(JitCache, AHitAllocatesNoTensorStorageOfItsOwn) {
  using Params = std::map<std::string, Tensor>;
  auto f = glia::jit([](const std::map<std::string, Expr>& p, const Expr& x) {
    return std::tuple{p.at("w") * x + p.at("b"), x};
  });
  Params p{{"w", f32s({2, 3})}, {"b", f32s({1, -1})}};
  Tensor x = f32s({10, 20});
  f(p, x);
  auto entry = f.compiled(p, x);
  std::vector<Tensor> flat{p.at("b"), p.at("w"), x};  // flattening order: map keys sorted
  glia::AllocationStats start = glia::allocation_stats();
  for (int i = 0; i < 20; ++i) entry->executable->run(flat);
  glia::AllocationStats direct = glia::allocation_stats();
  for (int i = 0; i < 20; ++i) {
    auto [y, same] = f(p, x);
    ASSERT_EQ(y.to_vector<float>(), (std::vector<float>{21, 59}));
    ASSERT_TRUE(same.shares_storage_with(x));
  }
  glia::AllocationStats jitted = glia::allocation_stats();
  EXPECT_EQ(jitted.count - direct.count, direct.count - start.count);
  EXPECT_EQ(jitted.bytes - direct.bytes, direct.bytes - start.bytes);
  EXPECT_EQ(f.cache_stats().hits, 20);
}

TEST(JitCache, FindingASeenSignatureAllocatesNothing) {
  auto f = glia::jit([](const auto& tree) { return WeightedSum{}(tree); });
  Tree tree{{"layer_with_a_long_name", {Pair{f32s({1, 2}), f32s({3})}}},
            {"b", {Pair{f32s({4}, {1, 1}), f32s({5, 6, 7})}}}};
  f.compiled(tree);  // traces; the thread's buffers grow to this call's size
  f.compiled(tree);
  t_heap_allocations = 0;
  t_counting = true;
  for (int i = 0; i < 10; ++i) f.compiled(tree);
  t_counting = false;
  EXPECT_EQ(t_heap_allocations, 0);
  // The counting itself works: a miss allocates.
  t_counting = true;
  f.compiled(std::vector<Tensor>{f32s({1})});
  t_counting = false;
  EXPECT_GT(t_heap_allocations, 0);
}

TEST(JitCache, ThreadsShareOneCache) {
  using Params = std::map<std::string, Tensor>;
  auto f = glia::jit([](const std::map<std::string, Expr>& p, const Expr& x) {
    return p.at("w") * x + p.at("b");
  });
  constexpr int kThreads = 4, kCalls = 150;
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&f, &wrong, t] {
      for (int i = 0; i < kCalls; ++i) {
        std::size_t n = 1 + static_cast<std::size_t>((i + t) % 3);  // three signatures
        std::vector<double> w(n), b(n), x(n), want(n);
        for (std::size_t k = 0; k < n; ++k) {
          w[k] = t + 1;
          b[k] = i;
          x[k] = static_cast<double>(k);
          want[k] = w[k] * x[k] + b[k];
        }
        Tensor y = f(Params{{"w", f32s(w)}, {"b", f32s(b)}}, f32s(x));
        if (y.to_vector<double>() != want) ++wrong;
      }
    });
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(wrong.load(), 0);
  auto stats = f.cache_stats();
  EXPECT_EQ(stats.entries, 3);
  EXPECT_GE(stats.misses, 3);  // threads missing at once may each trace
  EXPECT_EQ(stats.hits + stats.misses, kThreads * kCalls);
}

TEST(JitCache, AJittedCallDuringATraceKeepsTheOuterArguments) {
  auto inner = glia::jit([](const std::vector<Expr>& xs) { return xs[0] * 10.0 + xs[1]; });
  int outer_traces = 0;
  auto outer =
      glia::jit([&inner, &outer_traces](const std::map<std::string, Expr>& p, const Expr& x) {
        ++outer_traces;
        // Run on Tensors while this function is traced: the result becomes a constant.
        Tensor c = inner(std::vector<Tensor>{f32s({1, 2}), f32s({0.5f, 0.5f})});
        return p.at("scale") * x + glia::constant(c);
      });
  std::map<std::string, Tensor> p{{"scale", f32s({2, 3})}};
  EXPECT_EQ(outer(p, f32s({100, 200})).to_vector<float>(), (std::vector<float>{210.5f, 620.5f}));
  EXPECT_EQ(outer(p, f32s({1, 1})).to_vector<float>(), (std::vector<float>{12.5f, 23.5f}));
  EXPECT_EQ(outer_traces, 1);
  EXPECT_EQ(outer.cache_stats().misses, 1);
  EXPECT_EQ(outer.cache_stats().hits, 1);
  EXPECT_EQ(inner.cache_stats().misses, 1);
  EXPECT_EQ(inner(std::vector<Tensor>{f32s({3, 4}), f32s({1, 1})}).to_vector<float>(),
            (std::vector<float>{31, 41}));
  EXPECT_EQ(inner.cache_stats().hits, 1);
}

TEST(JitCache, AnUndefinedLeafAfterHitsIsNamed) {
  auto f =
      glia::jit([](const std::map<std::string, Expr>& p, const Expr& x) { return p.at("w") + x; },
                {.name = "affine"});
  std::map<std::string, Tensor> p{{"w", f32s({1})}};
  f(p, f32s({1}));
  f(p, f32s({2}));
  p["w"] = Tensor();
  EXPECT_GLIA_ERROR(f(p, f32s({1})), "'affine': argument arg0.w is an undefined Tensor");
  EXPECT_EQ(f.cache_stats().hits, 1);
  EXPECT_EQ(f.cache_stats().misses, 1);
}
