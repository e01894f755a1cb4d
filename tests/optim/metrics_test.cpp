// The metrics against hand-computed values: categorical (one-hot and sparse) and binary
// accuracy, the confusion counts and the ratios built on them (including empty
// denominators), mean absolute error, top-k with ties, the running aggregates, and errors.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "expect_error.hpp"
#include "glia/optim/metrics.hpp"
#include "optim/losses_test_util.hpp"

namespace glia {
namespace {

using ::glia::testing::expect_error;

using metrics::MetricOptions;
using testing::f64;
using ::testing::HasSubstr;

using MetricFn = std::function<Expr(const Expr&, const Expr&)>;

double value(const MetricFn& m, const Tensor& y_true, const Tensor& y_pred) {
  Tensor t = testing::run([&](auto& in) { return m(in[0], in[1]); }, {y_true, y_pred});
  EXPECT_EQ(t.shape(), Shape{}) << "a metric is a scalar";
  return t.item<double>();
}

// Scores [4, 3]; argmax per row: 2, 0, 1, 1.
const Tensor kScores =
    f64({0.1, 0.2, 0.7, 0.5, 0.3, 0.2, 0.3, 0.4, 0.3, 0.0, 0.9, 0.1}, Shape{4, 3});

TEST(Metrics, CategoricalAccuracyOneHotAndSparse) {
  // True classes 2, 1, 1, 0: rows 0 and 2 right.
  Tensor sparse = Tensor::from<std::int64_t>({2, 1, 1, 0}, Shape{4});
  Tensor onehot = testing::one_hot_rows(sparse, 3);
  EXPECT_DOUBLE_EQ(value([](auto& y, auto& p) { return metrics::accuracy(y, p); }, onehot, kScores),
                   0.5);
  EXPECT_DOUBLE_EQ(value([](auto& y, auto& p) { return metrics::accuracy(y, p, {.sparse = true}); },
                         sparse, kScores),
                   0.5);
  // Integer sparse labels of another width and f32 scores: f32 result.
  Tensor t =
      testing::run([](auto& in) { return metrics::accuracy(in[0], in[1], {.sparse = true}); },
                   {Tensor::from<std::int32_t>({2, 0, 1, 1}, Shape{4}), kScores.cast(DType::f32)});
  EXPECT_EQ(t.dtype(), DType::f32);
  EXPECT_DOUBLE_EQ(t.item<double>(), 1.0);
}

TEST(Metrics, BinaryAccuracyThresholds) {
  Tensor p = f64({0.9, 0.4, 0.6, 0.1, 0.5}, Shape{5});
  Tensor y = f64({1, 0, 0, 0, 1}, Shape{5});
  auto acc = [](double threshold) {
    return
        [threshold](auto& a, auto& b) { return metrics::accuracy(a, b, {.threshold = threshold}); };
  };
  // > 0.5: predictions 1 0 1 0 0 -> right, right, wrong, right, wrong.
  EXPECT_DOUBLE_EQ(value(acc(0.5), y, p), 0.6);
  // > 0.45: 1 0 1 0 1 -> 4 of 5.
  EXPECT_DOUBLE_EQ(value(acc(0.45), y, p), 0.8);
  // [batch, 1] predictions, with [batch] or [batch, 1] labels.
  Tensor p1 = f64({0.9, 0.4, 0.6, 0.1, 0.5}, Shape{5, 1});
  EXPECT_DOUBLE_EQ(value(acc(0.5), y, p1), 0.6);
  EXPECT_DOUBLE_EQ(value(acc(0.5), f64({1, 0, 0, 0, 1}, Shape{5, 1}), p1), 0.6);
  EXPECT_DOUBLE_EQ(value(acc(0.5), Tensor::from<std::int64_t>({1, 0, 0, 0, 1}, Shape{5}), p1), 0.6);
}

TEST(Metrics, ConfusionCountsAndRatios) {
  // pred (> 0.5):  1 1 0 0 1 0 1 0
  // true:          1 0 1 0 1 0 0 0   -> tp 2, fp 2, fn 1, tn 3
  Tensor p = f64({0.8, 0.7, 0.2, 0.4, 0.51, 0.5, 0.9, 0.0}, Shape{8});
  Tensor y = f64({1, 0, 1, 0, 1, 0, 0, 0}, Shape{8});
  auto m = [](auto fn) { return [fn](auto& a, auto& b) { return fn(a, b, MetricOptions{}); }; };
  EXPECT_DOUBLE_EQ(value(m(metrics::true_positives), y, p), 2);
  EXPECT_DOUBLE_EQ(value(m(metrics::false_positives), y, p), 2);
  EXPECT_DOUBLE_EQ(value(m(metrics::false_negatives), y, p), 1);
  EXPECT_DOUBLE_EQ(value(m(metrics::true_negatives), y, p), 3);
  EXPECT_DOUBLE_EQ(value(m(metrics::precision), y, p), 2.0 / 4);
  EXPECT_DOUBLE_EQ(value(m(metrics::recall), y, p), 2.0 / 3);
  EXPECT_DOUBLE_EQ(value(m(metrics::sensitivity), y, p), 2.0 / 3);
  EXPECT_DOUBLE_EQ(value(m(metrics::specificity), y, p), 3.0 / 5);
  // Threshold 0.75: pred 1 0 0 0 0 0 1 0 -> tp 1, fp 1, fn 2, tn 4.
  auto at = [](auto fn) {
    return [fn](auto& a, auto& b) { return fn(a, b, MetricOptions{.threshold = 0.75}); };
  };
  EXPECT_DOUBLE_EQ(value(at(metrics::precision), y, p), 0.5);
  EXPECT_DOUBLE_EQ(value(at(metrics::recall), y, p), 1.0 / 3);
  EXPECT_DOUBLE_EQ(value(at(metrics::specificity), y, p), 4.0 / 5);
  // Multi-label [batch, labels] counts every entry; integer labels work too.
  Tensor y2 = Tensor::from<std::int64_t>({1, 0, 1, 1}, Shape{2, 2});
  Tensor p2 = f64({0.9, 0.9, 0.1, 0.6}, Shape{2, 2});
  EXPECT_DOUBLE_EQ(value(m(metrics::true_positives), y2, p2), 2);
  EXPECT_DOUBLE_EQ(value(m(metrics::false_positives), y2, p2), 1);
  EXPECT_DOUBLE_EQ(value(m(metrics::false_negatives), y2, p2), 1);
}

TEST(Metrics, EmptyDenominatorsGiveZero) {
  // Nothing predicted positive, no positive labels: precision, recall and specificity
  // have 0 / 0 somewhere, which is 0, never NaN.
  Tensor p = f64({0.1, 0.2}, Shape{2}), y = f64({0, 0}, Shape{2});
  auto m = [](auto fn) { return [fn](auto& a, auto& b) { return fn(a, b, MetricOptions{}); }; };
  EXPECT_EQ(value(m(metrics::precision), y, p), 0.0);
  EXPECT_EQ(value(m(metrics::recall), y, p), 0.0);
  EXPECT_EQ(value(m(metrics::specificity), y, p), 1.0);
  EXPECT_EQ(value(m(metrics::specificity), f64({1, 1}, Shape{2}), p), 0.0);
}

TEST(Metrics, MeanAbsoluteError) {
  Tensor y = f64({1, 2, 3, 4}, Shape{2, 2}), p = f64({1.5, 2, 1, 5}, Shape{2, 2});
  EXPECT_DOUBLE_EQ(value([](auto& a, auto& b) { return metrics::mean_absolute_error(a, b); }, y, p),
                   (0.5 + 0 + 2 + 1) / 4);
}

TEST(Metrics, TopKWithTies) {
  // Rows of kScores by rank: [2, 1, 0], [0, 1, 2], [1, 0, 2] (0.3 ties: lower index first),
  // [1, 2, 0].
  Tensor sparse = Tensor::from<std::int64_t>({0, 2, 2, 0}, Shape{4});
  auto top = [](std::int64_t k, bool s) {
    return [k, s](auto& a, auto& b) {
      return metrics::top_k_categorical_accuracy(a, b, {.k = k, .sparse = s});
    };
  };
  // True-class ranks: 2, 2, 2, 2 (the tie puts class 2 of row 2 behind class 0).
  EXPECT_DOUBLE_EQ(value(top(1, true), sparse, kScores), 0.0);
  EXPECT_DOUBLE_EQ(value(top(2, true), sparse, kScores), 0.0);
  EXPECT_DOUBLE_EQ(value(top(3, true), sparse, kScores), 1.0);
  Tensor other = Tensor::from<std::int64_t>({2, 1, 0, 2}, Shape{4});  // ranks 0, 1, 1, 1
  EXPECT_DOUBLE_EQ(value(top(1, true), other, kScores), 0.25);
  EXPECT_DOUBLE_EQ(value(top(2, true), other, kScores), 1.0);
  EXPECT_DOUBLE_EQ(value(top(1, false), testing::one_hot_rows(other, 3), kScores), 0.25);
  // k = 1 is the categorical accuracy.
  EXPECT_DOUBLE_EQ(value(top(1, false), testing::one_hot_rows(other, 3), kScores),
                   value([](auto& a, auto& b) { return metrics::accuracy(a, b); },
                         testing::one_hot_rows(other, 3), kScores));
}

TEST(Metrics, RunningAggregates) {
  using metrics::Aggregate;
  // Batches 0.5, 0.7, 0.3: running averages 0.5, 0.6, 0.5; running sums 0.5, 1.2, 1.5.
  double avg = 0, total = 0;
  std::vector<double> batches = {0.5, 0.7, 0.3}, avgs, sums;
  for (std::size_t i = 0; i < batches.size(); ++i) {
    avg = metrics::aggregate(Aggregate::running_average, avg, batches[i],
                             static_cast<std::int64_t>(i + 1));
    total = metrics::aggregate(Aggregate::running_sum, total, batches[i],
                               static_cast<std::int64_t>(i + 1));
    avgs.push_back(avg);
    sums.push_back(total);
  }
  EXPECT_NEAR(avgs[0], 0.5, 1e-15);
  EXPECT_NEAR(avgs[1], 0.6, 1e-15);
  EXPECT_NEAR(avgs[2], 0.5, 1e-15);
  EXPECT_NEAR(sums[2], 1.5, 1e-15);
  EXPECT_THAT([] { metrics::aggregate(Aggregate::running_average, 0, 1, 0); },
              ::testing::ThrowsMessage<Error>(HasSubstr("count is the number of batches")));
}

void trace_metric(const std::vector<TensorType>& types, const MetricFn& m) {
  trace([&](const std::vector<Expr>& in) { return std::vector<Expr>{m(in[0], in[1])}; }, types);
}

TEST(Metrics, Errors) {
  const TensorType scores{DType::f32, {4, 3}};
  expect_error(
      [&] {
        trace_metric({{DType::f32, {4}}, scores},
                     [](auto& a, auto& b) { return metrics::accuracy(a, b, {.sparse = true}); });
      },
      "accuracy: sparse labels must have an integer dtype, got f32[4]");
  expect_error(
      [&] {
        trace_metric({{DType::i64, {4}}, scores},
                     [](auto& a, auto& b) { return metrics::accuracy(a, b); });
      },
      "need sparse = true");
  expect_error(
      [&] {
        trace_metric({{DType::f32, {3}}, {DType::f32, {4}}},
                     [](auto& a, auto& b) { return metrics::accuracy(a, b); });
      },
      "accuracy: y_true f32[3] does not fit binary predictions y_pred f32[4]");
  for (std::int64_t k : {0, 4}) {
    expect_error(
        [&] {
          trace_metric({{DType::i64, {4}}, scores}, [k](auto& a, auto& b) {
            return metrics::top_k_categorical_accuracy(a, b, {.k = k, .sparse = true});
          });
        },
        "top_k_categorical_accuracy: k must be in [1, 3] for y_pred f32[4][3], got " +
            std::to_string(k));
  }
  expect_error(
      [&] {
        trace_metric({{DType::f32, {4}}, scores}, [](auto& a, auto& b) {
          return metrics::top_k_categorical_accuracy(a, b, {.k = 2, .sparse = true});
        });
      },
      "top_k_categorical_accuracy: sparse labels must have an integer dtype");
  expect_error(
      [&] {
        trace_metric({{DType::f32, {4}}, {DType::f32, {4, 1}}},
                     [](auto& a, auto& b) { return metrics::precision(a, b); });
      },
      "precision: y_true f32[4] and y_pred f32[4][1] must have the same shape");
  expect_error(
      [&] {
        trace_metric({{DType::f32, {4}}, {DType::f32, {5}}},
                     [](auto& a, auto& b) { return metrics::mean_absolute_error(a, b); });
      },
      "mean_absolute_error: y_true f32[4] and y_pred f32[5] must have the same shape");
}

}  // namespace
}  // namespace glia
