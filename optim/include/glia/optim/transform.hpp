// Optimizers as composable gradient transformations (Optax's and Polaris' design).
// A transformation has init(params) -> state and update(updates, state, params) ->
// (updates, state), both written with Expr ops so they trace into the training step's
// graph. compose chains transformations; apply_updates adds updates to parameters.
//   glia::Transformation opt = glia::compose({glia::transforms::clip_by_global_norm(1.0),
//                                             glia::optimizers::adam(1e-3)});
#pragma once

#include <functional>
#include <map>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "glia/layers/build.hpp"

namespace glia {

// Optimizer state: a flat map from "/"-separated paths to values, e.g.
// "0/mu/dense_0/kernel" or "1/count". Composition prefixes each member's entries with
// its position. Flat string keys make the state a tree for jit and a path for
// checkpoints.
using OptState = std::map<std::string, Expr>;
using TensorOptState = std::map<std::string, Tensor>;

struct Transformation {
  std::function<OptState(const ExprParamMap& params)> init;
  // (gradients or updates so far, state, current params) -> (new updates, new state)
  std::function<std::pair<ExprParamMap, OptState>(
      const ExprParamMap& updates, const OptState& state, const ExprParamMap& params)>
      update;
};

Transformation compose(std::vector<Transformation> transformations);
// params + updates, leaf by leaf (same structure required).
ExprParamMap apply_updates(const ExprParamMap& params, const ExprParamMap& updates);

// A schedule maps the number of updates applied so far (an i64 scalar Expr) to a value.
using Schedule = std::function<Expr(const Expr& step)>;

// A learning rate: a number or a schedule.
class LearningRate {
 public:
  LearningRate(double value);       // NOLINT(google-explicit-constructor)
  LearningRate(Schedule schedule);  // NOLINT(google-explicit-constructor)
  // The rate at `step` (f32 scalar).
  Expr at(const Expr& step) const;
  bool is_schedule() const { return static_cast<bool>(schedule_); }
  double value() const { return value_; }

 private:
  double value_ = 0;
  Schedule schedule_;
};

// Leaf-wise helpers for writing transformations.
ExprParamMap tree_map(const ExprParamMap& a, const std::function<Expr(const Expr&)>& fn);
ExprParamMap tree_map(const ExprParamMap& a, const ExprParamMap& b,
                      const std::function<Expr(const Expr&, const Expr&)>& fn);
// State entries <prefix>/<layer>/<name> for each leaf of `tree`, and back.
void put_tree(OptState& state, const std::string& prefix, const ExprParamMap& tree);
ExprParamMap get_tree(const OptState& state, const std::string& prefix, const ExprParamMap& like);

}  // namespace glia
