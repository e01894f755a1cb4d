// Parameter initializers.
#include <cmath>

#include "glia/layers/initializers.hpp"

namespace glia::initializers {

Initializer zeros() {
  return {"zeros", [](const Expr&, const TensorType& t) { return glia::zeros(t.shape, t.dtype); }};
}

Initializer ones() {
  return {"ones", [](const Expr&, const TensorType& t) { return glia::ones(t.shape, t.dtype); }};
}

Initializer glorot_uniform(double scale) {
  return {
      "glorot_uniform", [scale](const Expr& key, const TensorType& t) {
        std::int64_t fan_in = t.shape.rank() >= 2 ? t.shape[t.shape.rank() - 2] : t.shape.numel();
        std::int64_t fan_out = t.shape.rank() >= 2 ? t.shape[t.shape.rank() - 1] : t.shape.numel();
        double limit = std::sqrt(3.0 * scale / ((fan_in + fan_out) / 2.0));
        return random::uniform(key, t.shape, -limit, limit, t.dtype);
      }};
}

}  // namespace glia::initializers
