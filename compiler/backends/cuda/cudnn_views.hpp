// Internal to the `cuda` backend: a ConvSpec's views as cuDNN's descriptors take them,
// decided without a device: which convolutions cuDNN realises (cudnn_declines), why the
// lowering leaves others (convolution_fallback), and the packed layouts the kernel
// (cudnn_conv.cpp) describes its operands in.
#pragma once

#include <cstdint>
#include <string>

#include "glia/compiler/program.hpp"

namespace glia::detail::cuda::conv {

// A view as the descriptors see it: [N, C, S...] or [O, C/G, K...] with two or three
// spatial axes.
struct Dims {
  Ints dims, strides;
  std::int64_t numel() const {
    std::int64_t n = 1;
    for (std::int64_t d : dims) n *= d;
    return n;
  }
};

struct Views {
  Dims src, weights, dst;
};

// Physical order of [N, C, S...] in a layout, outermost first.
enum class Layout : std::uint8_t { nchw, nhwc };

// The packed strides of [N, C, S...] dims in a layout.
Ints packed_strides(const Ints& dims, Layout layout);
// Whether the view is the packed layout (a size-1 axis may carry any stride).
bool packed_in(const Dims& v, Layout layout);
// The view with its size-1 axes given the outermost stride, as a transform's end.
Dims settled(Dims v);
// The spec's views as cuDNN's descriptors take them, or why not (empty when they do).
std::string views_of(const ConvSpec& s, Views& out);
// Why cuDNN does not convolve a dtype ("" when it does).
std::string dtype_declines(DType dtype);

}  // namespace glia::detail::cuda::conv
