// The transformations without per-leaf moments: scaling (fixed, by state, by schedule),
// clipping, centralization, weight decay, LAMB's trust ratio and annealed noise.
#include <cstdint>

#include "glia/optim/transforms.hpp"
#include "transform_util.hpp"

namespace glia::transforms {

using namespace optim_detail;

namespace {

using StatelessFn =
    std::function<ExprParamMap(const ExprParamMap& updates, const ExprParamMap& params)>;

Transformation stateless(StatelessFn fn) {
  Transformation t;
  t.init = [](const ExprParamMap&) { return OptState{}; };
  t.update = [fn = std::move(fn)](const ExprParamMap& updates, const OptState& state,
                                  const ExprParamMap& params) {
    return std::pair{fn(updates, params), state};
  };
  return t;
}

// Updates times a scalar, cast to each leaf's dtype.
ExprParamMap scaled(const ExprParamMap& updates, const Expr& factor) {
  return tree_map(updates, [&factor](const Expr& u) { return u * cast_like(factor, u); });
}

// The L2 norm of one leaf (a scalar of its dtype).
Expr norm(const Expr& x) { return sqrt(sum(x * x)); }

// max(norm(x), min_norm), Optax's safe_norm.
Expr safe_norm(const Expr& x, double min_norm) {
  Expr n = norm(x);
  return select(less_equal(n, min_norm), min_norm, n);
}

}  // namespace

Transformation scale(double step) {
  check_finite(step, "scale", "step");
  return stateless([step](const ExprParamMap& updates, const ExprParamMap&) {
    return tree_map(updates, [step](const Expr& u) { return u * step; });
  });
}

Transformation scale_by_state(double init_value) {
  check_finite(init_value, "scale_by_state", "init_value");
  Transformation t;
  t.init = [init_value](const ExprParamMap&) {
    return OptState{{"scale", scalar(init_value, DType::f32)}};
  };
  t.update = [](const ExprParamMap& updates, const OptState& state, const ExprParamMap&) {
    const Expr& s = state_entry(state, "scale", "scale_by_state");
    return std::pair{scaled(updates, s), state};
  };
  return t;
}

Transformation scale_by_schedule(Schedule schedule) {
  check(static_cast<bool>(schedule), "scale_by_schedule: the schedule is an empty function");
  LearningRate rate(std::move(schedule));  // checks what the schedule returns
  Transformation t;
  t.init = [](const ExprParamMap&) { return OptState{{"count", zero_count()}}; };
  t.update = [rate](const ExprParamMap& updates, const OptState& state, const ExprParamMap&) {
    const Expr& count = state_entry(state, "count", "scale_by_schedule");
    ExprParamMap out = scaled(updates, rate.at(count));
    return std::pair{out, OptState{{"count", increment(count)}}};
  };
  return t;
}

Transformation clip(double max_delta) {
  check_non_negative(max_delta, "clip", "max_delta");
  return stateless([max_delta](const ExprParamMap& updates, const ExprParamMap&) {
    return tree_map(updates,
                    [max_delta](const Expr& u) { return glia::clip(u, -max_delta, max_delta); });
  });
}

Transformation clip_by_global_norm(double max_norm) {
  check_positive(max_norm, "clip_by_global_norm", "max_norm");
  return stateless([max_norm](const ExprParamMap& updates, const ExprParamMap&) {
    if (updates.empty()) return updates;
    const DType c = scalar_dtype(updates);
    Expr total;
    for (const auto& [layer, leaves] : updates)
      for (const auto& [name, u] : leaves) {
        Expr s = cast(sum(u * u), c);
        total = total.defined() ? total + s : s;
      }
    Expr g_norm = sqrt(total);
    Expr trigger = less(g_norm, max_norm);
    return tree_map(updates, [&](const Expr& u) {
      return select(trigger, u, u / cast_like(g_norm, u) * max_norm);
    });
  });
}

Transformation centralize() {
  return stateless([](const ExprParamMap& updates, const ExprParamMap&) {
    return tree_map(updates, [](const Expr& u) {
      if (u.rank() <= 1) return u;
      Ints axes;
      for (int a = 0; a + 1 < u.rank(); ++a) axes.push_back(a);
      return u - mean(u, axes, /*keep_axes=*/true);
    });
  });
}

Transformation add_decayed_weights(double decay, ParamMask mask) {
  check_non_negative(decay, "add_decayed_weights", "decay");
  return stateless([decay, mask = std::move(mask)](const ExprParamMap& updates,
                                                   const ExprParamMap& params) {
    ExprParamMap out = updates;
    for (auto& [layer, leaves] : out)
      for (auto& [name, u] : leaves) {
        if (mask && !mask(layer, name)) continue;
        auto l = params.find(layer);
        check(l != params.end() && l->second.count(name) > 0, "add_decayed_weights: no parameter ",
              layer, "/", name, " for the update of that name");
        const Expr& p = l->second.at(name);
        check(p.shape() == u.shape(), "add_decayed_weights: parameter ", layer, "/", name, " is ",
              p.type(), " but its update is ", u.type());
        u = u + cast_like(p, u) * decay;
      }
    return out;
  });
}

Transformation scale_by_trust_ratio(double min_norm, double trust_coefficient, double eps) {
  check_non_negative(min_norm, "scale_by_trust_ratio", "min_norm");
  check_positive(trust_coefficient, "scale_by_trust_ratio", "trust_coefficient");
  check_non_negative(eps, "scale_by_trust_ratio", "eps");
  return stateless([=](const ExprParamMap& updates, const ExprParamMap& params) {
    return tree_map(updates, params, [&](const Expr& u, const Expr& p) {
      Expr param_norm = safe_norm(cast_like(p, u), min_norm);
      Expr update_norm = safe_norm(u, min_norm);
      Expr ratio = param_norm * trust_coefficient / (update_norm + eps);
      Expr zero_norm = logical_or(equal(param_norm, 0.0), equal(update_norm, 0.0));
      return u * select(zero_norm, 1.0, ratio);
    });
  });
}

Transformation add_noise(double eta, double gamma, std::uint64_t seed) {
  check_non_negative(eta, "add_noise", "eta");
  check_non_negative(gamma, "add_noise", "gamma");
  Transformation t;
  t.init = [](const ExprParamMap&) { return OptState{{"count", zero_count()}}; };
  t.update = [=](const ExprParamMap& updates, const OptState& state, const ExprParamMap&) {
    const Expr& count = state_entry(state, "count", "add_noise");
    TraceScope scope(*count.graph());
    Expr count_inc = increment(count);
    Expr c = cast(count_inc, scalar_dtype(updates));
    Expr stddev = sqrt(eta / pow(c, gamma));
    // This step's key: the seed's key hashed, with the count added to its second word and
    // hashed again (fold_in with a traced count); each leaf then folds in its position.
    Expr hashed = random::bits(Expr(random::key(seed)), Shape{2});
    Expr word = reshape(cast(count, DType::u32), {1});
    Expr mixed = hashed + concatenate({zeros(Shape{1}, DType::u32), word});
    Expr step_key = random::bits(mixed, Shape{2});
    ExprParamMap out;
    std::uint32_t position = 0;
    for (const auto& [layer, leaves] : updates)
      for (const auto& [name, u] : leaves) {
        check(is_float(u.dtype()), "add_noise: update ", layer, "/", name,
              " must be floating-point, got ", u.type());
        Expr noise =
            random::normal(random::fold_in(step_key, position++), u.shape(), 0, 1, u.dtype());
        out[layer][name] = u + noise * cast_like(stddev, u);
      }
    return std::pair{out, OptState{{"count", count_inc}}};
  };
  return t;
}

}  // namespace glia::transforms
