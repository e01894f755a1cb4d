// Host-side aggregation of a metric over the batches of an epoch (the loop's running
// average and running sum).
#include <cmath>

#include "glia/optim/metrics.hpp"

namespace glia::metrics {

double aggregate(Aggregate how, double previous, double batch_value, std::int64_t count) {
  check(count >= 1, "metrics::aggregate: count is the number of batches so far (>= 1), got ",
        count);
  if (how == Aggregate::running_sum) return previous + batch_value;
  // The incremental mean: exact for the first batch whatever `previous` holds.
  return previous + (batch_value - previous) / static_cast<double>(count);
}

}  // namespace glia::metrics
