// Metrics (Axon's 11), written with Expr ops: each maps (y_true, y_pred) to a scalar
// for the batch. The loop aggregates them over an epoch with running_average (default)
// or running_sum.
#pragma once

#include "glia/core/expr.hpp"

namespace glia::metrics {

struct MetricOptions {
  double threshold = 0.5;  // binary predictions: y_pred > threshold
  bool sparse = false;     // accuracy: y_true holds class indices
};
// Categorical (one-hot or sparse y_true, y_pred [batch, classes] with classes > 1:
// argmax) or binary (y_pred [batch] or [batch, 1]: threshold) accuracy.
Expr accuracy(const Expr& y_true, const Expr& y_pred, const MetricOptions& o = {});
Expr precision(const Expr& y_true, const Expr& y_pred, const MetricOptions& o = {});
Expr recall(const Expr& y_true, const Expr& y_pred, const MetricOptions& o = {});
Expr true_positives(const Expr& y_true, const Expr& y_pred, const MetricOptions& o = {});
Expr true_negatives(const Expr& y_true, const Expr& y_pred, const MetricOptions& o = {});
Expr false_positives(const Expr& y_true, const Expr& y_pred, const MetricOptions& o = {});
Expr false_negatives(const Expr& y_true, const Expr& y_pred, const MetricOptions& o = {});
Expr sensitivity(const Expr& y_true, const Expr& y_pred, const MetricOptions& o = {});
Expr specificity(const Expr& y_true, const Expr& y_pred, const MetricOptions& o = {});
Expr mean_absolute_error(const Expr& y_true, const Expr& y_pred);
Expr top_k_categorical_accuracy(const Expr& y_true, const Expr& y_pred, std::int64_t k = 5,
                                bool sparse = false);

// Aggregation over the batches of an epoch (host side): the value after `count` batches.
enum class Aggregate { running_average, running_sum };
double aggregate(Aggregate how, double previous, double batch_value, std::int64_t count);

}  // namespace glia::metrics
