// The losses at extreme inputs (logits at +-1e4, probabilities of exactly 0 and 1): finite
// values and finite gradients in f32 and f64; every loss's gradient against central finite
// differences in f64; and the argument errors, each naming the loss.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <numbers>

#include "autograd/gradcheck.hpp"
#include "expect_error.hpp"
#include "glia/optim/losses.hpp"
#include "optim/losses_test_util.hpp"

namespace glia {
namespace {

using ::glia::testing::expect_error_parts;

using losses::Reduction;
using testing::all_finite;
using ::testing::AllOf;
using testing::f64;
using ::testing::HasSubstr;
using testing::run_with_grad;
using ::testing::ThrowsMessage;

struct ExtremeCase {
  std::string name;
  Tensor y_true, y_pred;
  testing::TensorFn loss;  // of {y_true, y_pred}
};

std::vector<ExtremeCase> extreme_cases() {
  const double big = 1e4;
  Tensor logits = f64({big, -big, 0, -big, big, -big}, Shape{2, 3});
  Tensor labels = Tensor::from<std::int64_t>({1, 0}, Shape{2});  // both badly wrong
  Tensor onehot = f64({0, 1, 0, 1, 0, 0}, Shape{2, 3});
  Tensor probs = f64({0, 1, 0, 0, 1, 0}, Shape{2, 3});  // exactly 0 and 1
  Tensor x = f64({big, -big, big, -big, 0, 3}, Shape{3, 2});
  Tensor y01 = f64({0, 1, 1, 0, 1, 0}, Shape{3, 2});
  Tensor pm1 = f64({-1, 1, 1, -1, 1, -1}, Shape{3, 2});
  Tensor p01 = f64({0, 1, 1, 0, 0, 1}, Shape{3, 2});  // probabilities 0 and 1, right and wrong
  Tensor pair = f64({big, -big, 0, big, -big, 1, -big, big, 0, -big, big, 2}, Shape{2, 3, 2});
  using O = losses::CrossEntropyOptions;
  return {
      {"cce logits sparse", labels, logits,
       [](auto& in) {
         return losses::categorical_cross_entropy(in[0], in[1],
                                                  O{.from_logits = true, .sparse = true});
       }},
      {"cce logits weighted smoothed", onehot, logits,
       [](auto& in) {
         return losses::categorical_cross_entropy(
             in[0], in[1],
             O{.from_logits = true, .class_weights = {1, 2, 3}, .label_smoothing = 0.1});
       }},
      {"cce probabilities 0 and 1", onehot, probs,
       [](auto& in) { return losses::categorical_cross_entropy(in[0], in[1]); }},
      {"bce logits", y01, x,
       [](auto& in) { return losses::binary_cross_entropy(in[0], in[1], O{.from_logits = true}); }},
      {"bce logits weighted smoothed", y01, x,
       [](auto& in) {
         return losses::binary_cross_entropy(
             in[0], in[1],
             O{.from_logits = true, .class_weights = {0.5, 2}, .label_smoothing = 0.2});
       }},
      {"bce probabilities 0 and 1", y01, p01,
       [](auto& in) { return losses::binary_cross_entropy(in[0], in[1]); }},
      {"categorical_hinge", onehot, logits,
       [](auto& in) { return losses::categorical_hinge(in[0], in[1]); }},
      {"hinge", pm1, x, [](auto& in) { return losses::hinge(in[0], in[1]); }},
      {"kl_divergence 0 and 1", probs, f64({1, 0, 0, 0, 0, 1}, Shape{2, 3}),
       [](auto& in) { return losses::kl_divergence(in[0], in[1]); }},
      {"log_cosh", y01, x, [](auto& in) { return losses::log_cosh(in[0], in[1]); }},
      {"margin_ranking", pm1, pair,
       [](auto& in) { return losses::margin_ranking(in[0], in[1], {.margin = 0.5}); }},
      {"soft_margin", pm1, x, [](auto& in) { return losses::soft_margin(in[0], in[1]); }},
      {"mean_absolute_error", y01, x,
       [](auto& in) { return losses::mean_absolute_error(in[0], in[1]); }},
      {"mean_squared_error", y01, x,
       [](auto& in) { return losses::mean_squared_error(in[0], in[1]); }},
      {"cosine_similarity", y01, x,
       [](auto& in) { return losses::cosine_similarity(in[0], in[1]); }},
      {"cosine_similarity zero rows", f64({0, 0, 1, 2}, Shape{2, 2}),
       f64({0, 0, 0, 0}, Shape{2, 2}),
       [](auto& in) { return losses::cosine_similarity(in[0], in[1]); }},
      {"poisson rates 0 and 1e4", y01, f64({0, 1e4, 0, 1, 1e4, 0}, Shape{3, 2}),
       [](auto& in) { return losses::poisson(in[0], in[1]); }},
      {"poisson log-rates -1e4", y01, f64({-big, -big, 0, -big, 1, -big}, Shape{3, 2}),
       [](auto& in) { return losses::poisson(in[0], in[1], {.from_logits = true}); }},
      {"huber", y01, x, [](auto& in) { return losses::huber(in[0], in[1]); }},
  };
}

TEST(LossesStability, ExtremeInputsGiveFiniteValuesAndGradients) {
  for (const ExtremeCase& c : extreme_cases()) {
    for (DType dtype : {DType::f32, DType::f64}) {
      SCOPED_TRACE(c.name + (dtype == DType::f32 ? " f32" : " f64"));
      Tensor y_true = is_float(c.y_true.dtype()) ? c.y_true.cast(dtype) : c.y_true;
      auto [value, grad] = run_with_grad(c.loss, {y_true, c.y_pred.cast(dtype)}, 1);
      EXPECT_TRUE(all_finite(value)) << value;
      EXPECT_TRUE(all_finite(grad)) << grad;
    }
  }
}

TEST(LossesStability, ExtremeLogitValuesAreRight) {
  // Sparse CE with the true logit 2e4 below the max: loss 2e4 per row.
  Tensor logits = f64({1e4, -1e4, 0, -1e4, 1e4, -1e4}, Shape{2, 3});
  Tensor labels = Tensor::from<std::int64_t>({1, 0}, Shape{2});
  auto [ce, ce_grad] = run_with_grad(
      [](auto& in) {
        return losses::categorical_cross_entropy(in[0], in[1],
                                                 {.from_logits = true, .sparse = true});
      },
      {labels, logits}, 1);
  EXPECT_NEAR(ce.item<double>(), 2e4, 1e-9);
  // d/dx mean CE = (softmax - onehot) / batch.
  testing::expect_close(ce_grad, f64({0.5, -0.5, 0, -0.5, 0.5, 0}, Shape{2, 3}), 1e-12, "ce grad");
  // BCE from logits: x = 1e4 with y = 0 costs 1e4; with y = 1 costs ~0; x = 0 costs log 2.
  Tensor x = f64({1e4, 1e4, 0}, Shape{3}), y = f64({0, 1, 1}, Shape{3});
  auto [bce, bce_grad] = run_with_grad(
      [](auto& in) {
        return losses::binary_cross_entropy(in[0], in[1],
                                            {.reduction = Reduction::sum, .from_logits = true});
      },
      {y, x}, 1);
  EXPECT_NEAR(bce.item<double>(), 1e4 + std::numbers::ln2, 1e-9);
  testing::expect_close(bce_grad, f64({1, 0, -0.5}, Shape{3}), 1e-12, "bce grad (sigmoid - y)");
  // Probabilities of exactly 0 and 1 are clipped to [1e-7, 1 - 1e-7].
  Tensor p = f64({0, 1}, Shape{2}), t = f64({1, 0}, Shape{2});
  Tensor clipped =
      testing::run([](auto& in) { return losses::binary_cross_entropy(in[0], in[1]); }, {t, p});
  EXPECT_NEAR(clipped.item<double>(), -std::log(1e-7), 1e-6);
}

TEST(LossesStability, PoissonFromLogitsOverflowsOnlyWhereExpDoes) {
  // exp(1e4) is beyond every float: the value is +inf (never NaN); below, all finite.
  Tensor y = f64({1, 1}, Shape{2});
  Tensor v =
      testing::run([](auto& in) { return losses::poisson(in[0], in[1], {.from_logits = true}); },
                   {y, f64({1e4, 0}, Shape{2})});
  EXPECT_TRUE(std::isinf(v.item<double>()) && v.item<double>() > 0) << v;
  Tensor w =
      testing::run([](auto& in) { return losses::poisson(in[0], in[1], {.from_logits = true}); },
                   {y, f64({80, -1e4}, Shape{2})});
  EXPECT_NEAR(w.item<double>(), (std::exp(80.0) - 80 + 1e4) / 2, 1e-9 * std::exp(80.0));
}

// ---- Gradients against finite differences -------------------------------------------------

testing::GradCheckOptions only_pred() {
  testing::GradCheckOptions o;
  o.check = {false, true};
  return o;
}

TEST(LossesGradients, MatchFiniteDifferences) {
  using testing::random_tensor;
  using O = losses::CrossEntropyOptions;
  Tensor labels = Tensor::from<std::int64_t>({2, 0, 1, 2}, Shape{4});
  Tensor onehot = testing::one_hot_rows(labels, 3);
  Tensor logits = random_tensor(Shape{4, 3}, -3, 3, 1);
  Tensor probs = random_tensor(Shape{4, 3}, 0.05, 0.95, 2);
  Tensor y01 = f64({0, 1, 1, 0, 1, 0, 0, 1, 1, 1, 0, 0}, Shape{4, 3});
  Tensor pm1 = f64({-1, 1, 1, -1, 1, -1, -1, 1, 1, 1, -1, -1}, Shape{4, 3});
  Tensor y = random_tensor(Shape{4, 3}, -2, 2, 3);
  Tensor counts = f64({0, 1, 3, 2, 0, 5, 1, 1, 4, 0, 2, 1}, Shape{4, 3});
  struct Case {
    std::string name;
    Tensor y_true, y_pred;
    testing::ScalarFn fn;
  };
  std::vector<Case> cases = {
      {"cce logits sparse", labels, logits,
       [](auto& in) {
         return losses::categorical_cross_entropy(in[0], in[1],
                                                  O{.from_logits = true, .sparse = true});
       }},
      {"cce logits weighted smoothed (mean)", labels, logits,
       [](auto& in) {
         return losses::categorical_cross_entropy(in[0], in[1],
                                                  O{.from_logits = true,
                                                    .sparse = true,
                                                    .class_weights = {0.5, 1, 2},
                                                    .label_smoothing = 0.1});
       }},
      {"cce logits weighted (sum)", onehot, logits,
       [](auto& in) {
         return losses::categorical_cross_entropy(
             in[0], in[1],
             O{.reduction = Reduction::sum, .from_logits = true, .class_weights = {0.5, 1, 2}});
       }},
      {"cce probabilities", onehot, probs,
       [](auto& in) { return losses::categorical_cross_entropy(in[0], in[1]); }},
      {"bce probabilities weighted", y01, probs,
       [](auto& in) {
         return losses::binary_cross_entropy(in[0], in[1], O{.class_weights = {0.3, 2}});
       }},
      {"bce logits smoothed", y01, logits,
       [](auto& in) {
         return losses::binary_cross_entropy(in[0], in[1],
                                             O{.from_logits = true, .label_smoothing = 0.1});
       }},
      {"categorical_hinge", onehot, logits,
       [](auto& in) { return losses::categorical_hinge(in[0], in[1]); }},
      {"hinge", pm1, logits, [](auto& in) { return losses::hinge(in[0], in[1]); }},
      {"kl_divergence", random_tensor(Shape{4, 3}, 0.05, 1, 4), probs,
       [](auto& in) { return losses::kl_divergence(in[0], in[1]); }},
      {"log_cosh", y, logits, [](auto& in) { return losses::log_cosh(in[0], in[1]); }},
      {"margin_ranking", pm1, random_tensor(Shape{2, 4, 3}, -2, 2, 5),
       [](auto& in) { return losses::margin_ranking(in[0], in[1], {.margin = 0.2}); }},
      {"soft_margin", pm1, logits, [](auto& in) { return losses::soft_margin(in[0], in[1]); }},
      {"mean_absolute_error", y, logits,
       [](auto& in) { return losses::mean_absolute_error(in[0], in[1]); }},
      {"mean_squared_error (none, summed)", y, logits,
       [](auto& in) { return sum(losses::mean_squared_error(in[0], in[1], {Reduction::none})); }},
      {"cosine_similarity", y, logits,
       [](auto& in) { return losses::cosine_similarity(in[0], in[1]); }},
      {"poisson", counts, probs, [](auto& in) { return losses::poisson(in[0], in[1]); }},
      {"poisson log-rates", counts, logits,
       [](auto& in) { return losses::poisson(in[0], in[1], {.from_logits = true}); }},
      {"huber", y, logits, [](auto& in) { return losses::huber(in[0], in[1], {.delta = 0.8}); }},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    testing::expect_gradients_match(c.fn, {c.y_true, c.y_pred}, only_pred());
  }
  // Gradients reach y_true too where it is a float (soft targets).
  testing::expect_gradients_match(
      [](auto& in) { return losses::binary_cross_entropy(in[0], in[1], {.from_logits = true}); },
      {probs, logits});
}

// ---- Errors ---------------------------------------------------------------------------------

// Traces fn on the given input types, for its errors.
void trace_on(const std::vector<TensorType>& types, const testing::TensorFn& fn) {
  trace([&](const std::vector<Expr>& in) { return std::vector<Expr>{fn(in)}; }, types);
}

TEST(LossesErrors, ShapeMismatchNamesTheLoss) {
  using L = std::function<Expr(const Expr&, const Expr&)>;
  std::vector<std::pair<std::string, L>> all = {
      {"categorical_cross_entropy",
       [](auto& a, auto& b) { return losses::categorical_cross_entropy(a, b); }},
      {"binary_cross_entropy", [](auto& a, auto& b) { return losses::binary_cross_entropy(a, b); }},
      {"categorical_hinge", [](auto& a, auto& b) { return losses::categorical_hinge(a, b); }},
      {"hinge", [](auto& a, auto& b) { return losses::hinge(a, b); }},
      {"kl_divergence", [](auto& a, auto& b) { return losses::kl_divergence(a, b); }},
      {"log_cosh", [](auto& a, auto& b) { return losses::log_cosh(a, b); }},
      {"soft_margin", [](auto& a, auto& b) { return losses::soft_margin(a, b); }},
      {"mean_absolute_error", [](auto& a, auto& b) { return losses::mean_absolute_error(a, b); }},
      {"mean_squared_error", [](auto& a, auto& b) { return losses::mean_squared_error(a, b); }},
      {"cosine_similarity", [](auto& a, auto& b) { return losses::cosine_similarity(a, b); }},
      {"poisson", [](auto& a, auto& b) { return losses::poisson(a, b); }},
      {"huber", [](auto& a, auto& b) { return losses::huber(a, b); }},
  };
  for (const auto& [name, loss] : all) {
    SCOPED_TRACE(name);
    expect_error_parts(
        [&] {
          trace_on({{DType::f32, {4, 3}}, {DType::f32, {4, 2}}},
                   [&](auto& in) { return loss(in[0], in[1]); });
        },
        {name + ": y_true f32[4][3] and y_pred f32[4][2] must have the same shape"});
    expect_error_parts(
        [&] {
          trace_on({{DType::f32, {}}, {DType::f32, {}}},
                   [&](auto& in) { return loss(in[0], in[1]); });
        },
        {name + ": y_pred f32", "needs a batch"});
  }
  expect_error_parts(
      [&] {
        trace_on({{DType::f32, {3}}, {DType::f32, {2, 4}}},
                 [](auto& in) { return losses::margin_ranking(in[0], in[1]); });
      },
      {"margin_ranking: y_pred f32[2][4] must stack", "like y_true f32[3]"});
}

TEST(LossesErrors, CrossEntropyArguments) {
  using O = losses::CrossEntropyOptions;
  auto cce = [](O o) {
    return [o](auto& in) { return losses::categorical_cross_entropy(in[0], in[1], o); };
  };
  expect_error_parts(
      [&] {
        trace_on({{DType::f32, {4}}, {DType::f32, {4, 3}}}, cce({.sparse = true}));
      },
      {"categorical_cross_entropy: sparse labels must have an integer dtype, got f32[4]"});
  expect_error_parts(
      [&] {
        trace_on({{DType::i64, {4, 1}}, {DType::f32, {4, 3}}}, cce({.sparse = true}));
      },
      {"categorical_cross_entropy: sparse y_true i64[4][1]", "shape [4]"});
  expect_error_parts(
      [&] {
        trace_on({{DType::i64, {4}}, {DType::f32, {4, 3}}}, cce({}));
      },
      {"categorical_cross_entropy", "need sparse = true"});
  expect_error_parts(
      [&] {
        trace_on({{DType::f32, {4}}, {DType::f32, {4}}}, cce({}));
      },
      {"categorical_cross_entropy: y_pred f32[4] needs a batch and a class axis"});
  expect_error_parts(
      [&] {
        trace_on({{DType::f32, {4, 3}}, {DType::f32, {4, 3}}}, cce({.class_weights = {1, 2}}));
      },
      {"categorical_cross_entropy: class_weights has 2 entries, expected 3"});
  expect_error_parts(
      [&] {
        trace_on({{DType::f32, {4, 3}}, {DType::f32, {4, 3}}}, cce({.class_weights = {1, -2, 1}}));
      },
      {"class weight -2 must be finite and >= 0"});
  expect_error_parts(
      [&] {
        trace_on({{DType::f32, {4, 3}}, {DType::f32, {4, 3}}}, cce({.label_smoothing = 1.5}));
      },
      {"categorical_cross_entropy: label_smoothing must be in [0, 1], got 1.5"});
  auto bce = [](O o) {
    return [o](auto& in) { return losses::binary_cross_entropy(in[0], in[1], o); };
  };
  expect_error_parts(
      [&] {
        trace_on({{DType::f32, {4}}, {DType::f32, {4}}}, bce({.sparse = true}));
      },
      {"binary_cross_entropy: sparse labels do not apply"});
  expect_error_parts(
      [&] {
        trace_on({{DType::f32, {4}}, {DType::f32, {4}}}, bce({.class_weights = {1, 2, 3}}));
      },
      {"binary_cross_entropy: class_weights has 3 entries, expected 2 ({negative, positive})"});
}

TEST(LossesErrors, OptionRanges) {
  expect_error_parts(
      [&] {
        trace_on({{DType::f32, {4}}, {DType::f32, {4}}},
                 [](auto& in) { return losses::huber(in[0], in[1], {.delta = 0}); });
      },
      {"huber: delta must be finite and > 0, got 0"});
  expect_error_parts(
      [&] {
        trace_on({{DType::f32, {4, 2}}, {DType::f32, {4, 2}}},
                 [](auto& in) { return losses::cosine_similarity(in[0], in[1], {.epsilon = -1}); });
      },
      {"cosine_similarity: epsilon must be finite and > 0, got -1"});
}

}  // namespace
}  // namespace glia
