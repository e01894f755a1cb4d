// What the steps check and compute around the traced graph (step_checks.hpp).
#include "step_checks.hpp"

#include <algorithm>

namespace glia::detail {

namespace {

std::vector<std::string> input_names(const Model& model) {
  std::vector<std::string> names;
  for (const ResolvedLayer& r : resolve_layers(model))
    if (!r.node->forward) names.push_back(r.name);
  return names;
}

std::string keys_text(const OptState& s) {
  std::string out;
  for (const auto& [k, v] : s) out += (out.empty() ? "" : ", ") + k + " " + v.type().to_string();
  return out.empty() ? "(none)" : out;
}

std::string names_text(const std::vector<std::string>& names) {
  std::string s;
  for (const std::string& n : names) s += (s.empty() ? "" : ", ") + n;
  return s;
}

}  // namespace

std::int64_t examples_of(const Tensor& x, const char* who, const ModelFacts& facts) {
  check(x.defined(), who, ": x must be a defined tensor");
  if (facts.inputs.size() != 1)
    throw Error(cat(who, ": the model has ", facts.inputs.size(), " inputs (",
                    names_text(facts.inputs), "): pass x as a map from input name to tensor"));
  return x.rank() >= 1 ? x.shape()[0] : -1;
}

std::int64_t examples_of(const std::map<std::string, Tensor>& x, const char* who,
                         const ModelFacts& facts) {
  const std::string names = names_text(facts.inputs);
  std::int64_t examples = -1;
  std::string first;
  for (const auto& [name, t] : x) {
    check(std::find(facts.inputs.begin(), facts.inputs.end(), name) != facts.inputs.end(), who,
          ": the model has no input '", name, "' (its inputs: ", names, ")");
    check(t.defined(), who, ": input '", name, "' is an undefined tensor");
    check(t.rank() >= 1, who, ": input '", name, "' needs an examples axis, got ", t.type());
    if (examples < 0) examples = t.shape()[0], first = name;
    check(t.shape()[0] == examples, who, ": input '", name, "' ", t.type(), " and input '", first,
          "' must hold the same number of examples");
  }
  for (const std::string& n : facts.inputs)
    check(x.count(n) != 0, who, ": no tensor for input '", n, "' (its inputs: ", names, ")");
  return examples;
}

ModelFacts model_facts(const Model& model, const char* who) {
  check(model.defined(), who, ": the model is undefined");
  ModelFacts f;
  f.inputs = input_names(model);
  if (f.inputs.size() == 1) f.input = f.inputs[0];
  for (const ResolvedLayer& r : resolve_layers(model)) {
    const LayerNode& node = *r.node;
    f.stochastic = f.stochastic || node.stochastic;
    if (!node.frozen) continue;
    for (const ParamSpec& p : node.params)
      if (!p.is_state && node.frozen(r.name, p.name)) f.frozen.insert({r.name, p.name});
  }
  return f;
}

void check_same_state(const OptState& before, const OptState& after) {
  bool same = before.size() == after.size();
  for (auto a = before.begin(), b = after.begin(); same && a != before.end(); ++a, ++b)
    same = a->first == b->first && b->second.defined() && a->second.type() == b->second.type();
  check(same, "TrainStep: the optimizer's update changed its state from {", keys_text(before),
        "} to {", keys_text(after),
        "} (was the TrainState made by TrainStep::init with this optimizer?)");
}

void check_same_model_state(const ExprParamMap& before, const ExprParamMap& after) {
  for (const auto& [layer, entries] : after)
    for (const auto& [name, v] : entries) {
      auto l = before.find(layer);
      check(l != before.end() && l->second.count(name) != 0,
            "TrainStep: the forward pass made a "
            "new state entry ",
            layer, "/", name, " that the model state lacks");
      const TensorType& want = l->second.at(name).type();
      check(v.type() == want, "TrainStep: state ", layer, "/", name, " changed type from ",
            want.to_string(), " to ", v.type());
    }
}

ExprParamMap scaled_update(const ExprParamMap& params, const ExprParamMap& updates,
                           const Expr& lr_scale, const FrozenSet& frozen) {
  ExprParamMap out;
  for (const auto& [layer, entries] : params)
    for (const auto& [name, p] : entries) {
      auto l = updates.find(layer);
      check(l != updates.end() && l->second.count(name) != 0,
            "TrainStep: the optimizer gave no update for parameter ", layer, "/", name);
      const Expr& u = l->second.at(name);
      check(u.defined() && u.shape() == p.shape(), "TrainStep: the update of ", layer, "/", name,
            " is ", u.defined() ? u.type().to_string() : "undefined", ", expected the shape of ",
            p.type());
      if (frozen.count({layer, name}) != 0) {
        out[layer][name] = p;
        continue;
      }
      Expr next = p + u * cast(lr_scale, u.dtype());
      out[layer][name] = next.dtype() == p.dtype() ? next : cast(next, p.dtype());
    }
  return out;
}

}  // namespace glia::detail
