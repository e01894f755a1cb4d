// Dropout layers: identity in inference mode; in train mode a Bernoulli keep-mask drawn
// from the layer's own key (so the same key gives the same mask on every backend).
#include "glia/layers/dropout.hpp"

#include <cmath>

#include "layer_util.hpp"

namespace glia {

namespace {

// SELU's alpha * scale: the value a dropped SELU activation saturates to, negated.
constexpr double kAlphaPrime = 1.7580993408473766;

enum class Kind { plain, alpha };

// The mask's shape: every element, or (per_channel) one draw per [N, C] in channels-last
// inputs, broadcast over the spatial axes.
Shape mask_shape(const Expr& x, bool per_channel) {
  if (!per_channel) return x.shape();
  check(x.rank() >= 2, "expected an input of rank >= 2 ([N, ..., C]), got ", x.type());
  std::vector<std::int64_t> dims(static_cast<std::size_t>(x.rank()), 1);
  dims.front() = x.dim(0);
  dims.back() = x.dim(x.rank() - 1);
  return Shape(dims);
}

Model make_dropout(const Model& x, const DropoutOptions& o, const char* type, Kind kind,
                   bool per_channel) {
  double rate = o.rate;
  check(rate >= 0 && rate < 1, type, ": rate must be in [0, 1), got ", rate);
  Model m = layer(type, {x},
                  [rate, kind, per_channel](LayerContext& c) {
                    const Expr& in = c.input();
                    check(is_float(in.dtype()), "expected a floating-point input, got ", in.type());
                    if (!c.training() || rate == 0) return in;
                    Expr keep = random::bernoulli(c.key(), 1.0 - rate, mask_shape(in, per_channel));
                    keep = broadcast_to(keep, in.shape());
                    if (kind == Kind::plain) return select(keep, in * (1.0 / (1.0 - rate)), 0.0);
                    // PyTorch's alpha dropout: dropped values become -alpha', then a * y + b
                    // restores zero mean and unit variance for a standard normal input.
                    double a = 1.0 / std::sqrt((kAlphaPrime * kAlphaPrime * rate + 1) * (1 - rate));
                    double b = kAlphaPrime * a * rate;
                    return a * select(keep, in, -kAlphaPrime) + b;
                  },
                  {}, {o.name});
  // Stochastic: the model tracer gives the layer a key of its own in train mode.
  auto node = std::make_shared<LayerNode>(m.node());
  node->stochastic = true;
  node->options = cat("rate=", rate);
  node->config = detail::ConfigWriter().number("rate", rate).str();
  return Model(std::move(node));
}

}  // namespace

Model dropout(const Model& x, const DropoutOptions& o) {
  return make_dropout(x, o, "dropout", Kind::plain, false);
}
Model alpha_dropout(const Model& x, const DropoutOptions& o) {
  return make_dropout(x, o, "alpha_dropout", Kind::alpha, false);
}
Model feature_alpha_dropout(const Model& x, const DropoutOptions& o) {
  return make_dropout(x, o, "feature_alpha_dropout", Kind::alpha, true);
}
Model spatial_dropout(const Model& x, const DropoutOptions& o) {
  return make_dropout(x, o, "spatial_dropout", Kind::plain, true);
}

}  // namespace glia
