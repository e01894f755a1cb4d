// The gradient transformations optimizers are composed of (Optax's and Polaris'
// combinators), and gradient accumulation over several steps. Each one is a
// Transformation (see transform.hpp); compose them in the order they apply:
//   glia::Transformation opt = glia::compose({glia::transforms::clip_by_global_norm(1.0),
//                                             glia::transforms::scale_by_adam(),
//                                             glia::transforms::scale(-1e-3)});
//
// State entries are named by purpose: per-leaf moments under "mu/<layer>/<param>",
// "nu/...", "trace/...", "sum_of_squares/...", and scalars "count" (the number of updates
// applied so far, an i64 scalar), "scale". Per-leaf state has the leaf's shape and dtype;
// quantities derived from the count are computed in f32 (f64 for f64 leaves).
// Hyperparameters are checked when a transformation is made: glia::Error names it.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "glia/optim/transform.hpp"

namespace glia::transforms {

// updates * step.
Transformation scale(double step);
// updates * scale, with the scale an f32 scalar kept in the state ("scale"), initialised to
// `init_value` and left unchanged by update, so that code outside the step can change it.
Transformation scale_by_state(double init_value);
// Adam: m / (sqrt(v + eps_root) + eps) with bias-corrected moments m and v.
Transformation scale_by_adam(double b1 = 0.9, double b2 = 0.999, double eps = 1e-8,
                             double eps_root = 0.0);
// Adagrad: g / sqrt(s + eps) with s the running sum of squares (0 where s == 0).
Transformation scale_by_rss(double initial_accumulator_value = 0.1, double eps = 1e-7);
// RMSProp: g / sqrt(v + eps) with v an exponential moving average of g^2.
Transformation scale_by_rms(double decay = 0.9, double eps = 1e-8, double initial_scale = 0.0);
// AdaBelief: like Adam with v the EMA of (g - m_previous)^2 (+ eps_root).
Transformation scale_by_belief(double b1 = 0.9, double b2 = 0.999, double eps = 1e-16,
                               double eps_root = 1e-16);
// Centered RMSProp: g / sqrt(v - m^2 + eps) with m and v the EMAs of g and g^2.
Transformation scale_by_stddev(double decay = 0.9, double eps = 1e-8, double initial_scale = 0.0);
// updates * schedule(count).
Transformation scale_by_schedule(Schedule schedule);
// Rectified Adam: the rectified Adam step once the SMA length reaches `threshold`, the
// bias-corrected first moment before.
Transformation scale_by_radam(double b1 = 0.9, double b2 = 0.999, double eps = 1e-8,
                              double eps_root = 0.0, double threshold = 5.0);
// Momentum: t = g + decay * t; the update is t, or g + decay * t with nesterov.
Transformation trace(double decay = 0.9, bool nesterov = false);
// Clips each element to [-max_delta, max_delta].
Transformation clip(double max_delta = 2.0);
// Rescales all updates by max_norm / global_norm when the global L2 norm exceeds max_norm.
Transformation clip_by_global_norm(double max_norm = 1.0);
// Gradient centralization: a leaf of rank > 1 minus its mean over all axes but the last
// (glia's kernels keep output features on the last axis); other leaves unchanged.
Transformation centralize();
// Decides per parameter (layer name, parameter name); a null mask selects all.
using ParamMask = std::function<bool(const std::string& layer, const std::string& param)>;
// updates + decay * params, for the parameters the mask selects.
Transformation add_decayed_weights(double decay = 0.0, ParamMask mask = {});
// LAMB's per-leaf trust ratio trust_coefficient * |p| / (|u| + eps) (norms at least
// min_norm; 1 where either norm is 0).
Transformation scale_by_trust_ratio(double min_norm = 0.0, double trust_coefficient = 1.0,
                                    double eps = 0.0);
// Adds Gaussian noise of variance eta / (1 + count)^gamma. The noise comes from the
// counter-based generator keyed by (seed, count): a run is reproducible.
Transformation add_noise(double eta = 0.01, double gamma = 0.55, std::uint64_t seed = 0);
// Yogi: like Adam with v updated additively, v - (1 - b2) sign(v - g^2) g^2.
Transformation scale_by_yogi(double b1 = 0.9, double b2 = 0.999, double eps = 1e-3,
                             double eps_root = 0.0, double initial_accumulator_value = 1e-6);

// Gradient accumulation (Optax's MultiSteps): gradients are summed over `every` calls;
// every `every`-th call applies `inner` to their mean, the other calls give zero updates
// and leave inner's state alone. Chosen per call with select, without host control flow.
// State: "mini_step" (i64 scalar, calls since the last inner step), "acc/<layer>/<param>"
// (the sum so far) and inner's state under "inner/".
Transformation accumulate_gradients(Transformation inner, std::int64_t every);

}  // namespace glia::transforms
