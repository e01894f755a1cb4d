// The optimizers, each a composition of transformations (transforms.hpp) ending with
// scale_by_learning_rate: the update is -learning_rate * (the transformed gradient). A
// learning rate is a number or a schedule of the update count (schedules.hpp).
//   glia::Transformation opt = glia::optimizers::adam(1e-3);
//   glia::Transformation warm = glia::optimizers::sgd(glia::schedules::linear_decay(0.1, 0, 1000));
// Bad hyperparameters (a negative learning rate, a decay outside [0, 1), ...) throw
// glia::Error naming the optimizer. Defaults follow Optax (learning rates: Polaris').
#pragma once

#include <cstdint>

#include "glia/optim/transform.hpp"
#include "glia/optim/transforms.hpp"

namespace glia::optimizers {

// updates * -learning_rate (a schedule is evaluated at the update count, kept in "count").
Transformation scale_by_learning_rate(const LearningRate& learning_rate);

// Plain SGD; momentum > 0 traces the gradients first (with Nesterov's variant if asked).
Transformation sgd(const LearningRate& learning_rate = 1e-2, double momentum = 0.0,
                   bool nesterov = false);
Transformation adam(const LearningRate& learning_rate = 1e-3, double b1 = 0.9, double b2 = 0.999,
                    double eps = 1e-8, double eps_root = 0.0);
// Adam with decoupled weight decay: decay * params is added to the Adam direction before
// scaling by -learning_rate (PyTorch's AdamW with weight_decay = decay).
Transformation adamw(const LearningRate& learning_rate = 1e-3, double b1 = 0.9, double b2 = 0.999,
                     double eps = 1e-8, double eps_root = 0.0, double decay = 1e-4,
                     transforms::ParamMask mask = {});
Transformation adabelief(const LearningRate& learning_rate = 1e-3, double b1 = 0.9,
                         double b2 = 0.999, double eps = 1e-16, double eps_root = 1e-16);
// Optax's defaults; PyTorch's Adagrad is initial_accumulator_value = 0, eps = 1e-10 (and
// adds eps outside the square root).
Transformation adagrad(const LearningRate& learning_rate = 1e-3,
                       double initial_accumulator_value = 0.1, double eps = 1e-7);
Transformation lamb(const LearningRate& learning_rate = 1e-2, double b1 = 0.9, double b2 = 0.999,
                    double eps = 1e-6, double eps_root = 0.0, double decay = 1e-4,
                    transforms::ParamMask mask = {});
// SGD on gradients with annealed Gaussian noise (variance eta / (1 + count)^gamma) added.
Transformation noisy_sgd(const LearningRate& learning_rate = 1e-2, double eta = 0.01,
                         double gamma = 0.55, std::uint64_t seed = 0);
Transformation radam(const LearningRate& learning_rate = 1e-3, double b1 = 0.9, double b2 = 0.999,
                     double eps = 1e-8, double eps_root = 0.0, double threshold = 5.0);
// eps is added inside the square root (Optax), PyTorch adds it outside: the two agree to
// about eps / sqrt(v) relative. momentum > 0 traces the scaled updates (PyTorch's buffer).
Transformation rmsprop(const LearningRate& learning_rate = 1e-2, double decay = 0.9,
                       double eps = 1e-8, bool centered = false, double momentum = 0.0,
                       bool nesterov = false, double initial_scale = 0.0);
Transformation yogi(const LearningRate& learning_rate = 1e-2, double b1 = 0.9, double b2 = 0.999,
                    double eps = 1e-3, double eps_root = 0.0,
                    double initial_accumulator_value = 1e-6);

}  // namespace glia::optimizers
