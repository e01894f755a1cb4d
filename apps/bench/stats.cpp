// The timing loop and statistics of stats.hpp.
#include "stats.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <numeric>

namespace glia::bench {

namespace {
using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}
}  // namespace

Measurement measure(const std::function<void()>& call, const MeasureOptions& options) {
  Measurement m;
  // Warm-up: caches, lazy compilation, allocator pools, thread pools.
  std::int64_t warm_calls = 0;
  Clock::time_point warm_start = Clock::now();
  do {
    call();
    ++warm_calls;
  } while (seconds_since(warm_start) < options.warmup_seconds);
  double estimate = seconds_since(warm_start) / static_cast<double>(warm_calls);
  if (estimate < options.min_sample_seconds)
    m.calls_per_sample =
        static_cast<std::int64_t>(std::ceil(options.min_sample_seconds / std::max(estimate, 1e-9)));

  if (options.before_samples) options.before_samples();
  Clock::time_point start = Clock::now();
  while (static_cast<std::int64_t>(m.per_call.size()) < options.min_samples ||
         seconds_since(start) < options.time_seconds) {
    Clock::time_point t0 = Clock::now();
    for (std::int64_t i = 0; i < m.calls_per_sample; ++i) call();
    double dt = std::chrono::duration<double>(Clock::now() - t0).count();
    m.per_call.push_back(dt / static_cast<double>(m.calls_per_sample));
    m.calls += m.calls_per_sample;
  }
  return m;
}

double percentile(std::span<const double> sorted, double p) {
  if (sorted.empty()) return 0;
  double rank = std::clamp(p, 0.0, 100.0) / 100.0 * static_cast<double>(sorted.size() - 1);
  auto lo = static_cast<std::size_t>(std::floor(rank));
  std::size_t hi = std::min(lo + 1, sorted.size() - 1);
  double frac = rank - static_cast<double>(lo);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * frac;
}

Summary summarize(std::span<const double> values) {
  Summary s;
  if (values.empty()) return s;
  std::vector<double> sorted(values.begin(), values.end());
  std::sort(sorted.begin(), sorted.end());
  auto n = static_cast<double>(sorted.size());
  s.samples = static_cast<std::int64_t>(sorted.size());
  s.average = std::accumulate(sorted.begin(), sorted.end(), 0.0) / n;
  double squares = 0;
  for (double v : sorted) squares += (v - s.average) * (v - s.average);
  s.deviation = sorted.size() > 1 ? std::sqrt(squares / (n - 1)) : 0;
  s.deviation_percent = s.average > 0 ? 100 * s.deviation / s.average : 0;
  s.median = percentile(sorted, 50);
  s.p99 = percentile(sorted, 99);
  s.min = sorted.front();
  s.max = sorted.back();
  s.ips = s.average > 0 ? 1 / s.average : 0;
  return s;
}

namespace {
std::string format_scaled(double value, const char* const* units, int unit_count, double step,
                          int start) {
  int u = start;
  double v = value;
  while (v != 0 && std::fabs(v) < 1 && u > 0) v *= step, --u;
  while (std::fabs(v) >= step && u + 1 < unit_count) v /= step, ++u;
  char buf[48];
  int digits = std::fabs(v) >= 100 ? 1 : std::fabs(v) >= 10 ? 2 : 3;
  std::snprintf(buf, sizeof buf, "%.*f%s", digits, v, units[u]);
  return buf;
}
}  // namespace

std::string format_seconds(double seconds) {
  static const char* const kUnits[] = {" ns", " µs", " ms", " s"};
  if (seconds >= 1) {
    char buf[48];
    std::snprintf(buf, sizeof buf, "%.3f s", seconds);
    return buf;
  }
  return format_scaled(seconds * 1e9, kUnits, 4, 1000, 0);
}

std::string format_count(double count) {
  static const char* const kUnits[] = {"", " K", " M", " G"};
  return format_scaled(count, kUnits, 4, 1000, 0);
}

}  // namespace glia::bench
