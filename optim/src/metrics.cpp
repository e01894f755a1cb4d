// The metrics (Axon's): accuracy, the binary confusion counts and the ratios built on
// them, mean absolute error and top-k accuracy, each a scalar for the batch in y_pred's
// float dtype (f32 for integer predictions); and the host-side running aggregates.
#include "glia/optim/metrics.hpp"

#include <string_view>

namespace glia::metrics {

namespace {

DType float_dtype(const Expr& y_pred) {
  return is_float(y_pred.dtype()) ? y_pred.dtype() : DType::f32;
}

void check_operands(std::string_view metric, const Expr& y_true, const Expr& y_pred) {
  check(y_true.defined() && y_pred.defined(), metric, ": y_true and y_pred must be defined Exprs");
  check(y_true.graph() == y_pred.graph(), metric, ": y_true and y_pred belong to different traces");
  check(y_pred.rank() >= 1, metric, ": y_pred ", y_pred.type(), " needs a batch axis (rank >= 1)");
}

void check_same_shape(std::string_view metric, const Expr& y_true, const Expr& y_pred) {
  check_operands(metric, y_true, y_pred);
  check(y_true.shape() == y_pred.shape(), metric, ": y_true ", y_true.type(), " and y_pred ",
        y_pred.type(), " must have the same shape");
}

// The fraction of true entries of a bool tensor.
Expr fraction(const Expr& hits, DType dtype) { return mean(cast(hits, dtype)); }
Expr count(const Expr& hits, DType dtype) { return sum(cast(hits, dtype)); }

// y_true's class per row: the sparse indices themselves, or the argmax of one-hot rows.
Expr true_classes(std::string_view metric, const Expr& y_true, const Expr& y_pred, bool sparse) {
  if (!sparse) {
    check(y_true.shape() == y_pred.shape(), metric, ": y_true ", y_true.type(), " and y_pred ",
          y_pred.type(), " must have the same shape (integer class indices need sparse = true)");
    return argmax(y_true, -1);
  }
  check(is_integer(y_true.dtype()), metric, ": sparse labels must have an integer dtype, got ",
        y_true.type());
  Shape rows(Ints(y_pred.shape().dims().begin(), y_pred.shape().dims().end() - 1));
  check(y_true.shape() == rows, metric, ": sparse y_true ", y_true.type(),
        " must hold one class index per row of y_pred ", y_pred.type(), " (shape ",
        rows.to_string(), ")");
  return cast(y_true, DType::i64);
}

// The binary predictions (y_pred > threshold) and positive labels (y_true == 1).
struct Binary {
  Expr predicted, positive;
  DType dtype;
};
Binary binary(std::string_view metric, const Expr& y_true, const Expr& y_pred,
              const MetricOptions& o) {
  check_same_shape(metric, y_true, y_pred);
  return {greater(y_pred, o.threshold), equal(y_true, 1), float_dtype(y_pred)};
}

// a / (a + b), 0 when both are 0 (no NaN when, say, nothing was predicted positive).
Expr ratio(const Expr& a, const Expr& b) {
  Expr total = a + b;
  return select(greater(total, 0.0), a / max(total, 1.0), 0.0);
}

}  // namespace

// Binary when y_pred is [batch] or [batch, 1]: y_pred > threshold compared with y_true
// (0/1, shaped like y_pred, or [batch] beside [batch, 1]). Categorical otherwise.
Expr impl::accuracy(const Expr& y_true, const Expr& y_pred, const MetricOptions& o) {
  constexpr std::string_view kName = "accuracy";
  check_operands(kName, y_true, y_pred);
  const DType ft = float_dtype(y_pred);
  const bool is_binary = y_pred.rank() == 1 || (y_pred.rank() == 2 && y_pred.dim(1) == 1);
  if (is_binary) {
    Expr truth = y_true;
    if (y_true.shape() != y_pred.shape() && y_true.shape().numel() == y_pred.shape().numel() &&
        y_true.rank() >= 1 && y_true.dim(0) == y_pred.dim(0) && y_true.rank() <= 2)
      truth = reshape(y_true, y_pred.shape().dims());
    check(truth.shape() == y_pred.shape(), kName, ": y_true ", y_true.type(),
          " does not fit binary predictions y_pred ", y_pred.type());
    Expr predicted = cast(greater(y_pred, o.threshold), ft);
    return fraction(equal(predicted, cast(truth, ft)), ft);
  }
  Expr truth = true_classes(kName, y_true, y_pred, o.sparse);
  return fraction(equal(argmax(y_pred, -1), truth), ft);
}

Expr impl::true_positives(const Expr& y_true, const Expr& y_pred, const MetricOptions& o) {
  Binary b = binary("true_positives", y_true, y_pred, o);
  return count(logical_and(b.predicted, b.positive), b.dtype);
}

Expr impl::true_negatives(const Expr& y_true, const Expr& y_pred, const MetricOptions& o) {
  Binary b = binary("true_negatives", y_true, y_pred, o);
  return count(logical_and(logical_not(b.predicted), logical_not(b.positive)), b.dtype);
}

Expr impl::false_positives(const Expr& y_true, const Expr& y_pred, const MetricOptions& o) {
  Binary b = binary("false_positives", y_true, y_pred, o);
  return count(logical_and(b.predicted, logical_not(b.positive)), b.dtype);
}

Expr impl::false_negatives(const Expr& y_true, const Expr& y_pred, const MetricOptions& o) {
  Binary b = binary("false_negatives", y_true, y_pred, o);
  return count(logical_and(logical_not(b.predicted), b.positive), b.dtype);
}

Expr impl::precision(const Expr& y_true, const Expr& y_pred, const MetricOptions& o) {
  check_same_shape("precision", y_true, y_pred);
  return ratio(true_positives(y_true, y_pred, o), false_positives(y_true, y_pred, o));
}

Expr impl::recall(const Expr& y_true, const Expr& y_pred, const MetricOptions& o) {
  check_same_shape("recall", y_true, y_pred);
  return ratio(true_positives(y_true, y_pred, o), false_negatives(y_true, y_pred, o));
}

Expr impl::sensitivity(const Expr& y_true, const Expr& y_pred, const MetricOptions& o) {
  check_same_shape("sensitivity", y_true, y_pred);
  return recall(y_true, y_pred, o);
}

Expr impl::specificity(const Expr& y_true, const Expr& y_pred, const MetricOptions& o) {
  check_same_shape("specificity", y_true, y_pred);
  return ratio(true_negatives(y_true, y_pred, o), false_positives(y_true, y_pred, o));
}

Expr mean_absolute_error(const Expr& y_true, const Expr& y_pred) {
  check_same_shape("mean_absolute_error", y_true, y_pred);
  const DType ft = float_dtype(y_pred);
  return mean(abs(cast(y_true, ft) - cast(y_pred, ft)));
}

// The true class is in the top k when fewer than k classes rank above it: those with a
// higher score, or an equal score and a lower index (ties go to the lower index, as in a
// stable descending sort).
Expr impl::top_k_categorical_accuracy(const Expr& y_true, const Expr& y_pred,
                                      const TopKOptions& o) {
  constexpr std::string_view kName = "top_k_categorical_accuracy";
  const std::int64_t k = o.k;
  const bool sparse = o.sparse;
  check_operands(kName, y_true, y_pred);
  check(y_pred.rank() >= 2, kName, ": y_pred ", y_pred.type(),
        " needs a batch and a class axis (rank >= 2)");
  const std::int64_t classes = y_pred.dim(-1);
  check(k >= 1 && k <= classes, kName, ": k must be in [1, ", classes, "] for y_pred ",
        y_pred.type(), ", got ", k);
  const DType ft = float_dtype(y_pred);
  Expr truth = expand_dims(true_classes(kName, y_true, y_pred, sparse), -1);  // [.., 1]
  Expr class_index = iota(y_pred.shape(), y_pred.rank() - 1);
  Expr is_true = equal(class_index, truth);
  // The true class's score, picked with select so an infinite score elsewhere adds no NaN.
  Expr true_score = sum(select(is_true, y_pred, 0), {-1}, true);
  Expr above = logical_or(greater(y_pred, true_score),
                          logical_and(equal(y_pred, true_score), less(class_index, truth)));
  Expr rank = sum(cast(above, DType::i64), {-1});
  return fraction(less(rank, k), ft);
}

double aggregate(Aggregate how, double previous, double batch_value, std::int64_t count) {
  check(count >= 1, "metrics::aggregate: count is the number of batches so far (>= 1), got ",
        count);
  if (how == Aggregate::running_sum) return previous + batch_value;
  return previous + (batch_value - previous) / static_cast<double>(count);
}

}  // namespace glia::metrics
