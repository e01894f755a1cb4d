// Dropout layers: active in train mode only (identity at inference), random from the
// layer's key.
#pragma once

#include "glia/layers/model.hpp"

namespace glia {

struct DropoutOptions {
  double rate = 0.5;  // probability of dropping, in [0, 1)
  std::string name;
};
// Zeroes elements with probability `rate`, scales the rest by 1 / (1 - rate).
Model dropout(const Model& x, const DropoutOptions& options = {});
// Keeps SELU's mean and variance (Klambauer et al.): dropped values become -alpha*lambda, then
// affine-corrected.
Model alpha_dropout(const Model& x, const DropoutOptions& options = {});
// alpha_dropout dropping whole channels (channels-last: one draw per [N, C]).
Model feature_alpha_dropout(const Model& x, const DropoutOptions& options = {});
// dropout dropping whole channels (channels-last: one draw per [N, C]).
Model spatial_dropout(const Model& x, const DropoutOptions& options = {});

}  // namespace glia
