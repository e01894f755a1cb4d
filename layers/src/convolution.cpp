// Convolution layers: conv, conv_transpose, depthwise_conv and separable convolutions.
// Inputs and kernels are channels-last by default; the core conv op is channels-first,
// so the forward functions transpose around it (the compiler folds the transposes).
#include "glia/layers/convolution.hpp"

#include <algorithm>
#include <functional>

#include "glia/layers/activation.hpp"
#include "layer_util.hpp"
#include "spatial_util.hpp"

namespace glia {

namespace {

using detail::check_spatial_option;
using detail::conv_forward;
using detail::conv_in_layout;
using detail::spatial_values;

void check_conv_options(std::string_view layer, const ConvLayerOptions& o) {
  check_spatial_option(layer, "kernel_size", o.kernel_size);
  check_spatial_option(layer, "strides", o.strides);
  check_spatial_option(layer, "input_dilation", o.input_dilation);
  check_spatial_option(layer, "kernel_dilation", o.kernel_dilation);
  detail::check_padding_option(layer, o.padding);
  check(o.feature_groups >= 1, layer, ": feature_groups must be >= 1, got ", o.feature_groups);
  detail::check_activation(layer, o.activation);
}

// The kernel shape [K..., in / groups, out] for an input of shape `in`.
Shape kernel_shape(std::string_view layer, const Shape& in, const ConvLayerOptions& o,
                   std::int64_t groups, std::int64_t out) {
  int spatial = detail::spatial_rank(layer, in);
  Ints dims = spatial_values(layer, "kernel_size", o.kernel_size, spatial, 1);
  std::int64_t c = detail::channel_dim(in, o.channels);
  check(c % groups == 0, layer, ": input channels (", c, ") are not divisible by feature_groups (",
        groups, ")");
  dims.push_back(c / groups);
  dims.push_back(out);
  return Shape(std::move(dims));
}

Expr add_bias(const Expr& y, const Expr& bias, Channels channels) {
  int axis = channels == Channels::last ? y.rank() - 1 : 1;
  return y + broadcast(bias, y.shape(), {axis});
}

std::string conv_options_text(const ConvLayerOptions& o) {
  std::string s =
      cat("kernel_size=", detail::ints_text(o.kernel_size.empty() ? Ints{1} : o.kernel_size));
  if (!o.strides.empty()) s += cat(", strides=", detail::ints_text(o.strides));
  s += cat(", padding=", detail::padding_text(o.padding));
  if (!o.input_dilation.empty()) s += cat(", input_dilation=", detail::ints_text(o.input_dilation));
  if (!o.kernel_dilation.empty())
    s += cat(", kernel_dilation=", detail::ints_text(o.kernel_dilation));
  if (o.feature_groups != 1) s += cat(", feature_groups=", o.feature_groups);
  if (o.channels == Channels::first) s += ", channels=first";
  s += cat(", activation=", o.activation);
  if (!o.use_bias) s += ", use_bias=false";
  return s;
}

// The layer's JSON config: `head` (filters, channel_multiplier) then every option.
std::string conv_config(detail::ConfigWriter head, const ConvLayerOptions& o) {
  return head.integers("kernel_size", o.kernel_size)
      .integers("strides", o.strides)
      .padding("padding", o.padding)
      .integers("input_dilation", o.input_dilation)
      .integers("kernel_dilation", o.kernel_dilation)
      .integer("feature_groups", o.feature_groups)
      .channels("channels", o.channels)
      .string("activation", o.activation)
      .boolean("use_bias", o.use_bias)
      .initializer("kernel_initializer", o.kernel_initializer)
      .initializer("bias_initializer", o.bias_initializer)
      .str();
}

using ShapeFn = std::function<Shape(const InputShapes&)>;

// A layer with a kernel and an optional bias (of the given shapes) whose forward
// function is `body(input, kernel)` followed by the bias and the activation.
template <class Body>
Model kernel_layer(const std::string& type, const Model& x, const ConvLayerOptions& o,
                   ShapeFn kernel, ShapeFn bias, Body body, const std::string& options_text,
                   std::string config) {
  std::vector<ParamSpec> params{{"kernel", std::move(kernel), o.kernel_initializer}};
  if (o.use_bias) params.push_back({"bias", std::move(bias), o.bias_initializer});
  Model m = layer(type, {x},
                  [o, body](LayerContext& c) {
                    Expr y = body(c.input(), c.param("kernel"));
                    if (o.use_bias) y = add_bias(y, c.param("bias"), o.channels);
                    return activations::by_name(o.activation, y);
                  },
                  std::move(params), {o.name});
  return detail::with_options(m, options_text, std::move(config));
}

// Kernel [K..., in / groups, out] and bias [out] of conv and conv_transpose.
Model grouped_kernel_layer(const char* type, const Model& x, std::int64_t filters,
                           const ConvLayerOptions& o,
                           std::function<Expr(const Expr&, const Expr&)> body) {
  return kernel_layer(
      type, x, o,
      [type, o, filters](const InputShapes& in) {
        return kernel_shape(type, in[0], o, o.feature_groups, filters);
      },
      [filters](const InputShapes&) { return Shape{filters}; }, std::move(body),
      cat("filters=", filters, ", ", conv_options_text(o)),
      conv_config(detail::ConfigWriter().integer("filters", filters), o));
}

}  // namespace

Model conv(const Model& x, std::int64_t filters, const ConvLayerOptions& o) {
  check(filters > 0, "conv: filters must be positive, got ", filters);
  check_conv_options("conv", o);
  check(filters % o.feature_groups == 0, "conv: filters (", filters,
        ") are not divisible by feature_groups (", o.feature_groups, ")");
  return grouped_kernel_layer("conv", x, filters, o, [o](const Expr& in, const Expr& kernel) {
    return conv_forward("conv", in, kernel, o, o.feature_groups);
  });
}

// The transpose of conv: the input dilated by the strides, padded, and correlated with
// the spatially flipped kernel (PyTorch's ConvTranspose). Padding names the padding of
// the conv being transposed: explicit (lo, hi) gives (in - 1) * s + k - lo - hi (PyTorch's
// padding = p is {(p, p)}), "valid" (in - 1) * s + k, and "same" in * s with the padding of
// a "same" conv on in * s elements (TensorFlow's and JAX's conv_transpose; for k < s the
// extra elements come last).
Model conv_transpose(const Model& x, std::int64_t filters, const ConvLayerOptions& o) {
  const char* type = "conv_transpose";
  check(filters > 0, type, ": filters must be positive, got ", filters);
  check_conv_options(type, o);
  for (std::int64_t d : o.input_dilation)
    check(d == 1, type, ": input_dilation is not supported (the strides dilate the input), got ",
          detail::ints_text(o.input_dilation));
  check(filters % o.feature_groups == 0, type, ": filters (", filters,
        ") are not divisible by feature_groups (", o.feature_groups, ")");
  auto body = [o, type](const Expr& in, const Expr& kernel) {
    int spatial = detail::spatial_rank(type, in.shape());
    Ints strides = spatial_values(type, "strides", o.strides, spatial, 1);
    Ints k_dilation = spatial_values(type, "kernel_dilation", o.kernel_dilation, spatial, 1);
    Ints sizes = detail::spatial_dims(in.shape(), o.channels), window, ones(sizes.size(), 1);
    for (int i = 0; i < spatial; ++i)
      window.push_back(
          detail::dilated_size(kernel.dim(i), k_dilation[static_cast<std::size_t>(i)]));
    detail::PadPairs explicit_pad;
    if (!o.padding.pairs.empty())
      explicit_pad = detail::resolve_padding(type, o.padding, sizes, window, strides);
    ConvOptions co;
    co.strides = ones;
    co.input_dilation = strides;
    co.kernel_dilation = k_dilation;
    co.feature_groups = o.feature_groups;
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      std::int64_t w = window[i], s = strides[i], n = sizes[i];
      // The transposed conv's input size `full` and its padding (low_f, high_f).
      std::int64_t low_f = 0, high_f = 0, full = (n - 1) * s + w;
      if (!o.padding.pairs.empty()) {
        low_f = explicit_pad.low[i];
        high_f = explicit_pad.high[i];
        full -= low_f + high_f;
      } else if (o.padding.mode == "same") {
        low_f = std::max<std::int64_t>(w - s, 0) / 2;
        full = n * s;
      }
      co.padding_low.push_back(w - 1 - low_f);
      co.padding_high.push_back(full - (n - 1) * s - 1 + low_f);
    }
    Ints flip;
    for (int i = 0; i < spatial; ++i) flip.push_back(i + 2);
    return conv_in_layout(in, reverse(detail::kernel_to_core(kernel), flip), co, o.channels);
  };
  return grouped_kernel_layer(type, x, filters, o, body);
}

Model depthwise_conv(const Model& x, std::int64_t channel_multiplier, const ConvLayerOptions& o) {
  const char* type = "depthwise_conv";
  check(channel_multiplier > 0, type, ": channel_multiplier must be positive, got ",
        channel_multiplier);
  check_conv_options(type, o);
  check(o.feature_groups == 1, type,
        ": feature_groups is set by the layer (one group per input channel), got ",
        o.feature_groups);
  // The kernel is [K..., 1, C * multiplier], the bias [C * multiplier].
  std::int64_t m = channel_multiplier;
  return kernel_layer(
      type, x, o,
      [type, o, m](const InputShapes& in) {
        Ints dims = kernel_shape(type, in[0], o, 1, 0).dims();
        dims[dims.size() - 1] = dims[dims.size() - 2] * m;
        dims[dims.size() - 2] = 1;
        return Shape(std::move(dims));
      },
      [type, o, m](const InputShapes& in) {
        detail::spatial_rank(type, in[0]);
        return Shape{detail::channel_dim(in[0], o.channels) * m};
      },
      [type, o](const Expr& in, const Expr& kernel) {
        return conv_forward(type, in, kernel, o, detail::channel_dim(in.shape(), o.channels));
      },
      cat("channel_multiplier=", channel_multiplier, ", ", conv_options_text(o)),
      conv_config(detail::ConfigWriter().integer("channel_multiplier", channel_multiplier), o));
}

namespace {

// depthwise_conv then a 1x1 conv, for inputs of exactly `spatial` spatial axes.
Model separable_conv(const char* type, int spatial, const Model& x, std::int64_t filters,
                     std::int64_t m, const ConvLayerOptions& o) {
  check(filters > 0, type, ": filters must be positive, got ", filters);
  check(m > 0, type, ": channel_multiplier must be positive, got ", m);
  check_conv_options(type, o);
  check(o.feature_groups == 1, type,
        ": feature_groups is set by the layer (one group per input channel), got ",
        o.feature_groups);
  ConvLayerOptions opts = o;
  // The channels after the depthwise step; checks the rank first.
  auto mid = [type, spatial, opts, m](const Shape& in) {
    check(in.rank() == spatial + 2, type, ": expected an input of rank ", spatial + 2, " (",
          spatial, " spatial axes), got rank ", in.rank());
    return detail::channel_dim(in, opts.channels) * m;
  };
  std::vector<ParamSpec> params{{"depthwise_kernel",
                                 [type, opts, mid](const InputShapes& in) {
                                   std::int64_t c = mid(in[0]);
                                   Ints dims =
                                       spatial_values(type, "kernel_size", opts.kernel_size,
                                                      static_cast<int>(in[0].rank()) - 2, 1);
                                   dims.push_back(1);
                                   dims.push_back(c);
                                   return Shape(std::move(dims));
                                 },
                                 o.kernel_initializer}};
  if (o.use_bias)
    params.push_back({"depthwise_bias", [mid](const InputShapes& in) { return Shape{mid(in[0])}; },
                      o.bias_initializer});
  params.push_back({"pointwise_kernel",
                    [spatial, mid, filters](const InputShapes& in) {
                      Ints dims(static_cast<std::size_t>(spatial), 1);
                      dims.push_back(mid(in[0]));
                      dims.push_back(filters);
                      return Shape(std::move(dims));
                    },
                    o.kernel_initializer});
  if (o.use_bias)
    params.push_back({"pointwise_bias", [filters](const InputShapes&) { return Shape{filters}; },
                      o.bias_initializer});
  Model model = layer(type, {x},
                      [opts, type](LayerContext& c) {
                        const Expr& in = c.input();
                        std::int64_t groups = detail::channel_dim(in.shape(), opts.channels);
                        Expr y = conv_forward(type, in, c.param("depthwise_kernel"), opts, groups);
                        if (opts.use_bias)
                          y = add_bias(y, c.param("depthwise_bias"), opts.channels);
                        ConvLayerOptions pointwise;
                        pointwise.channels = opts.channels;
                        y = conv_forward(type, y, c.param("pointwise_kernel"), pointwise, 1);
                        if (opts.use_bias)
                          y = add_bias(y, c.param("pointwise_bias"), opts.channels);
                        return activations::by_name(opts.activation, y);
                      },
                      std::move(params), {o.name});
  return detail::with_options(
      model, cat("filters=", filters, ", channel_multiplier=", m, ", ", conv_options_text(o)),
      conv_config(
          detail::ConfigWriter().integer("filters", filters).integer("channel_multiplier", m), o));
}

}  // namespace

Model separable_conv2d(const Model& x, std::int64_t filters, std::int64_t channel_multiplier,
                       const ConvLayerOptions& o) {
  return separable_conv("separable_conv2d", 2, x, filters, channel_multiplier, o);
}

Model separable_conv3d(const Model& x, std::int64_t filters, std::int64_t channel_multiplier,
                       const ConvLayerOptions& o) {
  return separable_conv("separable_conv3d", 3, x, filters, channel_multiplier, o);
}

}  // namespace glia
