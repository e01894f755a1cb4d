// Learning-rate schedules (Optax's): each maps the number of updates applied so far (an
// i64 scalar Expr) to an f32 scalar, inside the training step's trace.
//   glia::Transformation opt =
//       glia::optimizers::adam(glia::schedules::cosine_decay(1e-3, /*decay_steps=*/10000));
// Bad arguments (transition_steps <= 0, negative transition_begin, ...) throw glia::Error
// naming the schedule.
#pragma once

#include <cstdint>
#include <optional>

#include "glia/optim/transform.hpp"

namespace glia::schedules {

Schedule constant(double value);
// init_value to end_value linearly over transition_steps, starting at transition_begin.
Schedule linear_decay(double init_value, double end_value, std::int64_t transition_steps,
                      std::int64_t transition_begin = 0);
// init_value * decay_rate^((step - transition_begin) / transition_steps) after
// transition_begin (the exponent floored with staircase), init_value before; bounded by
// end_value when given (from below when decaying, from above when growing).
Schedule exponential_decay(double init_value, std::int64_t transition_steps, double decay_rate,
                           std::int64_t transition_begin = 0, bool staircase = false,
                           std::optional<double> end_value = std::nullopt);
// init_value * ((1 - alpha) * (1 + cos(pi * min(step, decay_steps) / decay_steps)) / 2 + alpha).
Schedule cosine_decay(double init_value, std::int64_t decay_steps, double alpha = 0.0);
// (init_value - end_value) * (1 - s / transition_steps)^power + end_value with
// s = clip(step - transition_begin, 0, transition_steps).
Schedule polynomial_decay(double init_value, double end_value, double power,
                          std::int64_t transition_steps, std::int64_t transition_begin = 0);

}  // namespace glia::schedules
