// The learning-rate schedules against their closed forms at chosen steps (before, inside
// and after their transitions), their output type, and bad arguments.
#include <cmath>
#include <numbers>

#include "expect_error.hpp"
#include "glia/optim/schedules.hpp"
#include "optim/transform_test_util.hpp"

namespace glia {
namespace {

using ::glia::testing::expect_error;

using namespace optim_test;
namespace sc = schedules;

// The schedule at `step` (an i64 scalar, or of `dtype`), computed in a jitted graph.
Tensor at(const Schedule& s, std::int64_t step, DType dtype = DType::i64) {
  auto f = jit([s](const Expr& k) { return s(k); });
  return f(Tensor::scalar(static_cast<double>(step), dtype));
}

void expect_schedule(const Schedule& s, const std::vector<std::pair<std::int64_t, double>>& want) {
  for (const auto& [step, value] : want) {
    Tensor got = at(s, step);
    EXPECT_EQ(got.type(), (TensorType{DType::f32, {}})) << "step " << step;
    EXPECT_NEAR(got.item<double>(), value, 1e-6 * std::abs(value) + 1e-7) << "step " << step;
  }
}

TEST(Constant, IsTheValueAtEveryStep) {
  expect_schedule(sc::constant(0.3), {{0, 0.3}, {7, 0.3}, {1000000, 0.3}});
}

TEST(LinearDecay, InterpolatesAfterTheBeginAndHoldsTheEnd) {
  // 1.0 until step 5, then down to 0.1 over 10 steps.
  expect_schedule(sc::linear_decay(1.0, 0.1, 10, 5),
                  {{0, 1.0}, {5, 1.0}, {6, 1.0 - 0.09}, {10, 0.55}, {15, 0.1}, {100, 0.1}});
  expect_schedule(sc::linear_decay(0.0, 2.0, 4),
                  {{0, 0.0}, {1, 0.5}, {3, 1.5}, {4, 2.0}, {9, 2.0}});
}

TEST(PolynomialDecay, FollowsThePower) {
  std::vector<std::pair<std::int64_t, double>> want;
  for (std::int64_t k : {0, 1, 3, 7, 10, 12}) {
    double frac = 1.0 - std::min<double>(static_cast<double>(k), 10.0) / 10.0;
    want.push_back({k, (2.0 - 0.5) * std::pow(frac, 3.0) + 0.5});
  }
  expect_schedule(sc::polynomial_decay(2.0, 0.5, 3.0, 10), want);
}

TEST(ExponentialDecay, ContinuousStaircaseDelayedAndBounded) {
  std::vector<std::pair<std::int64_t, double>> smooth, stairs, delayed, bounded;
  for (std::int64_t k : {0, 1, 3, 4, 9, 20}) {
    smooth.push_back({k, 2.0 * std::pow(0.5, k / 4.0)});
    stairs.push_back({k, 2.0 * std::pow(0.5, std::floor(k / 4.0))});
    delayed.push_back({k, k <= 3 ? 2.0 : 2.0 * std::pow(0.5, (k - 3) / 4.0)});
    bounded.push_back({k, std::max(2.0 * std::pow(0.5, k / 4.0), 0.6)});
  }
  expect_schedule(sc::exponential_decay(2.0, 4, 0.5), smooth);
  expect_schedule(sc::exponential_decay(2.0, 4, 0.5, 0, true), stairs);
  expect_schedule(sc::exponential_decay(2.0, 4, 0.5, 3), delayed);
  expect_schedule(sc::exponential_decay(2.0, 4, 0.5, 0, false, 0.6), bounded);
  // Growth (decay_rate > 1) is bounded from above by end_value.
  expect_schedule(sc::exponential_decay(1.0, 1, 2.0, 0, false, 5.0),
                  {{0, 1.0}, {2, 4.0}, {3, 5.0}});
}

TEST(CosineDecay, FallsToAlphaTimesTheInitialValue) {
  std::vector<std::pair<std::int64_t, double>> want;
  for (std::int64_t k : {0, 2, 5, 9, 10, 30}) {
    double c =
        0.5 *
        (1 + std::cos(std::numbers::pi * std::min<double>(static_cast<double>(k), 10.0) / 10.0));
    want.push_back({k, 3.0 * ((1 - 0.1) * c + 0.1)});
  }
  expect_schedule(sc::cosine_decay(3.0, 10, 0.1), want);
}

TEST(Schedules, AcceptAnyIntegerStep) {
  EXPECT_NEAR(at(sc::linear_decay(1.0, 0.0, 10), 5, DType::i32).item<double>(), 0.5, 1e-7);
  EXPECT_NEAR(at(sc::cosine_decay(1.0, 10), 10, DType::u32).item<double>(), 0.0, 1e-7);
}

TEST(Schedules, BadArgumentsNameTheSchedule) {
  expect_error([] { sc::constant(INFINITY); }, "constant: value must be a finite number");
  expect_error([] { sc::linear_decay(1, 0, 0); },
               "linear_decay: transition_steps must be > 0, got 0");
  expect_error([] { sc::linear_decay(1, 0, 10, -1); },
               "linear_decay: transition_begin must be >= 0, got -1");
  expect_error([] { sc::polynomial_decay(1, 0, NAN, 10); },
               "polynomial_decay: power must be a finite number");
  expect_error([] { sc::exponential_decay(1, 10, 0); },
               "exponential_decay: decay_rate must be a finite number > 0, got 0");
  expect_error([] { sc::exponential_decay(1, -5, 0.5); },
               "exponential_decay: transition_steps must be > 0");
  expect_error([] { sc::exponential_decay(1, 5, 0.5, 0, false, NAN); },
               "exponential_decay: end_value");
  expect_error([] { sc::cosine_decay(1, 0); }, "cosine_decay: decay_steps must be > 0, got 0");
  expect_error([] { at(sc::constant(1), 0, DType::f32); },
               "constant: the step must be an integer scalar, got f32");
  expect_error([] { at(sc::cosine_decay(1, 10), 0, DType::boolean); },
               "cosine_decay: the step must be an integer scalar");
}

}  // namespace
}  // namespace glia
