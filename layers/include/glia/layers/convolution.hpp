// Convolution layers, 1-D to 3-D, channels-last by default ([N, spatial..., C]).
// Kernels are stored channels-last too: [spatial..., in / groups, out].
//   glia::Model y = glia::conv(x, 32, {.kernel_size = {3, 3}, .activation = "relu"});
#pragma once

#include <utility>
#include <vector>

#include "glia/layers/initializers.hpp"

namespace glia {

// "valid", "same" (output spatial size ceil(input / stride)), or explicit (low, high)
// pairs per spatial axis.
struct Padding {
  Padding(const char* mode) : mode(mode) {}             // NOLINT
  Padding(std::string mode) : mode(std::move(mode)) {}  // NOLINT
  Padding(std::vector<std::pair<std::int64_t, std::int64_t>> pairs)
      : pairs(std::move(pairs)) {}  // NOLINT
  std::string mode = "valid";
  std::vector<std::pair<std::int64_t, std::int64_t>> pairs;
};

enum class Channels { last, first };

// Empty vectors mean: kernel size 1, strides 1, dilations 1 (one value broadcasts to
// every spatial axis).
struct ConvLayerOptions {
  std::vector<std::int64_t> kernel_size{};
  std::vector<std::int64_t> strides{};
  Padding padding = "valid";
  std::vector<std::int64_t> input_dilation{};
  std::vector<std::int64_t> kernel_dilation{};
  std::int64_t feature_groups = 1;
  Channels channels = Channels::last;
  std::string activation = "linear";
  bool use_bias = true;
  Initializer kernel_initializer = initializers::glorot_uniform();
  Initializer bias_initializer = initializers::zeros();
  std::string name{};
};

Model conv(const Model& x, std::int64_t filters, const ConvLayerOptions& options = {});
// The gradient of conv with respect to its input, as a layer (upsampling); padding
// "valid"/"same" give outputs (in - 1) * stride + dilated kernel / in * stride.
Model conv_transpose(const Model& x, std::int64_t filters, const ConvLayerOptions& options = {});
// One filter group per input channel, `channel_multiplier` outputs each.
Model depthwise_conv(const Model& x, std::int64_t channel_multiplier,
                     const ConvLayerOptions& options = {});
// depthwise_conv then a 1x1 conv to `filters` outputs.
Model separable_conv2d(const Model& x, std::int64_t filters, std::int64_t channel_multiplier = 1,
                       const ConvLayerOptions& options = {});
Model separable_conv3d(const Model& x, std::int64_t filters, std::int64_t channel_multiplier = 1,
                       const ConvLayerOptions& options = {});

}  // namespace glia
