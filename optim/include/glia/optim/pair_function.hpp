// A loss or metric of (y_true, y_pred) as an object: called like a function, options last
// and defaulted, it also converts to a LossFn or MetricFn as it stands, and `with` fixes
// its options:
//   trainer(model, losses::categorical_cross_entropy, optimizers::adam(1e-3));
//   trainer(model, losses::categorical_cross_entropy.with({.from_logits = true}), ...);
//   Expr l = losses::huber(y, p, {.delta = 2});
#pragma once

#include <functional>

#include "glia/core/expr.hpp"

namespace glia {

template <class Options, Expr (*F)(const Expr&, const Expr&, const Options&)>
struct PairFunction {
  Expr operator()(const Expr& y_true, const Expr& y_pred, const Options& options = {}) const {
    return F(y_true, y_pred, options);
  }
  // The function with these options, as a (y_true, y_pred) function.
  std::function<Expr(const Expr&, const Expr&)> with(Options options) const {
    return [options](const Expr& y_true, const Expr& y_pred) { return F(y_true, y_pred, options); };
  }
};

}  // namespace glia
