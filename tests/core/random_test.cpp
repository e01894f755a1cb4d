// Tests of the counter-based random numbers: the Threefry-2x32 block function against
// the Random123 known-answer vectors, random_bits' counter scheme, keys, and the
// distributions of glia::random (loose statistical bounds, fixed keys: deterministic).
#include <cmath>

#include "core/test_util.hpp"
#include "glia/core/threefry.hpp"

namespace glia {
namespace {

using namespace glia::testing;

// A function of a traced key.
using KeyFn = std::function<Expr(const Expr&)>;

// Traces fn on a key parameter of type key_type (a valid key by default).
Graph trace_key(const KeyFn& fn, const TensorType& key_type = {u32, {2}}) {
  return trace_expr([&](const std::vector<Expr>& in) { return fn(in[0]); }, {key_type});
}

// Traces fn for a u32[2] key parameter and runs it on `key`.
Tensor draw(const KeyFn& fn, const Tensor& key) {
  return interpret(trace_key(fn), std::vector<Tensor>{key})[0];
}

struct Stats {
  double mean = 0, stddev = 0, lo = 0, hi = 0;
};
Stats stats(const Tensor& t) {
  std::vector<double> v = t.to_vector<double>();
  Stats s{0, 0, v[0], v[0]};
  for (double x : v) s.mean += x, s.lo = std::min(s.lo, x), s.hi = std::max(s.hi, x);
  s.mean /= static_cast<double>(v.size());
  for (double x : v) s.stddev += (x - s.mean) * (x - s.mean);
  s.stddev = std::sqrt(s.stddev / static_cast<double>(v.size()));
  return s;
}

// Random123's kat_vectors for threefry2x32 with 20 rounds (counter words, key words,
// expected output words).
TEST(Threefry, KnownAnswers) {
  U32x2 zero = threefry2x32({0, 0}, {0, 0});
  EXPECT_EQ(zero.x0, 0x6b200159u);
  EXPECT_EQ(zero.x1, 0x99ba4efeu);
  U32x2 ones = threefry2x32({0xffffffffu, 0xffffffffu}, {0xffffffffu, 0xffffffffu});
  EXPECT_EQ(ones.x0, 0x1cb996fcu);
  EXPECT_EQ(ones.x1, 0xbb002be7u);
  U32x2 pi = threefry2x32({0x13198a2eu, 0x03707344u}, {0x243f6a88u, 0x85a308d3u});
  EXPECT_EQ(pi.x0, 0xc4923a9cu);
  EXPECT_EQ(pi.x1, 0x483df7a0u);
}

// The four-block form the compiled loops call (elementwise_math.h): block i of a call is
// the block of counter c + i q, split into its high and low words, also where c + i q
// crosses 2^32 and where q is past it.
TEST(Threefry, FourBlocksAtOnceAreTheBlocksOfTheirCounters) {
  const std::uint32_t k0 = 0x13198a2eu, k1 = 0x03707344u;
  for (std::uint64_t c : {std::uint64_t{0}, std::uint64_t{5}, std::uint64_t{0xfffffffeu},
                          std::uint64_t{0x1fffffffdull}}) {
    for (std::uint64_t q : {std::uint64_t{1}, std::uint64_t{3}, std::uint64_t{1} << 32}) {
      std::uint32_t w[4][2];
      glia_threefry2x32_words4(k0, k1, c, q, w[0], w[1], w[2], w[3]);
      for (std::uint64_t i = 0; i < 4; ++i) {
        const std::uint64_t n = c + i * q;
        const U32x2 r = threefry2x32({k0, k1}, {std::uint32_t(n >> 32), std::uint32_t(n)});
        EXPECT_EQ(w[i][0], r.x0) << c << " " << q << " " << i;
        EXPECT_EQ(w[i][1], r.x1) << c << " " << q << " " << i;
      }
    }
  }
}

TEST(RandomKey, HoldsTheSeedsWords) {
  Tensor k = random::key(0x0000000500000007ull);
  EXPECT_EQ(k.type(), (TensorType{u32, {2}}));
  EXPECT_EQ(k.to_vector<std::uint32_t>(), (std::vector<std::uint32_t>{5, 7}));
}

TEST(RandomBits, CounterScheme) {
  // Pair j of the output is threefry(key, (hi32(j), lo32(j))); an odd count drops a word.
  Tensor key = Tensor::from<std::uint32_t>({0x13198a2eu, 0x03707344u});
  Tensor b = draw([](const Expr& k) { return random::bits(k, {5}); }, key);
  EXPECT_EQ(b.type(), (TensorType{u32, {5}}));
  std::vector<std::uint32_t> expected;
  for (std::uint32_t j = 0; j < 3; ++j) {
    U32x2 r = threefry2x32({0x13198a2eu, 0x03707344u}, {0, j});
    expected.push_back(r.x0);
    expected.push_back(r.x1);
  }
  expected.pop_back();
  EXPECT_EQ(b.to_vector<std::uint32_t>(), expected);
  // The zero key's first pair is the first known answer.
  Tensor z = draw([](const Expr& k) { return random::bits(k, {2, 1}); }, random::key(0));
  EXPECT_EQ(z.to_vector<std::uint32_t>(), (std::vector<std::uint32_t>{0x6b200159u, 0x99ba4efeu}));
  Tensor empty = draw([](const Expr& k) { return random::bits(k, {3, 0}); }, random::key(0));
  EXPECT_EQ(empty.shape(), (Shape{3, 0}));
}

TEST(RandomBits, SameKeySameBitsDifferentKeysDiffer) {
  auto bits = [](std::uint64_t seed) {
    return draw([](const Expr& k) { return random::bits(k, {64}); }, random::key(seed));
  };
  EXPECT_TRUE(equal(bits(42), bits(42)));
  EXPECT_FALSE(equal(bits(42), bits(43)));
  // Keys as constants of a trace draw the same stream as keys given as inputs.
  Tensor constant_key =
      run_expr([](auto&) { return random::bits(Expr(random::key(42)), {64}); }, {});
  EXPECT_TRUE(equal(constant_key, bits(42)));
}

TEST(RandomSplit, KeysDifferFromEachOtherAndTheParent) {
  Tensor keys = draw([](const Expr& k) { return random::split(k, 3); }, random::key(7));
  EXPECT_EQ(keys.type(), (TensorType{u32, {3, 2}}));
  auto v = keys.to_vector<std::uint32_t>();
  std::vector<std::pair<std::uint32_t, std::uint32_t>> all{{0, 7}};
  for (int i = 0; i < 3; ++i) all.emplace_back(v[2 * i], v[2 * i + 1]);
  for (std::size_t i = 0; i < all.size(); ++i)
    for (std::size_t j = i + 1; j < all.size(); ++j) EXPECT_NE(all[i], all[j]) << i << " " << j;
}

TEST(RandomFoldIn, DeterministicAndDistinct) {
  auto fold = [](std::uint64_t seed, std::uint32_t data) {
    return draw([=](const Expr& k) { return random::fold_in(k, data); }, random::key(seed))
        .to_vector<std::uint32_t>();
  };
  EXPECT_EQ(fold(1, 5), fold(1, 5));
  EXPECT_NE(fold(1, 0), fold(1, 1));
  EXPECT_NE(fold(1, 0), random::key(1).to_vector<std::uint32_t>());
  // Neighbouring seeds and data do not collide (key(1) + 1 vs key(2) + 0).
  EXPECT_NE(fold(1, 1), fold(2, 0));
}

TEST(RandomUniform, RangeAndMoments) {
  Tensor u = draw([](const Expr& k) { return random::uniform(k, {100, 100}); }, random::key(1));
  EXPECT_EQ(u.type(), (TensorType{f32, {100, 100}}));
  Stats s = stats(u);
  EXPECT_GE(s.lo, 0.0);
  EXPECT_LT(s.hi, 1.0);
  EXPECT_NEAR(s.mean, 0.5, 0.02);
  EXPECT_NEAR(s.stddev, std::sqrt(1.0 / 12), 0.02);
  Tensor w = draw([](const Expr& k) { return random::uniform(k, {10000}, -3, 5); }, random::key(2));
  Stats t = stats(w);
  EXPECT_GE(t.lo, -3.0);
  EXPECT_LT(t.hi, 5.0);
  EXPECT_NEAR(t.mean, 1.0, 0.15);
}

TEST(RandomUniform, HalfAndDoublePaths) {
  for (DType d : {f16, bf16, f64}) {
    Tensor u =
        draw([=](const Expr& k) { return random::uniform(k, {10000}, 0, 1, d); }, random::key(3));
    EXPECT_EQ(u.dtype(), d);
    Stats s = stats(u);
    EXPECT_GE(s.lo, 0.0) << d;
    EXPECT_LT(s.hi, 1.0) << d;  // near 1, f16/bf16 round up to 1 unless clamped
    EXPECT_NEAR(s.mean, 0.5, 0.02) << d;
  }
  // f64 draws 32 bits: some values are not multiples of 2^-24.
  Tensor u =
      draw([](const Expr& k) { return random::uniform(k, {100}, 0, 1, f64); }, random::key(3));
  int fine = 0;
  for (double x : u.to_vector<double>()) fine += std::ldexp(x, 24) != std::floor(std::ldexp(x, 24));
  EXPECT_GT(fine, 50);
}

TEST(RandomUniform, NeverYieldsMaxWhereRoundingWould) {
  // f32 spacing at 1e8 is 8: [1e8, 1e8 + 16) holds only 1e8 and 1e8 + 8.
  Tensor u =
      draw([](const Expr& k) { return random::uniform(k, {1000}, 1e8, 1e8 + 16); }, random::key(4));
  int high = 0;
  for (double x : u.to_vector<double>()) {
    EXPECT_TRUE(x == 1e8 || x == 1e8 + 8) << x;
    high += x == 1e8 + 8;
  }
  EXPECT_GT(high, 0);
  // f16 spacing at 0.5 is 2^-11: [0.5, 0.5 + 2^-10) holds only 0.5 and 0.5 + 2^-11.
  Tensor h = draw([](const Expr& k) { return random::uniform(k, {1000}, 0.5, 0.5 + 0x1p-10, f16); },
                  random::key(5));
  for (double x : h.to_vector<double>()) EXPECT_TRUE(x == 0.5 || x == 0.5 + 0x1p-11) << x;
}

TEST(RandomNormal, Moments) {
  Tensor z = draw([](const Expr& k) { return random::normal(k, {10000}); }, random::key(6));
  EXPECT_EQ(z.type(), (TensorType{f32, {10000}}));
  Stats s = stats(z);
  EXPECT_NEAR(s.mean, 0.0, 0.05);
  EXPECT_NEAR(s.stddev, 1.0, 0.05);
  for (DType d : {f64, f16}) {
    Tensor y =
        draw([=](const Expr& k) { return random::normal(k, {10000}, 2, 3, d); }, random::key(7));
    EXPECT_EQ(y.dtype(), d);
    Stats t = stats(y);
    EXPECT_TRUE(std::isfinite(t.lo) && std::isfinite(t.hi)) << d;
    EXPECT_NEAR(t.mean, 2.0, 0.15) << d;
    EXPECT_NEAR(t.stddev, 3.0, 0.15) << d;
  }
}

TEST(RandomBernoulli, RateAndBroadcastP) {
  Tensor b = draw([](const Expr& k) { return random::bernoulli(k, 0.3, {10000}); }, random::key(8));
  EXPECT_EQ(b.type(), (TensorType{boolean, {10000}}));
  EXPECT_NEAR(stats(b).mean, 0.3, 0.02);
  // p per column: never, always, and a half.
  Tensor c = draw(
      [](const Expr& k) {
        return random::bernoulli(k, Expr(Tensor::from<float>({0, 1, 0.5})), {2000, 3});
      },
      random::key(9));
  std::vector<double> v = c.to_vector<double>();
  int ones[3] = {0, 0, 0};
  for (std::size_t i = 0; i < v.size(); ++i) ones[i % 3] += v[i] != 0;
  EXPECT_EQ(ones[0], 0);
  EXPECT_EQ(ones[1], 2000);
  EXPECT_NEAR(ones[2], 1000, 100);
}

TEST(RandomErrors, BadKeysAndArguments) {
  auto uniform = [](const Expr& k) { return random::uniform(k, {3}); };
  EXPECT_GLIA_ERROR(trace_key(uniform, {u32, {3}}), "random::uniform: the key must be u32[2]");
  EXPECT_GLIA_ERROR(trace_key([](const Expr& k) { return random::bits(k, {3}); }, {i32, {2}}),
                    "random::bits: the key must be u32[2] (see glia::random::key), got i32[2]");
  EXPECT_GLIA_ERROR(trace_key([](const Expr& k) { return random::split(k, 0); }),
                    "parts must be >= 1");
  EXPECT_GLIA_ERROR(trace_key([](const Expr& k) { return random::uniform(k, {3}, 1, 1); }),
                    "expected finite min < max");
  EXPECT_GLIA_ERROR(trace_key([](const Expr& k) { return random::uniform(k, {3}, 0, 1, i32); }),
                    "expected a floating-point dtype");
  EXPECT_GLIA_ERROR(
      trace_key([](const Expr& k) { return random::uniform(k, {3}, 1.0001, 1.0002, f16); }),
      "no f16 value lies in");
  EXPECT_GLIA_ERROR(trace_key([](const Expr& k) { return random::normal(k, {3}, 0, -1); }),
                    "stddev >= 0");
  EXPECT_GLIA_ERROR(trace_key([](const Expr& k) { return random::bernoulli(k, 1.5, {3}); }),
                    "p must lie in [0, 1]");
  EXPECT_GLIA_ERROR(
      trace_key([](const Expr& k) { return random::bernoulli(k, Expr(Tensor::zeros({4})), {3}); }),
      "cannot be broadcast");
  EXPECT_GLIA_ERROR(trace_key([](const Expr& k) {
                      return random::bernoulli(k, Expr(Tensor::zeros({2, 1})), {3});
                    }),
                    "does not broadcast to [3]");
  // The op itself checks its key too.
  Graph g("raw");
  ValueId k = g.add_parameter({f32, {2}});
  EXPECT_GLIA_ERROR(g.add(Op::random_bits, {k}, RandomBitsAttrs{Shape{3}}),
                    "random_bits: the key must be u32[2], got f32[2]");
}

}  // namespace
}  // namespace glia
