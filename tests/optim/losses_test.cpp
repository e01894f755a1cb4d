// The losses against PyTorch golden values (tests/optim/golden_losses, written by
// generate.py there) in f64 and f32, for the three reductions; categorical_hinge, log_cosh
// and cosine_similarity against closed forms written here.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "glia/optim/losses.hpp"
#include "glia/optim/metrics.hpp"
#include "glia/optim/step.hpp"
#include "optim/losses_test_util.hpp"

namespace glia {
namespace {

using losses::Reduction;
using testing::expect_close;
using testing::f64;
using testing::run;

const std::vector<std::pair<Reduction, std::string>> kReductions = {
    {Reduction::none, "none"}, {Reduction::mean, "mean"}, {Reduction::sum, "sum"}};

// loss(inputs, reduction) for the fixture's inputs, in the given order.
using LossCall = std::function<Expr(const std::vector<Expr>&, Reduction)>;

// The loss on the fixture inputs (floats cast to `dtype`) against output.<reduction>.
void check_golden(const std::string& case_name, const std::vector<Tensor>& inputs,
                  const LossCall& loss) {
  SCOPED_TRACE("golden case '" + case_name + "' (tests/optim/golden_losses/" + case_name + ".txt)");
  golden::Fixture f = testing::loss_fixture(case_name);
  for (DType dtype : {DType::f64, DType::f32}) {
    std::vector<Tensor> cast_inputs;
    for (const Tensor& t : inputs) cast_inputs.push_back(is_float(t.dtype()) ? t.cast(dtype) : t);
    const double tol = dtype == DType::f64 ? 1e-12 : 2e-6;
    for (const auto& [reduction, name] : kReductions) {
      Tensor got =
          run([&](const std::vector<Expr>& in) { return loss(in, reduction); }, cast_inputs);
      EXPECT_EQ(got.dtype(), dtype) << name;
      expect_close(got, golden::tensor(f, "output." + name), tol,
                   name + (dtype == DType::f64 ? " (f64)" : " (f32)"));
    }
  }
}

// A loss of (y_true, y_pred) on the fixture's input.y_true and input.y_pred.
template <class Options>
void check_pair(const std::string& case_name,
                const std::function<Expr(const Expr&, const Expr&, const Options&)>& loss,
                Options options = {}) {
  golden::Fixture f = testing::loss_fixture(case_name);
  check_golden(case_name, {golden::tensor(f, "input.y_true"), golden::tensor(f, "input.y_pred")},
               [&](const std::vector<Expr>& in, Reduction r) {
                 Options o = options;
                 o.reduction = r;
                 return loss(in[0], in[1], o);
               });
}

std::vector<double> weights_of(const golden::Fixture& f) {
  return golden::tensor(f, "input.class_weights").to_vector<double>();
}

// Losses and metrics are usable directly where a (y_true, y_pred) function is expected,
// and `.with` fixes their options: values computed by hand here.
TEST(LossesAsFunctions, UsableDirectlyAndWithOptions) {
  Tensor y = Tensor::from<double>({1, 2}), p = Tensor::from<double>({2, 4});  // errors 1, 2
  auto value = [&](const LossFn& f) {
    return run([&](const std::vector<Expr>& in) { return f(in[0], in[1]); }, {y, p}).item<double>();
  };
  EXPECT_DOUBLE_EQ(value(losses::mean_squared_error), (1.0 + 4.0) / 2);
  EXPECT_DOUBLE_EQ(value(losses::mean_absolute_error), (1.0 + 2.0) / 2);
  // Huber: 0.5 d^2 within delta, delta (|d| - delta / 2) beyond.
  EXPECT_DOUBLE_EQ(value(losses::huber), (0.5 + 1.5) / 2);
  EXPECT_DOUBLE_EQ(value(losses::huber.with({.delta = 0.5})), (0.375 + 0.875) / 2);
  EXPECT_DOUBLE_EQ(value(losses::mean_squared_error.with({.reduction = Reduction::sum})), 5.0);
  // Metrics: class 2 of 3 is true in both rows; its score ranks first, then second.
  Tensor labels = Tensor::from<float>({0, 0, 1, 0, 0, 1}, Shape{2, 3});
  Tensor scores = Tensor::from<float>({0.1f, 0.2f, 0.7f, 0.5f, 0.1f, 0.4f}, Shape{2, 3});
  auto metric = [&](const MetricFn& f) {
    return run([&](const std::vector<Expr>& in) { return f(in[0], in[1]); }, {labels, scores})
        .item<double>();
  };
  EXPECT_DOUBLE_EQ(metric(metrics::accuracy), 0.5);
  EXPECT_DOUBLE_EQ(metric(metrics::top_k_categorical_accuracy.with({.k = 2})), 1.0);
  EXPECT_DOUBLE_EQ(metric(metrics::top_k_categorical_accuracy.with({.k = 1})), 0.5);
}

TEST(LossesGolden, CategoricalCrossEntropyFromLogitsSparseAndOneHot) {
  for (std::string case_name : {"cce_logits", "cce_logits_weighted", "cce_logits_smoothing",
                                "cce_logits_weighted_smoothing"}) {
    golden::Fixture f = testing::loss_fixture(case_name);
    losses::CrossEntropyOptions o{.from_logits = true};
    if (f.count("input.class_weights")) o.class_weights = weights_of(f);
    if (case_name.find("smoothing") != std::string::npos) o.label_smoothing = 0.2;
    const Tensor& labels = golden::tensor(f, "input.labels");
    const Tensor& logits = golden::tensor(f, "input.y_pred");
    // Sparse labels and their one-hot rows give the same (PyTorch's) values.
    check_golden(case_name, {labels, logits}, [&](const std::vector<Expr>& in, Reduction r) {
      losses::CrossEntropyOptions s = o;
      s.sparse = true;
      s.reduction = r;
      return losses::categorical_cross_entropy(in[0], in[1], s);
    });
    check_golden(case_name, {testing::one_hot_rows(labels, logits.shape()[1]), logits},
                 [&](const std::vector<Expr>& in, Reduction r) {
                   losses::CrossEntropyOptions s = o;
                   s.reduction = r;
                   return losses::categorical_cross_entropy(in[0], in[1], s);
                 });
  }
}

TEST(LossesGolden, CategoricalCrossEntropyFromProbabilities) {
  golden::Fixture f = testing::loss_fixture("cce_probabilities");
  const Tensor& labels = golden::tensor(f, "input.labels");
  const Tensor& p = golden::tensor(f, "input.y_pred");
  check_golden("cce_probabilities", {labels, p}, [](const std::vector<Expr>& in, Reduction r) {
    return losses::categorical_cross_entropy(in[0], in[1], {.reduction = r, .sparse = true});
  });
  check_golden("cce_probabilities", {testing::one_hot_rows(labels, p.shape()[1]), p},
               [](const std::vector<Expr>& in, Reduction r) {
                 return losses::categorical_cross_entropy(in[0], in[1], {.reduction = r});
               });
}

TEST(LossesGolden, BinaryCrossEntropy) {
  using O = losses::CrossEntropyOptions;
  auto bce = [](const Expr& y, const Expr& p, const O& o) {
    return losses::binary_cross_entropy(y, p, o);
  };
  check_pair<O>("bce_probabilities", bce);
  check_pair<O>("bce_probabilities_weighted", bce, {.class_weights = {0.3, 2.0}});
  check_pair<O>("bce_logits", bce, {.from_logits = true});
  check_pair<O>("bce_logits_weighted", bce, {.from_logits = true, .class_weights = {0.3, 2.0}});
  check_pair<O>("bce_logits_smoothing", bce, {.from_logits = true, .label_smoothing = 0.1});
}

TEST(LossesGolden, KlDivergenceWithZeroTargets) {
  check_pair<losses::LossOptions>("kl_divergence", [](const Expr& y, const Expr& p, auto& o) {
    return losses::kl_divergence(y, p, o);
  });
}

TEST(LossesGolden, MarginLosses) {
  using O = losses::LossOptions;
  check_pair<O>("hinge",
                [](const Expr& y, const Expr& p, const O& o) { return losses::hinge(y, p, o); });
  check_pair<O>("soft_margin", [](const Expr& y, const Expr& p, const O& o) {
    return losses::soft_margin(y, p, o);
  });
  check_pair<losses::MarginOptions>(
      "margin_ranking",
      [](const Expr& y, const Expr& p, const losses::MarginOptions& o) {
        return losses::margin_ranking(y, p, o);
      },
      {.margin = 0.3});
}

TEST(LossesGolden, RegressionLosses) {
  using O = losses::LossOptions;
  auto mae = [](const Expr& y, const Expr& p, const O& o) {
    return losses::mean_absolute_error(y, p, o);
  };
  auto mse = [](const Expr& y, const Expr& p, const O& o) {
    return losses::mean_squared_error(y, p, o);
  };
  check_pair<O>("mean_absolute_error", mae);
  check_pair<O>("mean_squared_error", mse);
  check_pair<O>("mean_squared_error_rank3", mse);
  check_pair<losses::HuberOptions>("huber",
                                   [](const Expr& y, const Expr& p, const losses::HuberOptions& o) {
                                     return losses::huber(y, p, o);
                                   },
                                   {.delta = 0.7});
  auto poisson = [](const Expr& y, const Expr& p, const losses::PoissonOptions& o) {
    return losses::poisson(y, p, o);
  };
  check_pair<losses::PoissonOptions>("poisson", poisson);
  check_pair<losses::PoissonOptions>("poisson_logits", poisson, {.from_logits = true});
}

// ---- Closed forms --------------------------------------------------------------------------

// Per-example closed-form values; the reductions are checked from them.
void check_reductions(const LossCall& fn, const std::vector<Tensor>& inputs,
                      const std::vector<double>& expected, double tol = 1e-12) {
  double total = 0;
  for (double v : expected) total += v;
  const auto n = static_cast<std::int64_t>(expected.size());
  auto at = [&](Reduction r) {
    return run([&](const std::vector<Expr>& in) { return fn(in, r); }, inputs);
  };
  expect_close(at(Reduction::none), f64(expected, Shape{n}), tol, "none");
  expect_close(at(Reduction::sum), f64({total}, Shape{}), tol, "sum");
  expect_close(at(Reduction::mean), f64({total / static_cast<double>(n)}, Shape{}), tol, "mean");
}

TEST(LossesClosedForm, CategoricalHinge) {
  // Rows: true class 2 winning by more than 1; true class 0 behind class 1; all scores
  // negative (the (1 - y) p term of the true class, 0, is the largest "negative").
  std::vector<double> y = {0, 0, 1, 1, 0, 0, 0, 1, 0},
                      p = {0.2, -0.5, 1.9, 0.3, 0.8, -0.1, -2.0, -0.4, -3.0};
  std::vector<double> expected;
  for (int row = 0; row < 3; ++row) {
    double pos = 0, negative = -1e300;
    for (int c = 0; c < 3; ++c) {
      pos += y[row * 3 + c] * p[row * 3 + c];
      negative = std::max(negative, (1 - y[row * 3 + c]) * p[row * 3 + c]);
    }
    expected.push_back(std::max(0.0, negative - pos + 1));
  }
  EXPECT_DOUBLE_EQ(expected[0], 0.0);  // 0.2 - 1.9 + 1 < 0
  EXPECT_DOUBLE_EQ(expected[1], 1.5);  // 0.8 - 0.3 + 1
  EXPECT_DOUBLE_EQ(expected[2], 1.4);  // 0 - (-0.4) + 1
  check_reductions([](const std::vector<Expr>& in,
                      Reduction r) { return losses::categorical_hinge(in[0], in[1], {r}); },
                   {f64(y, Shape{3, 3}), f64(p, Shape{3, 3})}, expected);
}

TEST(LossesClosedForm, LogCosh) {
  std::vector<double> y = {0.5, -1.0, 2.0, 0.0, 3.0, -4.0}, p = {1.5, -1.2, -3.0, 30.0, 3.0, 5.0};
  std::vector<double> expected;
  for (int row = 0; row < 2; ++row) {
    long double total = 0;
    for (int c = 0; c < 3; ++c)
      total += std::log(std::cosh(static_cast<long double>(p[row * 3 + c] - y[row * 3 + c])));
    expected.push_back(static_cast<double>(total / 3));
  }
  check_reductions(
      [](const std::vector<Expr>& in, Reduction r) { return losses::log_cosh(in[0], in[1], {r}); },
      {f64(y, Shape{2, 3}), f64(p, Shape{2, 3})}, expected);
}

TEST(LossesClosedForm, CosineSimilarityIsTheSimilarity) {
  // Parallel, anti-parallel, orthogonal, a zero row (0, not NaN), and a generic pair.
  std::vector<double> y = {1, 2, 2, 1, 0, 0, 1, 0, 0, 0, 0, 0, 3, -1, 2},
                      p = {2, 4, 4, -3, 0, 0, 0, 5, 0, 1, 2, 3, 1, 2, -2};
  std::vector<double> expected;
  for (int row = 0; row < 5; ++row) {
    double dot = 0, ny = 0, np = 0;
    for (int c = 0; c < 3; ++c) {
      dot += y[row * 3 + c] * p[row * 3 + c];
      ny += y[row * 3 + c] * y[row * 3 + c];
      np += p[row * 3 + c] * p[row * 3 + c];
    }
    expected.push_back(ny * np == 0 ? 0.0 : dot / std::sqrt(ny * np));
  }
  EXPECT_DOUBLE_EQ(expected[0], 1.0);
  EXPECT_DOUBLE_EQ(expected[1], -1.0);
  EXPECT_NEAR(expected[4], (3 - 2 - 4) / std::sqrt(14.0 * 9.0), 1e-15);
  check_reductions(
      [](const std::vector<Expr>& in, Reduction r) {
        return losses::cosine_similarity(in[0], in[1], {.reduction = r});
      },
      {f64(y, Shape{5, 3}), f64(p, Shape{5, 3})}, expected);
}

TEST(LossesClosedForm, CrossEntropyWithSoftLabelsAndIntegerOneHot) {
  // Soft targets: -sum q log softmax(x), with q given directly.
  std::vector<double> q = {0.25, 0.75, 0.0, 0.5, 0.5, 0.0}, x = {1.0, 2.0, 3.0, -1.0, 0.0, 4.0};
  std::vector<double> expected;
  for (int row = 0; row < 2; ++row) {
    double lse = 0;
    for (int c = 0; c < 3; ++c) lse += std::exp(x[row * 3 + c]);
    lse = std::log(lse);
    double l = 0;
    for (int c = 0; c < 3; ++c) l -= q[row * 3 + c] * (x[row * 3 + c] - lse);
    expected.push_back(l);
  }
  check_reductions(
      [](const std::vector<Expr>& in, Reduction r) {
        return losses::categorical_cross_entropy(in[0], in[1],
                                                 {.reduction = r, .from_logits = true});
      },
      {f64(q, Shape{2, 3}), f64(x, Shape{2, 3})}, expected);
  // One-hot rows may be integers: they are cast to y_pred's dtype.
  Tensor onehot = Tensor::from<std::int32_t>({0, 1, 0, 0, 0, 1}, Shape{2, 3});
  Tensor got = run(
      [](const std::vector<Expr>& in) {
        return losses::categorical_cross_entropy(in[0], in[1], {.from_logits = true});
      },
      {onehot, f64(x, Shape{2, 3})});
  double want = 0;
  for (int row = 0; row < 2; ++row) {
    double lse = 0;
    for (int c = 0; c < 3; ++c) lse += std::exp(x[row * 3 + c]);
    want -= x[row * 3 + (row == 0 ? 1 : 2)] - std::log(lse);
  }
  EXPECT_NEAR(got.item<double>(), want / 2, 1e-12);
}

}  // namespace
}  // namespace glia
