// Internal helpers of the convolution and pooling layers: spatial options broadcast to
// every spatial axis, "valid"/"same"/explicit padding resolved to (low, high) pairs,
// and the channels-last <-> channels-first transposes around the core conv op.
#pragma once

#include <string_view>

#include "glia/layers/convolution.hpp"

namespace glia::detail {

// Checks options that do not depend on the input (at layer creation): each entry of
// `values` >= 1 and at most 3 entries (one per spatial axis of a 1-D..3-D layer).
void check_spatial_option(std::string_view layer, std::string_view name, const Ints& values);
// "valid", "same", or non-negative explicit pairs.
void check_padding_option(std::string_view layer, const Padding& padding);

// The number of spatial axes of an input [N, spatial..., C]; rank 3 to 5.
int spatial_rank(std::string_view layer, const Shape& input);

// `values` for `spatial` axes: empty gives `fill` everywhere, one value broadcasts.
Ints spatial_values(std::string_view layer, std::string_view name, const Ints& values, int spatial,
                    std::int64_t fill);

// The spatial sizes and channel count of an input in the given layout.
Ints spatial_dims(const Shape& input, Channels channels);
std::int64_t channel_dim(const Shape& input, Channels channels);
// The input's spatial axes (1..rank-2 channels-last, 2..rank-1 channels-first).
Ints spatial_axes(int rank, Channels channels);

struct PadPairs {
  Ints low, high;
};
// Padding for windows of `window` elements (dilation included) moved by `strides`:
// "same" pads a total of max((ceil(in / stride) - 1) * stride + window - in, 0), the
// smaller half low (TensorFlow, Axon).
PadPairs resolve_padding(std::string_view layer, const Padding& padding, const Ints& in,
                         const Ints& window, const Ints& strides);

// (d - 1) * dilation + 1, 0 for an empty axis.
std::int64_t dilated_size(std::int64_t d, std::int64_t dilation);

// [N, S..., C] -> [N, C, S...] and back.
Expr to_channels_first(const Expr& x);
Expr to_channels_last(const Expr& x);
// A kernel stored [K..., I, O] as the core conv wants it: [O, I, K...].
Expr kernel_to_core(const Expr& kernel);

// The core conv on an input in `channels` layout; the result is in that layout too.
// `core_kernel` is [O, I / groups, K...].
Expr conv_in_layout(const Expr& x, const Expr& core_kernel, const ConvOptions& co,
                    Channels channels);
// y = x (*) kernel [K..., I / groups, O] with the options' strides, padding and dilations
// (kernel_size is the kernel's); no bias.
Expr conv_forward(std::string_view layer, const Expr& x, const Expr& kernel,
                  const ConvLayerOptions& o, std::int64_t groups);

std::string ints_text(const Ints& v);
std::string padding_text(const Padding& p);

}  // namespace glia::detail
