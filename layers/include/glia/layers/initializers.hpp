// Parameter initializers (Axon's 14), drawn from the counter-based PRNG so the same
// seed gives the same parameters on every backend. Fans follow the channels-last
// kernel layout: for a shape [..spatial, in, out], fan_in = in * prod(spatial) and
// fan_out = out * prod(spatial); a vector has fan_in = fan_out = its length.
//   glia::DenseOptions o{.kernel_initializer = glia::initializers::he_normal()};
#pragma once

#include <string>
#include <string_view>

#include "glia/layers/model.hpp"

namespace glia::initializers {

Initializer zeros();
Initializer ones();
Initializer full(double value);
Initializer identity(double scale = 1.0);  // rank 2: scale * eye (rectangular allowed)
Initializer uniform(double scale = 0.01);  // U(-scale, scale)
Initializer normal(double mean = 0.0, double stddev = 0.01);
Initializer lecun_uniform(double scale = 1.0);
Initializer lecun_normal(double scale = 1.0);
Initializer glorot_uniform(double scale = 1.0);
Initializer glorot_normal(double scale = 1.0);
Initializer he_uniform(double scale = 2.0);
Initializer he_normal(double scale = 2.0);

enum class FanMode { fan_in, fan_out, fan_avg };
enum class Distribution { normal, truncated_normal, uniform };
// Variance scale / fan: uniform in +-sqrt(3 v), normal with stddev sqrt(v), or a normal
// truncated to +-2 stddev rescaled to have variance v (as JAX and Keras).
Initializer variance_scaling(double scale = 1.0, FanMode mode = FanMode::fan_in,
                             Distribution distribution = Distribution::normal);
// A (semi-)orthogonal matrix (rank >= 2: flattened to [prod(shape[:-1]), shape[-1]]),
// from the QR decomposition of a normal matrix, times `scale`.
Initializer orthogonal(double scale = 1.0);

// By name: "zeros", "glorot_uniform", ... (defaults for their parameters).
Initializer by_name(std::string_view name);

}  // namespace glia::initializers
