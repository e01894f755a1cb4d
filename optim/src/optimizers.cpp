// The optimizers as compositions of transformations (Optax's recipes). Each checks its
// learning rate and rethrows its transformations' hyperparameter errors under its own name.
#include "glia/optim/optimizers.hpp"

#include <string_view>

#include "transform_util.hpp"

namespace glia::optimizers {

namespace {

// compose(members), with a glia::Error from making them prefixed by the optimizer's name,
// after checking the learning rate.
template <class Build>
Transformation named(std::string_view who, const LearningRate& learning_rate, Build&& build) {
  if (!learning_rate.is_schedule())
    optim_detail::check_non_negative(learning_rate.value(), who, "learning_rate");
  try {
    return compose(build());
  } catch (const Error& e) {
    throw Error(cat(who, ": ", e.what()));
  }
}

}  // namespace

Transformation scale_by_learning_rate(const LearningRate& learning_rate) {
  if (!learning_rate.is_schedule()) return transforms::scale(-learning_rate.value());
  return transforms::scale_by_schedule(
      [learning_rate](const Expr& count) { return -learning_rate.at(count); });
}

Transformation sgd(const LearningRate& learning_rate, double momentum, bool nesterov) {
  optim_detail::check_rate(momentum, "sgd", "momentum");
  return named("sgd", learning_rate, [&] {
    std::vector<Transformation> chain;
    if (momentum > 0) chain.push_back(transforms::trace(momentum, nesterov));
    chain.push_back(scale_by_learning_rate(learning_rate));
    return chain;
  });
}

Transformation adam(const LearningRate& learning_rate, double b1, double b2, double eps,
                    double eps_root) {
  return named("adam", learning_rate, [&] {
    return std::vector{transforms::scale_by_adam(b1, b2, eps, eps_root),
                       scale_by_learning_rate(learning_rate)};
  });
}

Transformation adamw(const LearningRate& learning_rate, double b1, double b2, double eps,
                     double eps_root, double decay, transforms::ParamMask mask) {
  return named("adamw", learning_rate, [&] {
    return std::vector{transforms::scale_by_adam(b1, b2, eps, eps_root),
                       transforms::add_decayed_weights(decay, std::move(mask)),
                       scale_by_learning_rate(learning_rate)};
  });
}

Transformation adabelief(const LearningRate& learning_rate, double b1, double b2, double eps,
                         double eps_root) {
  return named("adabelief", learning_rate, [&] {
    return std::vector{transforms::scale_by_belief(b1, b2, eps, eps_root),
                       scale_by_learning_rate(learning_rate)};
  });
}

Transformation adagrad(const LearningRate& learning_rate, double initial_accumulator_value,
                       double eps) {
  return named("adagrad", learning_rate, [&] {
    return std::vector{transforms::scale_by_rss(initial_accumulator_value, eps),
                       scale_by_learning_rate(learning_rate)};
  });
}

Transformation lamb(const LearningRate& learning_rate, double b1, double b2, double eps,
                    double eps_root, double decay, transforms::ParamMask mask) {
  return named("lamb", learning_rate, [&] {
    return std::vector{transforms::scale_by_adam(b1, b2, eps, eps_root),
                       transforms::add_decayed_weights(decay, std::move(mask)),
                       transforms::scale_by_trust_ratio(), scale_by_learning_rate(learning_rate)};
  });
}

Transformation noisy_sgd(const LearningRate& learning_rate, double eta, double gamma,
                         std::uint64_t seed) {
  return named("noisy_sgd", learning_rate, [&] {
    return std::vector{transforms::add_noise(eta, gamma, seed),
                       scale_by_learning_rate(learning_rate)};
  });
}

Transformation radam(const LearningRate& learning_rate, double b1, double b2, double eps,
                     double eps_root, double threshold) {
  return named("radam", learning_rate, [&] {
    return std::vector{transforms::scale_by_radam(b1, b2, eps, eps_root, threshold),
                       scale_by_learning_rate(learning_rate)};
  });
}

Transformation rmsprop(const LearningRate& learning_rate, double decay, double eps, bool centered,
                       double momentum, bool nesterov, double initial_scale) {
  optim_detail::check_rate(momentum, "rmsprop", "momentum");
  return named("rmsprop", learning_rate, [&] {
    std::vector<Transformation> chain;
    chain.push_back(centered ? transforms::scale_by_stddev(decay, eps, initial_scale)
                             : transforms::scale_by_rms(decay, eps, initial_scale));
    chain.push_back(scale_by_learning_rate(learning_rate));
    if (momentum > 0) chain.push_back(transforms::trace(momentum, nesterov));
    return chain;
  });
}

Transformation yogi(const LearningRate& learning_rate, double b1, double b2, double eps,
                    double eps_root, double initial_accumulator_value) {
  return named("yogi", learning_rate, [&] {
    return std::vector{transforms::scale_by_yogi(b1, b2, eps, eps_root, initial_accumulator_value),
                       scale_by_learning_rate(learning_rate)};
  });
}

}  // namespace glia::optimizers
