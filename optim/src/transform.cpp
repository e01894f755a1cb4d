// The core of the transformation API: compose, apply_updates, learning rates and the
// leaf-wise tree helpers that transformations are written with.
#include "glia/optim/transform.hpp"

#include "transform_util.hpp"

namespace glia {

namespace {

// glia::Error unless a and b have the same layers and parameter names.
void check_same_structure(const ExprParamMap& a, const ExprParamMap& b, std::string_view what) {
  auto describe = [](const ExprParamMap& t) {
    std::string s;
    for (const auto& [layer, leaves] : t)
      for (const auto& [name, leaf] : leaves) s += (s.empty() ? "" : ", ") + layer + "/" + name;
    return "{" + s + "}";
  };
  bool same = a.size() == b.size();
  for (auto ia = a.begin(), ib = b.begin(); same && ia != a.end(); ++ia, ++ib) {
    same = ia->first == ib->first && ia->second.size() == ib->second.size();
    for (auto ja = ia->second.begin(), jb = ib->second.begin(); same && ja != ia->second.end();
         ++ja, ++jb)
      same = ja->first == jb->first;
  }
  check(same, what, ": the two trees differ in structure: ", describe(a), " vs ", describe(b));
}

std::string leaf_key(const std::string& prefix, const std::string& layer, const std::string& name) {
  return prefix.empty() ? layer + "/" + name : prefix + "/" + layer + "/" + name;
}

}  // namespace

namespace optim_detail {

const Expr& state_entry(const OptState& state, const std::string& key, std::string_view who) {
  auto it = state.find(key);
  if (it != state.end() && it->second.defined()) return it->second;
  std::string known;
  for (const auto& [k, v] : state) known += (known.empty() ? "" : ", ") + k;
  throw Error(cat(who, ": the optimizer state has no entry '", key,
                  "' (it has: ", known.empty() ? "nothing" : known,
                  "); was it made by this transformation's init for these parameters?"));
}

}  // namespace optim_detail

Transformation compose(std::vector<Transformation> transformations) {
  for (std::size_t i = 0; i < transformations.size(); ++i)
    check(
        static_cast<bool>(transformations[i].init) && static_cast<bool>(transformations[i].update),
        "compose: transformation ", i, " has no init or update function");
  auto members = std::make_shared<const std::vector<Transformation>>(std::move(transformations));
  Transformation t;
  t.init = [members](const ExprParamMap& params) {
    OptState state;
    for (std::size_t i = 0; i < members->size(); ++i)
      optim_detail::put_sub_state(state, std::to_string(i), (*members)[i].init(params));
    return state;
  };
  t.update = [members](const ExprParamMap& updates, const OptState& state,
                       const ExprParamMap& params) {
    ExprParamMap u = updates;
    OptState next;
    for (std::size_t i = 0; i < members->size(); ++i) {
      const std::string prefix = std::to_string(i);
      auto [member_updates, member_state] =
          (*members)[i].update(u, optim_detail::sub_state(state, prefix), params);
      u = std::move(member_updates);
      optim_detail::put_sub_state(next, prefix, member_state);
    }
    return std::pair{u, next};
  };
  return t;
}

ExprParamMap apply_updates(const ExprParamMap& params, const ExprParamMap& updates) {
  check_same_structure(params, updates, "apply_updates");
  return tree_map(params, updates, [](const Expr& p, const Expr& u) {
    check(p.shape() == u.shape(), "apply_updates: a parameter of type ", p.type(),
          " got an update of type ", u.type());
    return p + optim_detail::cast_like(u, p);
  });
}

// ---- Learning rates -------------------------------------------------------------------

LearningRate::LearningRate(double value) : value_(value) {}

LearningRate::LearningRate(Schedule schedule) : schedule_(std::move(schedule)) {
  check(static_cast<bool>(schedule_), "LearningRate: the schedule is an empty function");
}

Expr LearningRate::at(const Expr& step) const {
  check(step.defined(), "LearningRate::at: the step is an undefined Expr");
  TraceScope scope(*step.graph());
  if (!schedule_) return scalar(value_, DType::f32);
  Expr rate = schedule_(step);
  check(rate.defined() && rate.graph() == step.graph(),
        "LearningRate: the schedule returned an undefined Expr or one of another trace");
  check(rate.shape().numel() == 1 && is_float(rate.dtype()),
        "LearningRate: a schedule must return a floating-point scalar, got ", rate.type());
  if (rate.rank() != 0) rate = reshape(rate, {});
  return rate.dtype() == DType::f32 ? rate : cast(rate, DType::f32);
}

// ---- Trees ------------------------------------------------------------------------------

ExprParamMap tree_map(const ExprParamMap& a, const std::function<Expr(const Expr&)>& fn) {
  ExprParamMap out;
  for (const auto& [layer, leaves] : a)
    for (const auto& [name, leaf] : leaves) out[layer][name] = fn(leaf);
  return out;
}

ExprParamMap tree_map(const ExprParamMap& a, const ExprParamMap& b,
                      const std::function<Expr(const Expr&, const Expr&)>& fn) {
  check_same_structure(a, b, "tree_map");
  ExprParamMap out;
  for (const auto& [layer, leaves] : a)
    for (const auto& [name, leaf] : leaves) out[layer][name] = fn(leaf, b.at(layer).at(name));
  return out;
}

void put_tree(OptState& state, const std::string& prefix, const ExprParamMap& tree) {
  for (const auto& [layer, leaves] : tree)
    for (const auto& [name, leaf] : leaves) state[leaf_key(prefix, layer, name)] = leaf;
}

ExprParamMap get_tree(const OptState& state, const std::string& prefix, const ExprParamMap& like) {
  ExprParamMap out;
  for (const auto& [layer, leaves] : like)
    for (const auto& [name, leaf] : leaves) {
      const Expr& e = optim_detail::state_entry(state, leaf_key(prefix, layer, name), "get_tree");
      check(e.shape() == leaf.shape(), "get_tree: state entry '", leaf_key(prefix, layer, name),
            "' is ", e.type(), " but its parameter is ", leaf.type());
      out[layer][name] = e;
    }
  return out;
}

}  // namespace glia
