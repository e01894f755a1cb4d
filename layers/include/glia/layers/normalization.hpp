// Normalization layers. batch_norm and instance_norm keep running statistics as model
// state (updated in train mode, used in inference mode), as PyTorch does.
#pragma once

#include "glia/layers/initializers.hpp"

namespace glia {

struct NormOptions {
  std::int64_t axis = -1;  // the feature (channel) axis
  double epsilon = 1e-5;
  double momentum = 0.1;        // running = (1 - momentum) * running + momentum * batch (PyTorch)
  std::int64_t num_groups = 1;  // group_norm
  Initializer gamma_initializer = initializers::ones();
  Initializer beta_initializer = initializers::zeros();
  std::string name;
};
// Running variance uses the unbiased batch variance, normalization the biased one (PyTorch).
Model batch_norm(const Model& x, const NormOptions& options = {});
Model instance_norm(const Model& x, const NormOptions& options = {});
Model layer_norm(const Model& x, const NormOptions& options = {});
Model group_norm(const Model& x, std::int64_t num_groups, const NormOptions& options = {});
// x / sqrt(mean(x^2) + epsilon) * gamma over the feature axis (no beta).
Model rms_norm(const Model& x, const NormOptions& options = {});

}  // namespace glia
