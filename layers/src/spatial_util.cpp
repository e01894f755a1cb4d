// Spatial option handling shared by the convolution and pooling layers (see the header).
#include "spatial_util.hpp"

#include <algorithm>

namespace glia::detail {

void check_spatial_option(std::string_view layer, std::string_view name, const Ints& values) {
  check(values.size() <= 3, layer, ": ", name, " has ", values.size(),
        " entries, expected at most 3 (one per spatial axis), got ", ints_text(values));
  for (std::int64_t v : values)
    check(v >= 1, layer, ": ", name, " must be >= 1, got ", ints_text(values));
}

void check_padding_option(std::string_view layer, const Padding& padding) {
  if (padding.pairs.empty()) {
    check(padding.mode == "valid" || padding.mode == "same", layer,
          ": padding must be \"valid\", \"same\" or (low, high) pairs, got \"", padding.mode, "\"");
    return;
  }
  check(padding.pairs.size() <= 3, layer, ": padding has ", padding.pairs.size(),
        " pairs, expected at most 3 (one per spatial axis)");
  for (const auto& [low, high] : padding.pairs)
    check(low >= 0 && high >= 0, layer, ": padding must be non-negative, got (", low, ", ", high,
          ")");
}

int spatial_rank(std::string_view layer, const Shape& input) {
  check(input.rank() >= 3 && input.rank() <= 5, layer,
        ": expected an input of rank 3 to 5 ([N, spatial..., C] for 1-D to 3-D), got rank ",
        input.rank());
  return input.rank() - 2;
}

Ints spatial_values(std::string_view layer, std::string_view name, const Ints& values, int spatial,
                    std::int64_t fill) {
  auto n = static_cast<std::size_t>(spatial);
  if (values.empty()) return Ints(n, fill);
  if (values.size() == 1) return Ints(n, values[0]);
  check(values.size() == n, layer, ": ", name, " has ", values.size(), " entries, expected ",
        spatial, " (one per spatial axis) or a single value, got ", ints_text(values));
  return values;
}

Ints spatial_dims(const Shape& input, Channels channels) {
  const Ints& d = input.dims();
  return channels == Channels::last ? Ints(d.begin() + 1, d.end() - 1)
                                    : Ints(d.begin() + 2, d.end());
}

std::int64_t channel_dim(const Shape& input, Channels channels) {
  return channels == Channels::last ? input[input.rank() - 1] : input[1];
}

Ints spatial_axes(int rank, Channels channels) {
  Ints axes;
  int first = channels == Channels::last ? 1 : 2;
  for (int a = first; a < first + rank - 2; ++a) axes.push_back(a);
  return axes;
}

std::int64_t dilated_size(std::int64_t d, std::int64_t dilation) {
  return d == 0 ? 0 : (d - 1) * dilation + 1;
}

PadPairs resolve_padding(std::string_view layer, const Padding& padding, const Ints& in,
                         const Ints& window, const Ints& strides) {
  std::size_t n = in.size();
  PadPairs p;
  if (!padding.pairs.empty()) {
    check(padding.pairs.size() == 1 || padding.pairs.size() == n, layer, ": padding has ",
          padding.pairs.size(), " pairs, expected ", n, " (one per spatial axis) or a single pair");
    for (std::size_t i = 0; i < n; ++i) {
      const auto& pair = padding.pairs[padding.pairs.size() == 1 ? 0 : i];
      p.low.push_back(pair.first);
      p.high.push_back(pair.second);
    }
    return p;
  }
  for (std::size_t i = 0; i < n; ++i) {
    std::int64_t total = 0;
    if (padding.mode == "same") {
      std::int64_t out = (in[i] + strides[i] - 1) / strides[i];
      total = std::max<std::int64_t>((out - 1) * strides[i] + window[i] - in[i], 0);
    }
    p.low.push_back(total / 2);
    p.high.push_back(total - total / 2);
  }
  return p;
}

Expr to_channels_first(const Expr& x) {
  Ints perm{0, x.rank() - 1};
  for (int a = 1; a < x.rank() - 1; ++a) perm.push_back(a);
  return transpose(x, perm);
}

Expr to_channels_last(const Expr& x) {
  Ints perm{0};
  for (int a = 2; a < x.rank(); ++a) perm.push_back(a);
  perm.push_back(1);
  return transpose(x, perm);
}

Expr kernel_to_core(const Expr& kernel) {
  int r = kernel.rank();
  Ints perm{r - 1, r - 2};
  for (int a = 0; a < r - 2; ++a) perm.push_back(a);
  return transpose(kernel, perm);
}

std::string ints_text(const Ints& v) {
  std::string s = "[";
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

std::string padding_text(const Padding& p) {
  if (p.pairs.empty()) return p.mode;
  std::string s = "[";
  for (std::size_t i = 0; i < p.pairs.size(); ++i)
    s += cat(i ? ", " : "", "(", p.pairs[i].first, ", ", p.pairs[i].second, ")");
  return s + "]";
}

// The core conv on an input in the layer's layout; the result is in that layout too.
// `core_kernel` is [O, I / groups, K...].
Expr conv_in_layout(const Expr& x, const Expr& core_kernel, const ConvOptions& co,
                    Channels channels) {
  if (channels == Channels::first) return conv(x, core_kernel, co);
  return to_channels_last(conv(to_channels_first(x), core_kernel, co));
}

// y = x (*) kernel with the layer's strides, padding and dilations; no bias.
Expr conv_forward(std::string_view layer, const Expr& x, const Expr& kernel,
                  const ConvLayerOptions& o, std::int64_t groups) {
  int spatial = spatial_rank(layer, x.shape());
  Ints strides = spatial_values(layer, "strides", o.strides, spatial, 1);
  Ints in_dilation = spatial_values(layer, "input_dilation", o.input_dilation, spatial, 1);
  Ints k_dilation = spatial_values(layer, "kernel_dilation", o.kernel_dilation, spatial, 1);
  Ints in = spatial_dims(x.shape(), o.channels), window;
  for (int i = 0; i < spatial; ++i) {
    auto k = static_cast<std::size_t>(i);
    in[k] = dilated_size(in[k], in_dilation[k]);
    window.push_back(dilated_size(kernel.dim(i), k_dilation[k]));
  }
  PadPairs pad = resolve_padding(layer, o.padding, in, window, strides);
  ConvOptions co{strides, pad.low, pad.high, in_dilation, k_dilation, groups};
  return conv_in_layout(x, kernel_to_core(kernel), co, o.channels);
}

}  // namespace glia::detail
