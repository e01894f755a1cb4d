// The transformations that keep per-leaf moments of the gradients: Adam and its relatives
// (AdaBelief, RAdam, Yogi), Adagrad's sum of squares, RMSProp (plain and centered) and
// momentum. The formulas follow Optax's.
#include "glia/optim/transforms.hpp"
#include "transform_util.hpp"

namespace glia::transforms {

using namespace optim_detail;

namespace {

// (1 - decay) * g^order + decay * moment, leaf by leaf.
ExprParamMap update_moment(const ExprParamMap& g, const ExprParamMap& moment, double decay,
                           int order) {
  return tree_map(g, moment, [=](const Expr& x, const Expr& m) {
    Expr p = order == 1 ? x : x * x;
    return cast_like(p, m) * (1.0 - decay) + m * decay;
  });
}

// moment / (1 - decay^count) with the correction computed in the scalar dtype of the leaf,
// as a multiply by the correction's reciprocal (one scalar division a step, as PyTorch's
// step size; a division an element would leave Adam's update bound by the divider).
ExprParamMap bias_corrected(const ExprParamMap& moment, double decay, const Expr& count) {
  return tree_map(moment, [&](const Expr& m) {
    Expr c = cast(count, scalar_dtype(m.dtype()));
    return m * cast_like(reciprocal(bias_correction(decay, c)), m);
  });
}

// The shared init of the Adam family: mu and nu of the leaves' shapes, and a count.
OptState init_moments(const ExprParamMap& params, double mu0, double nu0) {
  OptState state;
  put_tree(state, "mu", full_like(params, mu0));
  put_tree(state, "nu", full_like(params, nu0));
  state["count"] = zero_count();
  return state;
}

// m / (sqrt(v + eps_root) + eps), leaf by leaf.
ExprParamMap adam_direction(const ExprParamMap& m, const ExprParamMap& v, double eps,
                            double eps_root) {
  return tree_map(m, v,
                  [=](const Expr& a, const Expr& b) { return a / (sqrt(b + eps_root) + eps); });
}

void check_adam_like(std::string_view who, double b1, double b2, double eps, double eps_root) {
  check_rate(b1, who, "b1");
  check_rate(b2, who, "b2");
  check_non_negative(eps, who, "eps");
  check_non_negative(eps_root, who, "eps_root");
}

}  // namespace

Transformation scale_by_adam(double b1, double b2, double eps, double eps_root) {
  check_adam_like("scale_by_adam", b1, b2, eps, eps_root);
  Transformation t;
  t.init = [](const ExprParamMap& params) { return init_moments(params, 0, 0); };
  t.update = [=](const ExprParamMap& g, const OptState& state, const ExprParamMap&) {
    ExprParamMap mu = update_moment(g, get_tree(state, "mu", g), b1, 1);
    ExprParamMap nu = update_moment(g, get_tree(state, "nu", g), b2, 2);
    Expr count = increment(state_entry(state, "count", "scale_by_adam"));
    ExprParamMap out =
        adam_direction(bias_corrected(mu, b1, count), bias_corrected(nu, b2, count), eps, eps_root);
    OptState next{{"count", count}};
    put_tree(next, "mu", mu);
    put_tree(next, "nu", nu);
    return std::pair{out, next};
  };
  return t;
}

Transformation scale_by_rss(double initial_accumulator_value, double eps) {
  check_non_negative(initial_accumulator_value, "scale_by_rss", "initial_accumulator_value");
  check_non_negative(eps, "scale_by_rss", "eps");
  Transformation t;
  t.init = [=](const ExprParamMap& params) {
    OptState state;
    put_tree(state, "sum_of_squares", full_like(params, initial_accumulator_value));
    return state;
  };
  t.update = [=](const ExprParamMap& g, const OptState& state, const ExprParamMap&) {
    ExprParamMap sos =
        tree_map(g, get_tree(state, "sum_of_squares", g),
                 [](const Expr& x, const Expr& s) { return s + cast_like(x * x, s); });
    ExprParamMap out = tree_map(g, sos, [=](const Expr& x, const Expr& s) {
      // A leaf that has only seen zeros keeps a zero update (rsqrt(eps) could be huge).
      return x * cast_like(select(greater(s, 0.0), rsqrt(s + eps), 0.0), x);
    });
    OptState next;
    put_tree(next, "sum_of_squares", sos);
    return std::pair{out, next};
  };
  return t;
}

Transformation scale_by_rms(double decay, double eps, double initial_scale) {
  check_rate(decay, "scale_by_rms", "decay");
  check_non_negative(eps, "scale_by_rms", "eps");
  check_non_negative(initial_scale, "scale_by_rms", "initial_scale");
  Transformation t;
  t.init = [=](const ExprParamMap& params) {
    OptState state;
    put_tree(state, "nu", full_like(params, initial_scale));
    return state;
  };
  t.update = [=](const ExprParamMap& g, const OptState& state, const ExprParamMap&) {
    ExprParamMap nu = update_moment(g, get_tree(state, "nu", g), decay, 2);
    ExprParamMap out = tree_map(
        g, nu, [=](const Expr& x, const Expr& v) { return x * cast_like(rsqrt(v + eps), x); });
    OptState next;
    put_tree(next, "nu", nu);
    return std::pair{out, next};
  };
  return t;
}

Transformation scale_by_belief(double b1, double b2, double eps, double eps_root) {
  check_adam_like("scale_by_belief", b1, b2, eps, eps_root);
  Transformation t;
  t.init = [](const ExprParamMap& params) { return init_moments(params, 0, 0); };
  t.update = [=](const ExprParamMap& g, const OptState& state, const ExprParamMap&) {
    ExprParamMap mu_old = get_tree(state, "mu", g);
    ExprParamMap mu = update_moment(g, mu_old, b1, 1);
    // The belief: how far the gradient is from the previous prediction of it.
    ExprParamMap error =
        tree_map(g, mu_old, [](const Expr& x, const Expr& m) { return cast_like(x, m) - m; });
    ExprParamMap nu = tree_map(update_moment(error, get_tree(state, "nu", g), b2, 2),
                               [=](const Expr& v) { return v + eps_root; });
    Expr count = increment(state_entry(state, "count", "scale_by_belief"));
    ExprParamMap out =
        adam_direction(bias_corrected(mu, b1, count), bias_corrected(nu, b2, count), eps, 0.0);
    OptState next{{"count", count}};
    put_tree(next, "mu", mu);
    put_tree(next, "nu", nu);
    return std::pair{out, next};
  };
  return t;
}

Transformation scale_by_stddev(double decay, double eps, double initial_scale) {
  check_rate(decay, "scale_by_stddev", "decay");
  check_non_negative(eps, "scale_by_stddev", "eps");
  check_non_negative(initial_scale, "scale_by_stddev", "initial_scale");
  Transformation t;
  t.init = [=](const ExprParamMap& params) {
    OptState state;
    put_tree(state, "mu", full_like(params, 0));
    put_tree(state, "nu", full_like(params, initial_scale));
    return state;
  };
  t.update = [=](const ExprParamMap& g, const OptState& state, const ExprParamMap&) {
    ExprParamMap mu = update_moment(g, get_tree(state, "mu", g), decay, 1);
    ExprParamMap nu = update_moment(g, get_tree(state, "nu", g), decay, 2);
    ExprParamMap variance =
        tree_map(mu, nu, [](const Expr& m, const Expr& v) { return v - m * m; });
    ExprParamMap out = tree_map(g, variance, [=](const Expr& x, const Expr& s) {
      return x * cast_like(rsqrt(s + eps), x);
    });
    OptState next;
    put_tree(next, "mu", mu);
    put_tree(next, "nu", nu);
    return std::pair{out, next};
  };
  return t;
}

Transformation scale_by_radam(double b1, double b2, double eps, double eps_root, double threshold) {
  check_adam_like("scale_by_radam", b1, b2, eps, eps_root);
  check_finite(threshold, "scale_by_radam", "threshold");
  Transformation t;
  t.init = [](const ExprParamMap& params) { return init_moments(params, 0, 0); };
  t.update = [=](const ExprParamMap& g, const OptState& state, const ExprParamMap&) {
    ExprParamMap mu = update_moment(g, get_tree(state, "mu", g), b1, 1);
    ExprParamMap nu = update_moment(g, get_tree(state, "nu", g), b2, 2);
    Expr count = increment(state_entry(state, "count", "scale_by_radam"));
    ExprParamMap mu_hat = bias_corrected(mu, b1, count);
    ExprParamMap nu_hat = bias_corrected(nu, b2, count);
    // The length of the approximated simple moving average, and its limit.
    const double ro_inf = 2.0 / (1.0 - b2) - 1.0;
    Expr c = cast(count, scalar_dtype(g));
    Expr b2t = pow(b2, c);
    Expr ro = ro_inf - c * b2t * 2.0 / (1.0 - b2t);
    // NaN before the threshold (ro < 4) is discarded by the select.
    Expr r = sqrt((ro - 4.0) * (ro - 2.0) * ro_inf / (ro * ((ro_inf - 4.0) * (ro_inf - 2.0))));
    Expr rectify = greater_equal(ro, threshold);
    ExprParamMap out = tree_map(mu_hat, nu_hat, [&](const Expr& m, const Expr& v) {
      Expr rectified = m * cast_like(r, m) / (sqrt(v + eps_root) + eps);
      return select(rectify, rectified, m);
    });
    OptState next{{"count", count}};
    put_tree(next, "mu", mu);
    put_tree(next, "nu", nu);
    return std::pair{out, next};
  };
  return t;
}

Transformation trace(double decay, bool nesterov) {
  check_rate(decay, "trace", "decay");
  Transformation t;
  t.init = [](const ExprParamMap& params) {
    OptState state;
    put_tree(state, "trace", full_like(params, 0));
    return state;
  };
  t.update = [=](const ExprParamMap& g, const OptState& state, const ExprParamMap&) {
    ExprParamMap tr = tree_map(g, get_tree(state, "trace", g), [=](const Expr& x, const Expr& m) {
      return cast_like(x, m) + m * decay;
    });
    ExprParamMap out =
        nesterov
            ? tree_map(g, tr,
                       [=](const Expr& x, const Expr& m) { return cast_like(x, m) + m * decay; })
            : tr;
    OptState next;
    put_tree(next, "trace", tr);
    return std::pair{out, next};
  };
  return t;
}

Transformation scale_by_yogi(double b1, double b2, double eps, double eps_root,
                             double initial_accumulator_value) {
  check_adam_like("scale_by_yogi", b1, b2, eps, eps_root);
  check_non_negative(initial_accumulator_value, "scale_by_yogi", "initial_accumulator_value");
  Transformation t;
  t.init = [=](const ExprParamMap& params) {
    return init_moments(params, initial_accumulator_value, initial_accumulator_value);
  };
  t.update = [=](const ExprParamMap& g, const OptState& state, const ExprParamMap&) {
    ExprParamMap mu = update_moment(g, get_tree(state, "mu", g), b1, 1);
    // Additive: v moves toward g^2 by at most (1 - b2) g^2 a step.
    ExprParamMap nu = tree_map(g, get_tree(state, "nu", g), [=](const Expr& x, const Expr& v) {
      Expr g2 = cast_like(x * x, v);
      return v - sign(v - g2) * g2 * (1.0 - b2);
    });
    Expr count = increment(state_entry(state, "count", "scale_by_yogi"));
    ExprParamMap out =
        adam_direction(bias_corrected(mu, b1, count), bias_corrected(nu, b2, count), eps, eps_root);
    OptState next{{"count", count}};
    put_tree(next, "mu", mu);
    put_tree(next, "nu", nu);
    return std::pair{out, next};
  };
  return t;
}

}  // namespace glia::transforms
