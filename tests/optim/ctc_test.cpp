// Connectionist temporal classification: PyTorch's ctc_loss (golden fixtures, the three
// reductions, f64 and f32), a case enumerated by hand, gradients against finite
// differences, one loop over time (cpu against the interpreter), extreme logits, impossible
// alignments (inf, or 0 with zero_infinity), and argument errors.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "autograd/gradcheck.hpp"
#include "compiler/cpu_test_util.hpp"
#include "expect_error.hpp"
#include "glia/optim/losses.hpp"
#include "optim/losses_test_util.hpp"

namespace glia {
namespace {

using ::glia::testing::expect_error;

using losses::CtcOptions;
using losses::Reduction;
using testing::f64;
using ::testing::HasSubstr;

Tensor i64s(const std::vector<std::int64_t>& v, const Shape& shape) {
  return Tensor::from<std::int64_t>(v, shape);
}

// inputs: {y_true, y_pred, input_lengths, label_lengths}.
Expr ctc(const std::vector<Expr>& in, CtcOptions o = {}) {
  return losses::connectionist_temporal_classification(in[0], in[1], in[2], in[3], o);
}

TEST(Ctc, MatchesPyTorch) {
  for (auto [case_name, blank] : {std::pair<std::string, std::int64_t>{"ctc", 0},
                                  std::pair<std::string, std::int64_t>{"ctc_blank_last", 3}}) {
    SCOPED_TRACE(case_name);
    golden::Fixture f = testing::loss_fixture(case_name);
    for (DType dtype : {DType::f64, DType::f32}) {
      std::vector<Tensor> inputs = {
          golden::tensor(f, "input.y_true"), golden::tensor(f, "input.y_pred").cast(dtype),
          golden::tensor(f, "input.input_lengths"), golden::tensor(f, "input.label_lengths")};
      for (auto [reduction, name] :
           {std::pair{Reduction::none, "none"}, std::pair{Reduction::mean, "mean"},
            std::pair{Reduction::sum, "sum"}}) {
        Tensor got = testing::run(
            [&](auto& in) { return ctc(in, {.reduction = reduction, .blank = blank}); }, inputs);
        EXPECT_EQ(got.dtype(), dtype);
        testing::expect_close(got, golden::tensor(f, std::string("output.") + name),
                              dtype == DType::f64 ? 1e-12 : 3e-6, name);
      }
    }
  }
}

TEST(Ctc, TwoStepsEnumeratedByHand) {
  // Label "1" over two steps, blank 0: the paths 11, 01 and 10 collapse to it.
  std::vector<double> p = {0.2, 0.5, 0.3, 0.6, 0.1, 0.3};  // [t][class]
  std::vector<double> lp;
  for (double v : p) lp.push_back(std::log(v));
  double prob = p[1] * p[4] + p[0] * p[4] + p[1] * p[3];
  // The second example: label "1 1" needs 1 0 1 (three steps); two are not enough.
  std::vector<double> lp2 = lp;
  lp.insert(lp.end(), lp2.begin(), lp2.end());
  std::vector<Tensor> inputs = {i64s({1, 0, 1, 1}, Shape{2, 2}), f64(lp, Shape{2, 2, 3}),
                                i64s({2, 2}, Shape{2}), i64s({1, 2}, Shape{2})};
  Tensor none =
      testing::run([](auto& in) { return ctc(in, {.reduction = Reduction::none}); }, inputs);
  EXPECT_NEAR(none.element(0), -std::log(prob), 1e-12);
  EXPECT_TRUE(std::isinf(none.element(1)) && none.element(1) > 0) << none;
  Tensor zeroed = testing::run(
      [](auto& in) { return ctc(in, {.reduction = Reduction::none, .zero_infinity = true}); },
      inputs);
  EXPECT_NEAR(zeroed.element(0), -std::log(prob), 1e-12);
  EXPECT_EQ(zeroed.element(1), 0.0);
  // zero_infinity: the impossible example adds nothing to the gradient, and nothing is NaN.
  auto [value, grad] = testing::run_with_grad(
      [](auto& in) { return ctc(in, {.reduction = Reduction::sum, .zero_infinity = true}); },
      inputs, 1);
  EXPECT_NEAR(value.item<double>(), -std::log(prob), 1e-12);
  std::vector<double> g = grad.to_vector<double>();
  for (std::size_t i = 6; i < 12; ++i) EXPECT_EQ(g[i], 0.0) << i;
  // d(-log prob)/d lp[t][c] = -(posterior mass of paths through (t, c)).
  EXPECT_NEAR(g[1], -(p[1] * p[4] + p[1] * p[3]) / prob, 1e-12);
  EXPECT_NEAR(g[2], 0.0, 1e-15);
}

TEST(Ctc, NoTimeStepsOnlyFitTheEmptyLabel) {
  std::vector<Tensor> inputs = {i64s({0, 2}, Shape{2, 1}),
                                f64({-1, -1, -1, -1, -1, -1}, Shape{2, 1, 3}),
                                i64s({0, 0}, Shape{2}), i64s({0, 1}, Shape{2})};
  Tensor none =
      testing::run([](auto& in) { return ctc(in, {.reduction = Reduction::none}); }, inputs);
  EXPECT_EQ(none.element(0), 0.0);
  EXPECT_TRUE(std::isinf(none.element(1)));
}

TEST(Ctc, GradientsMatchFiniteDifferences) {
  // Free log-probabilities (the loss is smooth in them), and through a log_softmax.
  Tensor labels = i64s({1, 2, 2, 3, 1, 0}, Shape{2, 3});
  Tensor lengths_in = i64s({7, 5}, Shape{2}), lengths_label = i64s({3, 2}, Shape{2});
  Tensor x = testing::random_tensor(Shape{2, 7, 4}, -2, 1, 11);
  testing::GradCheckOptions o;
  o.check = {false, true, false, false};
  testing::expect_gradients_match([](auto& in) { return ctc(in); },
                                  {labels, x, lengths_in, lengths_label}, o);
  testing::expect_gradients_match(
      [](auto& in) {
        return ctc({in[0], log_softmax(in[1]), in[2], in[3]}, {.reduction = Reduction::sum});
      },
      {labels, x, lengths_in, lengths_label}, o);
}

TEST(Ctc, ExtremeLogitsGiveFiniteValuesAndGradients) {
  std::vector<double> v;
  for (int i = 0; i < 2 * 5 * 4; ++i) v.push_back(i % 3 == 0 ? 1e4 : (i % 3 == 1 ? -1e4 : 0));
  for (DType dtype : {DType::f32, DType::f64}) {
    std::vector<Tensor> inputs = {i64s({1, 2, 3, 3}, Shape{2, 2}),
                                  f64(v, Shape{2, 5, 4}).cast(dtype), i64s({5, 4}, Shape{2}),
                                  i64s({2, 2}, Shape{2})};
    auto [value, grad] = testing::run_with_grad(
        [](auto& in) {
          return ctc({in[0], log_softmax(in[1]), in[2], in[3]});
        },
        inputs, 1);
    EXPECT_TRUE(testing::all_finite(value)) << value;
    EXPECT_TRUE(testing::all_finite(grad)) << grad;
    EXPECT_GT(value.item<double>(), 1e3);  // the likely paths do not spell the labels
  }
}

// The loss and its gradient for `time` steps: labels {1, 2, 2}, {3, 1}.
Graph ctc_and_gradient(std::int64_t time) {
  return trace(
      [](const std::vector<Expr>& in) {
        Expr loss = ctc({in[0], log_softmax(in[1]), in[2], in[3]});
        return std::vector<Expr>{loss, gradients(loss, {in[1]})[0]};
      },
      {{DType::i64, {2, 3}}, {DType::f32, {2, time, 4}}, {DType::i64, {2}}, {DType::i64, {2}}});
}

// One loop over time (forward and reverse), so the graph has one size for any length, and
// the cpu backend runs it as the interpreter does.
TEST(Ctc, OneLoopOverTimeOnEveryBackend) {
  EXPECT_EQ(ctc_and_gradient(4).size(), ctc_and_gradient(400).size());
  GLIA_REQUIRE_CPU_BACKEND();
  const std::int64_t time = 60;
  std::vector<Tensor> inputs = {
      i64s({1, 2, 2, 3, 1, 0}, Shape{2, 3}),
      testing::random_tensor(Shape{2, time, 4}, -2, 1, 12).cast(DType::f32),
      i64s({time, 41}, Shape{2}), i64s({3, 2}, Shape{2})};
  auto exe = testing::expect_cpu_matches_interp(ctc_and_gradient(time), inputs, 1e-4, 1e-5);
  EXPECT_EQ(exe->program().specs<ScanSpec>().size(), 2u) << exe->describe();
}

void trace_ctc(const std::vector<TensorType>& types, CtcOptions o = {}) {
  trace([&](const std::vector<Expr>& in) { return std::vector<Expr>{ctc(in, o)}; }, types);
}

TEST(Ctc, ArgumentErrors) {
  const TensorType labels{DType::i64, {2, 3}}, lp{DType::f32, {2, 5, 4}}, lengths{DType::i64, {2}};
  expect_error(
      [&] {
        trace_ctc({labels, {DType::f32, {2, 5}}, lengths, lengths});
      },
      "connectionist_temporal_classification: y_pred f32[2][5] must be floating-point "
      "log-probabilities [batch, time, classes]");
  expect_error(
      [&] {
        trace_ctc({{DType::f32, {2, 3}}, lp, lengths, lengths});
      },
      "y_true f32[2][3] must be integer labels [2, max_label_length]");
  expect_error(
      [&] {
        trace_ctc({labels, lp, {DType::f32, {2}}, lengths});
      },
      "input_lengths f32[2] must be integer [2]");
  expect_error(
      [&] {
        trace_ctc({labels, lp, lengths, {DType::i64, {3}}});
      },
      "label_lengths i64[3] must be integer [2]");
  expect_error(
      [&] {
        trace_ctc({labels, lp, lengths, lengths}, {.blank = 4});
      },
      "blank 4 is not a class of y_pred f32[2][5][4]");
  expect_error(
      [&] {
        trace_ctc({labels, {DType::f32, {2, 0, 4}}, lengths, lengths});
      },
      "needs at least one time step");
}

}  // namespace
}  // namespace glia
