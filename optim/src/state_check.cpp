// Whether a saved state fits a model and an optimizer: the same entries with the same
// shapes and dtypes. Used before resuming a run and when loading a checkpoint for a
// model, so a mismatch is one clear message rather than an error deep inside a step.
#include <set>

#include "loop_impl.hpp"

namespace glia {

namespace {

using Types = std::map<std::string, TensorType>;

Types flatten(const ParamMap& m) {
  Types out;
  for (const auto& [layer, entries] : m)
    for (const auto& [name, t] : entries) out[layer + "/" + name] = t.type();
  return out;
}

// The first difference between what is expected and what was saved.
void compare(const Types& want, const Types& got, const std::string& kind, const std::string& who,
             const std::string& missing_hint) {
  std::set<std::string> keys;
  for (const auto& [k, v] : want) keys.insert(k);
  for (const auto& [k, v] : got) keys.insert(k);
  for (const std::string& k : keys) {
    auto w = want.find(k);
    auto g = got.find(k);
    // Separate branches: check() would build every message, end iterators included.
    if (g == got.end())
      throw Error(cat(who, ": the saved state has no ", kind, " ", k, " (", w->second.to_string(),
                      ")", missing_hint));
    if (w == want.end())
      throw Error(cat(who, ": the saved state has ", kind, " ", k, " (", g->second.to_string(),
                      ") that is not expected", missing_hint));
    check(w->second == g->second, who, ": ", kind, " ", k, " is ", g->second.to_string(),
          " in the saved state, expected ", w->second.to_string());
  }
}

}  // namespace

void check_model_entries(const Model& model, const ModelState& got, const std::string& who) {
  Types params, state;
  for (const LayerShapes& layer : layer_shapes(model, default_input_types(model)))
    for (const LayerShapes::Param& p : layer.params)
      (p.is_state ? state : params)[layer.name + "/" + p.name] = p.type;
  const std::string hint = " (was it saved from another model?)";
  compare(params, flatten(got.params), "parameter", who, hint);
  compare(state, flatten(got.state), "model state entry", who, hint);
}

void check_optimizer_entries(const TensorOptState& expected, const TensorOptState& got,
                             const std::string& who) {
  Types want, have;
  for (const auto& [k, t] : expected) want[k] = t.type();
  for (const auto& [k, t] : got) have[k] = t.type();
  compare(want, have, "optimizer entry", who, " (was it saved with another optimizer?)");
}

}  // namespace glia
