// The built-in layer types declared in layers/include/glia/layers/*.hpp besides the
// activations (activations::names()), written out by hand: tests that must cover every
// layer type compare against this list, so a new layer without coverage fails them.
#pragma once

#include <set>
#include <string>

namespace glia::testing {

inline std::set<std::string> builtin_layer_types() {
  return {"input",
          "dense",
          "bilinear",
          "embedding",
          "bias",
          "multi_head_attention",
          "lstm",
          "gru",
          "conv_lstm",
          "mask",
          "layer_output",
          "conv",
          "conv_transpose",
          "depthwise_conv",
          "separable_conv2d",
          "separable_conv3d",
          "dropout",
          "alpha_dropout",
          "feature_alpha_dropout",
          "spatial_dropout",
          "max_pool",
          "avg_pool",
          "lp_pool",
          "adaptive_avg_pool",
          "adaptive_max_pool",
          "adaptive_lp_pool",
          "global_avg_pool",
          "global_max_pool",
          "global_lp_pool",
          "batch_norm",
          "instance_norm",
          "layer_norm",
          "group_norm",
          "rms_norm",
          "flatten",
          "reshape",
          "transpose",
          "pad",
          "resize",
          "concatenate",
          "add",
          "subtract",
          "multiply",
          "split",
          "constant"};
}

}  // namespace glia::testing
