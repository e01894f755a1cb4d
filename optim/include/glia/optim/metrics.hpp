// Metrics (Axon's 11), written with Expr ops: each maps (y_true, y_pred) to a scalar
// for the batch. The loop aggregates them over an epoch with running_average (default)
// or running_sum. Each is usable directly as a MetricFn ({{"accuracy", metrics::accuracy}}),
// options fixed with `.with({...})` (pair_function.hpp).
#pragma once

#include "glia/core/expr.hpp"
#include "glia/optim/pair_function.hpp"

namespace glia::metrics {

struct MetricOptions {
  double threshold = 0.5;  // binary predictions: y_pred > threshold
  bool sparse = false;     // accuracy: y_true holds class indices
};
// Categorical (one-hot or sparse y_true, y_pred [batch, classes] with classes > 1:
// argmax) or binary (y_pred [batch] or [batch, 1]: threshold) accuracy.
namespace impl {
Expr accuracy(const Expr& y_true, const Expr& y_pred, const MetricOptions& o);
}
inline constexpr PairFunction<MetricOptions, &impl::accuracy> accuracy{};
namespace impl {
Expr precision(const Expr& y_true, const Expr& y_pred, const MetricOptions& o);
}
inline constexpr PairFunction<MetricOptions, &impl::precision> precision{};
namespace impl {
Expr recall(const Expr& y_true, const Expr& y_pred, const MetricOptions& o);
}
inline constexpr PairFunction<MetricOptions, &impl::recall> recall{};
namespace impl {
Expr true_positives(const Expr& y_true, const Expr& y_pred, const MetricOptions& o);
}
inline constexpr PairFunction<MetricOptions, &impl::true_positives> true_positives{};
namespace impl {
Expr true_negatives(const Expr& y_true, const Expr& y_pred, const MetricOptions& o);
}
inline constexpr PairFunction<MetricOptions, &impl::true_negatives> true_negatives{};
namespace impl {
Expr false_positives(const Expr& y_true, const Expr& y_pred, const MetricOptions& o);
}
inline constexpr PairFunction<MetricOptions, &impl::false_positives> false_positives{};
namespace impl {
Expr false_negatives(const Expr& y_true, const Expr& y_pred, const MetricOptions& o);
}
inline constexpr PairFunction<MetricOptions, &impl::false_negatives> false_negatives{};
namespace impl {
Expr sensitivity(const Expr& y_true, const Expr& y_pred, const MetricOptions& o);
}
inline constexpr PairFunction<MetricOptions, &impl::sensitivity> sensitivity{};
namespace impl {
Expr specificity(const Expr& y_true, const Expr& y_pred, const MetricOptions& o);
}
inline constexpr PairFunction<MetricOptions, &impl::specificity> specificity{};
Expr mean_absolute_error(const Expr& y_true, const Expr& y_pred);
struct TopKOptions {
  std::int64_t k = 5;
  bool sparse = false;  // y_true holds class indices
};
namespace impl {
Expr top_k_categorical_accuracy(const Expr& y_true, const Expr& y_pred, const TopKOptions& o);
}
inline constexpr PairFunction<TopKOptions, &impl::top_k_categorical_accuracy>
    top_k_categorical_accuracy{};

// Aggregation over the batches of an epoch (host side): the value after `count` batches.
enum class Aggregate { running_average, running_sum };
double aggregate(Aggregate how, double previous, double batch_value, std::int64_t count);

}  // namespace glia::metrics
