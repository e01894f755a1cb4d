// Benchmark statistics in the style of Elixir's Benchee: a timing loop (warm-up, then
// samples until the time budget is spent) and the summary of its per-call times. Shared by
// `glia bench` and the LibTorch peer, so both are measured by the same code.
//   glia::bench::Measurement m = glia::bench::measure([&] { f(x); }, {.time_seconds = 3});
//   glia::bench::Summary s = glia::bench::summarize(m.per_call);
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

namespace glia::bench {

struct MeasureOptions {
  double warmup_seconds = 1;     // at least one call is always made, to estimate its duration
  double time_seconds = 3;       // samples are taken until this is spent ...
  std::int64_t min_samples = 3;  // ... and at least this many were taken
  // Calls shorter than this are timed in batches, so that the clock's own cost (tens of
  // ns) stays negligible; a sample is then the batch's mean time per call.
  double min_sample_seconds = 1e-4;
  std::function<void()> before_samples;  // called after the warm-up (e.g. to read counters)
};

struct Measurement {
  std::vector<double> per_call;  // seconds per call, one entry per sample
  std::int64_t calls_per_sample = 1;
  std::int64_t calls = 0;  // measured calls: samples x calls_per_sample
};
Measurement measure(const std::function<void()>& call, const MeasureOptions& options);

struct Summary {
  std::int64_t samples = 0;
  double ips = 0;  // calls per second: 1 / average
  double average = 0;
  double deviation = 0;          // sample standard deviation (n - 1)
  double deviation_percent = 0;  // of the average
  double median = 0;
  double p99 = 0;
  double min = 0;
  double max = 0;
};
// glia::Error-free: an empty span gives an all-zero summary.
Summary summarize(std::span<const double> values);

// The p-th percentile (0 <= p <= 100) of sorted values by linear interpolation between
// closest ranks (numpy's default): rank p / 100 * (n - 1).
double percentile(std::span<const double> sorted, double p);

// "1.23 µs", "456.7 ms", "3.2 s"; "12.3 M" for counts.
std::string format_seconds(double seconds);
std::string format_count(double count);

}  // namespace glia::bench
