// Internal helpers of the recurrent layers: the loop over the steps (a scan, or traced
// step by step with `unroll`), masking padded steps, and the layers' JSON configs.
#pragma once

#include <functional>
#include <vector>

#include "glia/layers/recurrent.hpp"
#include "layer_config.hpp"

namespace glia::detail {

struct Steps {
  Expr outputs;              // the hidden state of every step, [T, N, ...]; undefined unless
                             // return_sequences
  std::vector<Expr> finals;  // the final states, the hidden state first
};

// Runs `step(states, row, recurrent)` over xw [T, N, ..., G] (every step's projected input)
// from `init`. The step returns the new states, then values the loop stores for reverse
// mode only. `keep` [T, N] bool (or undefined: all steps): a step it drops leaves the
// states as they are and outputs zeros.
Steps run_steps(
    const Expr& xw, const std::vector<Expr>& init, const Expr& keep,
    const std::vector<Expr>& recurrent,
    const std::function<std::vector<Expr>(const std::vector<Expr>& states, const Expr& row,
                                          const std::vector<Expr>& recurrent)>& step,
    const RecurrentOptions& o);

// `head` (the layer's own keys) followed by the RecurrentOptions every recurrent layer has.
std::string recurrent_config(ConfigWriter head, const RecurrentOptions& o);

}  // namespace glia::detail
