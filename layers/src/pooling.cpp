// Pooling layers: windowed (max, avg, lp), adaptive (PyTorch's bins) and global pools
// over the spatial axes. The window ops span every axis, so no transposes are needed:
// the batch and channel axes get windows of one element.
#include "glia/layers/pooling.hpp"

#include "layer_util.hpp"
#include "spatial_util.hpp"

namespace glia {

namespace {

using detail::spatial_values;

enum class Reduce { max, avg, lp };

void check_norm(std::string_view layer, Reduce r, double norm) {
  if (r == Reduce::lp) check(norm > 0, layer, ": norm must be positive, got ", norm);
}

// Means and powers need a floating type; integer inputs are pooled as f32.
Expr as_float(const Expr& x) { return is_float(x.dtype()) ? x : cast(x, DType::f32); }

Expr lp_power(const Expr& x, double p) {
  if (p == 1) return x;
  if (p == 2) return x * x;
  return pow(x, p);
}

Expr lp_root(const Expr& s, double p) {
  if (p == 1) return s;
  if (p == 2) return sqrt(s);
  return pow(s, 1 / p);
}

// ---- Windowed pools ---------------------------------------------------------------------

Expr window_pool(std::string_view layer, Reduce r, const Expr& input, const PoolOptions& o) {
  int rank = input.rank();
  int spatial = detail::spatial_rank(layer, input.shape());
  Ints k = spatial_values(layer, "kernel_size", o.kernel_size, spatial, 1);
  Ints s = o.strides.empty() ? k : spatial_values(layer, "strides", o.strides, spatial, 1);
  Ints d = spatial_values(layer, "window_dilation", o.window_dilation, spatial, 1);
  Ints in = detail::spatial_dims(input.shape(), o.channels), extent;
  for (int i = 0; i < spatial; ++i)
    extent.push_back(
        detail::dilated_size(k[static_cast<std::size_t>(i)], d[static_cast<std::size_t>(i)]));
  detail::PadPairs pad = detail::resolve_padding(layer, o.padding, in, extent, s);
  auto n = static_cast<std::size_t>(rank);
  Ints window(n, 1);
  WindowOptions wo{Ints(n, 1), Ints(n, 0), Ints(n, 0), Ints(n, 1), Ints(n, 1)};
  std::int64_t count = 1;
  Ints axes = detail::spatial_axes(rank, o.channels);
  for (std::size_t i = 0; i < axes.size(); ++i) {
    auto a = static_cast<std::size_t>(axes[i]);
    window[a] = k[i];
    wo.strides[a] = s[i];
    wo.padding_low[a] = pad.low[i];
    wo.padding_high[a] = pad.high[i];
    wo.window_dilation[a] = d[i];
    count *= k[i];
  }
  switch (r) {
    case Reduce::max:
      return window_max(input, window, wo);
    case Reduce::avg:
      return window_sum(as_float(input), window, wo) / static_cast<double>(count);
    case Reduce::lp:
      return lp_root(window_sum(lp_power(as_float(input), o.norm), window, wo), o.norm);
  }
  return {};
}

Model window_pool_layer(const char* type, Reduce r, const Model& x, const PoolOptions& o) {
  detail::check_spatial_option(type, "kernel_size", o.kernel_size);
  detail::check_spatial_option(type, "strides", o.strides);
  detail::check_spatial_option(type, "window_dilation", o.window_dilation);
  detail::check_padding_option(type, o.padding);
  check_norm(type, r, o.norm);
  Model m =
      layer(type, {x}, [type, r, o](LayerContext& c) { return window_pool(type, r, c.input(), o); },
            {}, {o.name});
  std::string text =
      cat("kernel_size=", detail::ints_text(o.kernel_size.empty() ? Ints{1} : o.kernel_size));
  if (!o.strides.empty()) text += cat(", strides=", detail::ints_text(o.strides));
  text += cat(", padding=", detail::padding_text(o.padding));
  if (!o.window_dilation.empty())
    text += cat(", window_dilation=", detail::ints_text(o.window_dilation));
  if (o.channels == Channels::first) text += ", channels=first";
  if (r == Reduce::lp) text += cat(", norm=", o.norm);
  return detail::with_options(m, text,
                              detail::ConfigWriter()
                                  .integers("kernel_size", o.kernel_size)
                                  .integers("strides", o.strides)
                                  .padding("padding", o.padding)
                                  .integers("window_dilation", o.window_dilation)
                                  .channels("channels", o.channels)
                                  .number("norm", o.norm)
                                  .str());
}

// ---- Adaptive pools ---------------------------------------------------------------------

// Pools one axis of `in` elements into `out` bins [floor(j*in/out), ceil((j+1)*in/out)):
// sums (avg and lp) or maxima; avg divides each bin by its size.
Expr adaptive_axis(const Expr& x, int axis, std::int64_t out, Reduce r) {
  std::int64_t in = x.dim(axis);
  auto n = static_cast<std::size_t>(x.rank());
  if (in % out == 0) {  // equal bins: one window op
    Ints window(n, 1);
    window[static_cast<std::size_t>(axis)] = in / out;
    Expr y = r == Reduce::max ? window_max(x, window) : window_sum(x, window);
    return r == Reduce::avg ? y / static_cast<double>(in / out) : y;
  }
  std::vector<Expr> bins;
  for (std::int64_t j = 0; j < out; ++j) {
    std::int64_t start = j * in / out, end = ((j + 1) * in + out - 1) / out;
    Expr part = slice_axis(x, start, end - start, axis);
    Expr y = r == Reduce::max ? reduce_max(part, {axis}, true) : sum(part, {axis}, true);
    bins.push_back(r == Reduce::avg ? y / static_cast<double>(end - start) : y);
  }
  return concatenate(bins, axis);
}

Expr adaptive_pool(std::string_view layer, Reduce r, const Expr& input,
                   const AdaptivePoolOptions& o) {
  int spatial = detail::spatial_rank(layer, input.shape());
  Ints out = spatial_values(layer, "output_size", o.output_size, spatial, 1);
  Ints axes = detail::spatial_axes(input.rank(), o.channels);
  Expr y = r == Reduce::max ? input : as_float(input);
  if (r == Reduce::lp) y = lp_power(y, o.norm);
  for (std::size_t i = 0; i < axes.size(); ++i) {
    int axis = static_cast<int>(axes[i]);
    check(y.dim(axis) > 0, layer, ": spatial axis ", i, " is empty (an output bin needs at ",
          "least one element)");
    y = adaptive_axis(y, axis, out[i], r);
  }
  return r == Reduce::lp ? lp_root(y, o.norm) : y;
}

Model adaptive_pool_layer(const char* type, Reduce r, const Model& x,
                          const AdaptivePoolOptions& o) {
  check(!o.output_size.empty(), type, ": output_size is required (one value per spatial axis)");
  detail::check_spatial_option(type, "output_size", o.output_size);
  check_norm(type, r, o.norm);
  Model m = layer(type, {x},
                  [type, r, o](LayerContext& c) { return adaptive_pool(type, r, c.input(), o); },
                  {}, {o.name});
  std::string text = cat("output_size=", detail::ints_text(o.output_size));
  if (o.channels == Channels::first) text += ", channels=first";
  if (r == Reduce::lp) text += cat(", norm=", o.norm);
  return detail::with_options(m, text,
                              detail::ConfigWriter()
                                  .integers("output_size", o.output_size)
                                  .channels("channels", o.channels)
                                  .number("norm", o.norm)
                                  .str());
}

// ---- Global pools -----------------------------------------------------------------------

Model global_pool_layer(const char* type, Reduce r, const Model& x, const GlobalPoolOptions& o) {
  check_norm(type, r, o.norm);
  Model m =
      layer(type, {x},
            [type, r, o](LayerContext& c) {
              const Expr& in = c.input();
              detail::spatial_rank(type, in.shape());
              Ints axes = detail::spatial_axes(in.rank(), o.channels);
              switch (r) {
                case Reduce::max:
                  return reduce_max(in, axes, o.keep_axes);
                case Reduce::avg:
                  return mean(as_float(in), axes, o.keep_axes);
                case Reduce::lp:
                  return lp_root(sum(lp_power(as_float(in), o.norm), axes, o.keep_axes), o.norm);
              }
              return Expr{};
            },
            {}, {o.name});
  std::string text = cat("keep_axes=", o.keep_axes ? "true" : "false");
  if (o.channels == Channels::first) text += ", channels=first";
  if (r == Reduce::lp) text += cat(", norm=", o.norm);
  return detail::with_options(m, text,
                              detail::ConfigWriter()
                                  .boolean("keep_axes", o.keep_axes)
                                  .channels("channels", o.channels)
                                  .number("norm", o.norm)
                                  .str());
}

}  // namespace

Model max_pool(const Model& x, const PoolOptions& o) {
  return window_pool_layer("max_pool", Reduce::max, x, o);
}
Model avg_pool(const Model& x, const PoolOptions& o) {
  return window_pool_layer("avg_pool", Reduce::avg, x, o);
}
Model lp_pool(const Model& x, const PoolOptions& o) {
  return window_pool_layer("lp_pool", Reduce::lp, x, o);
}

Model adaptive_avg_pool(const Model& x, const AdaptivePoolOptions& o) {
  return adaptive_pool_layer("adaptive_avg_pool", Reduce::avg, x, o);
}
Model adaptive_max_pool(const Model& x, const AdaptivePoolOptions& o) {
  return adaptive_pool_layer("adaptive_max_pool", Reduce::max, x, o);
}
Model adaptive_lp_pool(const Model& x, const AdaptivePoolOptions& o) {
  return adaptive_pool_layer("adaptive_lp_pool", Reduce::lp, x, o);
}

Model global_avg_pool(const Model& x, const GlobalPoolOptions& o) {
  return global_pool_layer("global_avg_pool", Reduce::avg, x, o);
}
Model global_max_pool(const Model& x, const GlobalPoolOptions& o) {
  return global_pool_layer("global_max_pool", Reduce::max, x, o);
}
Model global_lp_pool(const Model& x, const GlobalPoolOptions& o) {
  return global_pool_layer("global_lp_pool", Reduce::lp, x, o);
}

}  // namespace glia
