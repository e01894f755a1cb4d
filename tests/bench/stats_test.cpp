// The benchmark statistics of apps/bench/stats.hpp against hand-computed values, and the
// timing loop's bookkeeping (sample and call counts, never durations).
#include "stats.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace glia::bench {
namespace {

TEST(BenchStats, OddCount) {
  std::vector<double> v{5, 1, 4, 2, 3};
  Summary s = summarize(v);
  EXPECT_EQ(s.samples, 5);
  EXPECT_DOUBLE_EQ(s.average, 3);
  EXPECT_DOUBLE_EQ(s.ips, 1.0 / 3);
  // sum of squared deviations 4+1+0+1+4 = 10, over n-1 = 4
  EXPECT_DOUBLE_EQ(s.deviation, std::sqrt(2.5));
  EXPECT_DOUBLE_EQ(s.deviation_percent, 100 * std::sqrt(2.5) / 3);
  EXPECT_DOUBLE_EQ(s.median, 3);
  EXPECT_DOUBLE_EQ(s.p99, 4.96);  // rank 0.99 * 4 = 3.96: 4 + 0.96 * (5 - 4)
  EXPECT_DOUBLE_EQ(s.min, 1);
  EXPECT_DOUBLE_EQ(s.max, 5);
}

TEST(BenchStats, EvenCountMedianInterpolates) {
  std::vector<double> v{4, 1, 3, 2};
  Summary s = summarize(v);
  EXPECT_DOUBLE_EQ(s.median, 2.5);
  EXPECT_DOUBLE_EQ(s.average, 2.5);
  EXPECT_DOUBLE_EQ(s.deviation, std::sqrt(5.0 / 3));  // (2.25+0.25+0.25+2.25) / 3
  EXPECT_DOUBLE_EQ(s.p99, 3.97);                      // rank 2.97: 3 + 0.97 * (4 - 3)
}

TEST(BenchStats, SingleAndEmpty) {
  std::vector<double> one{2};
  Summary s = summarize(one);
  EXPECT_EQ(s.samples, 1);
  EXPECT_DOUBLE_EQ(s.deviation, 0);
  EXPECT_DOUBLE_EQ(s.median, 2);
  EXPECT_DOUBLE_EQ(s.p99, 2);
  Summary e = summarize(std::vector<double>{});
  EXPECT_EQ(e.samples, 0);
  EXPECT_DOUBLE_EQ(e.average, 0);
}

TEST(BenchStats, Percentile) {
  std::vector<double> v{10, 20, 30};
  EXPECT_DOUBLE_EQ(percentile(v, 0), 10);
  EXPECT_DOUBLE_EQ(percentile(v, 25), 15);  // rank 0.5
  EXPECT_DOUBLE_EQ(percentile(v, 50), 20);
  EXPECT_DOUBLE_EQ(percentile(v, 90), 28);  // rank 1.8
  EXPECT_DOUBLE_EQ(percentile(v, 100), 30);
}

TEST(BenchStats, Format) {
  EXPECT_EQ(format_seconds(1.5e-6), "1.500 µs");
  EXPECT_EQ(format_seconds(0.0123), "12.30 ms");
  EXPECT_EQ(format_seconds(4.2e-7), "420.0 ns");
  EXPECT_EQ(format_seconds(2.5), "2.500 s");
  EXPECT_EQ(format_count(1.24e6), "1.240 M");
  EXPECT_EQ(format_count(512), "512.0");
}

TEST(BenchMeasure, CountsCallsAndSamples) {
  int calls = 0;
  int calls_at_hook = -1;
  Measurement m = measure([&] { ++calls; }, {.warmup_seconds = 0,
                                             .time_seconds = 0,
                                             .min_samples = 4,
                                             .min_sample_seconds = 0,
                                             .before_samples = [&] { calls_at_hook = calls; }});
  EXPECT_EQ(calls_at_hook, 1);  // one warm-up call, then the hook
  ASSERT_EQ(m.per_call.size(), 4u);
  EXPECT_EQ(m.calls_per_sample, 1);
  EXPECT_EQ(m.calls, 4);
  EXPECT_EQ(calls, 5);
}

TEST(BenchMeasure, BatchesShortCalls) {
  // A call far shorter than 1 ms is batched: every sample then covers several calls.
  int calls = 0;
  Measurement m = measure(
      [&] { ++calls; },
      {.warmup_seconds = 0, .time_seconds = 0, .min_samples = 2, .min_sample_seconds = 1e-3});
  EXPECT_GT(m.calls_per_sample, 1);
  EXPECT_EQ(m.calls, 2 * m.calls_per_sample);
  EXPECT_EQ(calls, 1 + m.calls);
}

}  // namespace
}  // namespace glia::bench
