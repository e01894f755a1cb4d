// Internal: what the training and evaluation steps check and compute around the traced
// graph: facts about the model (its inputs, frozen parameters, stochastic layers), the
// batch's examples from x, the optimizer's state kept the same, and the scaled update.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "glia/optim/step.hpp"

namespace glia::detail {

using FrozenSet = std::set<std::pair<std::string, std::string>>;

struct ModelFacts {
  std::vector<std::string> inputs;  // the model's input layers, by name
  std::string input;                // the only one, where there is one
  FrozenSet frozen;                 // (layer, parameter)
  bool stochastic = false;
};
ModelFacts model_facts(const Model& model, const char* who);

// The new optimizer state must have the old one's entries and types, or every call would
// trace anew; likewise the model state the forward pass returns.
void check_same_state(const OptState& before, const OptState& after);
void check_same_model_state(const ExprParamMap& before, const ExprParamMap& after);

// params + lr_scale * updates, leaf by leaf, in each parameter's dtype; frozen
// parameters stay as they are whatever the optimizer proposes (weight decay, noise).
ExprParamMap scaled_update(const ExprParamMap& params, const ExprParamMap& updates,
                           const Expr& lr_scale, const FrozenSet& frozen);

// The batch's examples, from x: one tensor for a model with one input (-1: no axis), or
// named tensors, exactly the model's inputs, each defined, all with the same examples.
std::int64_t examples_of(const Tensor& x, const char* who, const ModelFacts& facts);
std::int64_t examples_of(const std::map<std::string, Tensor>& x, const char* who,
                         const ModelFacts& facts);

}  // namespace glia::detail
