// Learning-rate schedules (Optax's formulas), traced from the update count: integer step
// arithmetic stays in i64, the rate is computed in f32.
#include "glia/optim/schedules.hpp"

#include <numbers>
#include <string_view>

#include "transform_util.hpp"

namespace glia::schedules {

using namespace optim_detail;

namespace {

// The step, checked: an integer scalar of a trace.
const Expr& checked_step(const Expr& step, std::string_view who) {
  check(step.defined(), who, ": the step is an undefined Expr");
  check(step.shape().rank() == 0 && !is_float(step.dtype()) && step.dtype() != DType::boolean, who,
        ": the step must be an integer scalar, got ", step.type());
  return step;
}

Schedule polynomial(std::string_view who, double init_value, double end_value, double power,
                    std::int64_t transition_steps, std::int64_t transition_begin) {
  check_finite(init_value, who, "init_value");
  check_finite(end_value, who, "end_value");
  check_finite(power, who, "power");
  check(transition_steps > 0, who, ": transition_steps must be > 0, got ", transition_steps);
  check(transition_begin >= 0, who, ": transition_begin must be >= 0, got ", transition_begin);
  return [=, who = std::string(who)](const Expr& step) {
    TraceScope scope(*checked_step(step, who).graph());
    Expr count = clip(subtract(cast(step, DType::i64), transition_begin), 0, transition_steps);
    Expr frac = 1.0 - cast(count, DType::f32) / static_cast<double>(transition_steps);
    return pow(frac, power) * (init_value - end_value) + end_value;
  };
}

}  // namespace

Schedule constant(double value) {
  check_finite(value, "constant", "value");
  return [value](const Expr& step) {
    TraceScope scope(*checked_step(step, "constant").graph());
    return scalar(value, DType::f32);
  };
}

Schedule linear_decay(double init_value, double end_value, std::int64_t transition_steps,
                      std::int64_t transition_begin) {
  return polynomial("linear_decay", init_value, end_value, 1.0, transition_steps, transition_begin);
}

Schedule polynomial_decay(double init_value, double end_value, double power,
                          std::int64_t transition_steps, std::int64_t transition_begin) {
  return polynomial("polynomial_decay", init_value, end_value, power, transition_steps,
                    transition_begin);
}

Schedule exponential_decay(double init_value, std::int64_t transition_steps, double decay_rate,
                           std::int64_t transition_begin, bool staircase,
                           std::optional<double> end_value) {
  constexpr std::string_view who = "exponential_decay";
  check_finite(init_value, who, "init_value");
  check(transition_steps > 0, who, ": transition_steps must be > 0, got ", transition_steps);
  check_positive(decay_rate, who, "decay_rate");
  check(transition_begin >= 0, who, ": transition_begin must be >= 0, got ", transition_begin);
  if (end_value) check_finite(*end_value, who, "end_value");
  return [=](const Expr& step) {
    TraceScope scope(*checked_step(step, who).graph());
    Expr elapsed = subtract(cast(step, DType::i64), transition_begin);
    Expr p = cast(elapsed, DType::f32) / static_cast<double>(transition_steps);
    if (staircase) p = floor(p);
    Expr value = select(less_equal(elapsed, 0), init_value, pow(decay_rate, p) * init_value);
    if (end_value) value = decay_rate < 1 ? max(value, *end_value) : min(value, *end_value);
    return value;
  };
}

Schedule cosine_decay(double init_value, std::int64_t decay_steps, double alpha) {
  constexpr std::string_view who = "cosine_decay";
  check_finite(init_value, who, "init_value");
  check(decay_steps > 0, who, ": decay_steps must be > 0, got ", decay_steps);
  check_finite(alpha, who, "alpha");
  return [=](const Expr& step) {
    TraceScope scope(*checked_step(step, who).graph());
    Expr count = cast(min(cast(step, DType::i64), decay_steps), DType::f32);
    Expr cosine = (cos(count * (std::numbers::pi / static_cast<double>(decay_steps))) + 1.0) * 0.5;
    return (cosine * (1.0 - alpha) + alpha) * init_value;
  };
}

}  // namespace glia::schedules
