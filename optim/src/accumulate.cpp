// Gradient accumulation as a transformation (Optax's MultiSteps): the inner
// transformation runs on every call, and select keeps its result (and its new state) only
// on every `every`-th call, so the step's graph has no host control flow.
#include "glia/optim/transforms.hpp"
#include "transform_util.hpp"

namespace glia::transforms {

using namespace optim_detail;

Transformation accumulate_gradients(Transformation inner, std::int64_t every) {
  check(every >= 1, "accumulate_gradients: every must be >= 1, got ", every);
  check(static_cast<bool>(inner.init) && static_cast<bool>(inner.update),
        "accumulate_gradients: the inner transformation has no init or update function");
  Transformation t;
  t.init = [inner](const ExprParamMap& params) {
    OptState state;
    state["mini_step"] = zero_count();
    put_tree(state, "acc", full_like(params, 0));
    put_sub_state(state, "inner", inner.init(params));
    return state;
  };
  t.update = [inner, every](const ExprParamMap& g, const OptState& state,
                            const ExprParamMap& params) {
    const Expr& mini_step = state_entry(state, "mini_step", "accumulate_gradients");
    ExprParamMap acc = tree_map(g, get_tree(state, "acc", g),
                                [](const Expr& x, const Expr& a) { return a + cast_like(x, a); });
    Expr emit = equal(mini_step, every - 1);
    ExprParamMap mean =
        tree_map(acc, [every](const Expr& a) { return a / static_cast<double>(every); });
    OptState inner_state = sub_state(state, "inner");
    auto [inner_updates, inner_next] = inner.update(mean, inner_state, params);

    ExprParamMap out = tree_map(
        inner_updates, [&emit](const Expr& u) { return select(emit, u, full_like(u, 0)); });
    OptState kept;
    for (const auto& [key, value] : inner_next) {
      auto old = inner_state.find(key);
      kept[key] = old == inner_state.end() ? value : select(emit, value, old->second);
    }
    OptState next;
    next["mini_step"] = select(emit, 0, increment(mini_step));
    put_tree(next, "acc",
             tree_map(acc, [&emit](const Expr& a) { return select(emit, full_like(a, 0), a); }));
    put_sub_state(next, "inner", kept);
    return std::pair{out, next};
  };
  return t;
}

}  // namespace glia::transforms
