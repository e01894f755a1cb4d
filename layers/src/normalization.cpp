// Normalization layers. Statistics are taken over the axes each layer names; the
// feature axis (options.axis, channels-last by default) carries the per-channel gamma
// and beta. batch_norm and instance_norm follow PyTorch: normalise with the biased batch
// variance in train mode, update running statistics with the unbiased one, and use the
// running statistics in inference mode.
#include "glia/layers/normalization.hpp"

#include <algorithm>

#include "layer_util.hpp"

namespace glia {

namespace {

// The size of the feature axis, for parameter shapes.
std::function<Shape(const InputShapes&)> channels(std::int64_t axis, std::string type) {
  return [axis, type](const InputShapes& in) {
    return Shape{in[0][in[0].normalize_axis(axis, type)]};
  };
}

// A per-channel vector [C] broadcast along the feature axis of `like`.
Expr along(const Expr& v, const Expr& like, int axis) {
  return broadcast(v, like.shape(), {static_cast<std::int64_t>(axis)});
}

// Every axis of a rank-`rank` value except those in `keep`.
Ints all_but(int rank, std::initializer_list<int> keep) {
  Ints axes;
  for (int i = 0; i < rank; ++i)
    if (std::find(keep.begin(), keep.end(), i) == keep.end()) axes.push_back(i);
  return axes;
}

std::int64_t count(const Expr& x, const Ints& axes) {
  std::int64_t n = 1;
  for (std::int64_t a : axes) n *= x.dim(static_cast<int>(a));
  return n;
}

void check_options(const NormOptions& o, std::string_view type) {
  check(o.epsilon >= 0, type, ": epsilon must be >= 0, got ", o.epsilon);
  check(o.momentum >= 0 && o.momentum <= 1, type, ": momentum must be in [0, 1], got ", o.momentum);
}

std::vector<ParamSpec> affine_params(const NormOptions& o, const std::string& type, bool beta) {
  std::vector<ParamSpec> p{{"gamma", channels(o.axis, type), o.gamma_initializer}};
  if (beta) p.push_back({"beta", channels(o.axis, type), o.beta_initializer});
  return p;
}

void add_running_stats(std::vector<ParamSpec>& p, const NormOptions& o, const std::string& type) {
  p.push_back({"running_mean", channels(o.axis, type), initializers::zeros(), DType::f32, true});
  p.push_back({"running_var", channels(o.axis, type), initializers::ones(), DType::f32, true});
}

std::string describe(const NormOptions& o, bool momentum) {
  std::string s = cat("axis=", o.axis, ", epsilon=", o.epsilon);
  if (momentum) s += cat(", momentum=", o.momentum);
  return s;
}

// The JSON config: `head` (group_norm's num_groups) then the options every norm takes.
std::string norm_config(detail::ConfigWriter head, const NormOptions& o) {
  return head.integer("axis", o.axis)
      .number("epsilon", o.epsilon)
      .number("momentum", o.momentum)
      .initializer("gamma_initializer", o.gamma_initializer)
      .initializer("beta_initializer", o.beta_initializer)
      .str();
}

// (x - mean) / sqrt(var + epsilon), the statistics already broadcastable against x.
Expr normalize(const Expr& x, const Expr& mean, const Expr& var, double epsilon) {
  return (x - mean) * rsqrt(var + epsilon);
}

// batch_norm (statistics over every axis but the feature axis) and instance_norm (per
// sample: every axis but the batch and feature axes; the running update averages the
// per-sample statistics over the batch, as PyTorch does).
Expr running_norm(LayerContext& c, const NormOptions& o, const std::string& type, bool instance) {
  const Expr& x = c.input();
  check(is_float(x.dtype()), "expected a floating-point input, got ", x.type());
  int a = x.shape().normalize_axis(o.axis, type);
  if (instance) {
    check(x.rank() >= 3, "expected an input of rank >= 3 ([N, spatial..., C]), got ", x.type());
    check(a != 0, "the feature axis must not be the batch axis 0");
  }
  const Expr& rm = c.param("running_mean");
  const Expr& rv = c.param("running_var");
  Expr y;
  if (c.training()) {
    Ints reduce = instance ? all_but(x.rank(), {0, a}) : all_but(x.rank(), {a});
    std::int64_t n = count(x, reduce);
    check(n > 1, "expected more than 1 value per channel when training, got ", n);
    Expr mean = glia::mean(x, reduce, true);
    Expr var = variance(x, reduce, true);  // biased, for normalising
    y = normalize(x, mean, var, o.epsilon);
    Expr unbiased = var * (static_cast<double>(n) / static_cast<double>(n - 1));
    std::int64_t ch = x.dim(a);
    if (instance) {  // [N, 1.., C, 1..] -> mean over the batch
      mean = glia::mean(mean, {0}, true);
      unbiased = glia::mean(unbiased, {0}, true);
    }
    double m = o.momentum;
    c.update_state("running_mean", cast((1.0 - m) * rm + m * reshape(mean, {ch}), rm.dtype()));
    c.update_state("running_var", cast((1.0 - m) * rv + m * reshape(unbiased, {ch}), rv.dtype()));
  } else {
    y = normalize(x, along(rm, x, a), along(rv, x, a), o.epsilon);
  }
  return y * along(c.param("gamma"), x, a) + along(c.param("beta"), x, a);
}

Model running_norm_layer(const Model& x, const NormOptions& o, const std::string& type,
                         bool instance) {
  check_options(o, type);
  std::vector<ParamSpec> params = affine_params(o, type, true);
  add_running_stats(params, o, type);
  Model m =
      layer(type, {x},
            [o, type, instance](LayerContext& c) { return running_norm(c, o, type, instance); },
            std::move(params), {o.name});
  return detail::with_options(m, describe(o, true), norm_config({}, o));
}

}  // namespace

Model batch_norm(const Model& x, const NormOptions& o) {
  return running_norm_layer(x, o, "batch_norm", false);
}

Model instance_norm(const Model& x, const NormOptions& o) {
  return running_norm_layer(x, o, "instance_norm", true);
}

Model layer_norm(const Model& x, const NormOptions& o) {
  check_options(o, "layer_norm");
  Model m = layer("layer_norm", {x},
                  [o](LayerContext& c) {
                    const Expr& x = c.input();
                    check(is_float(x.dtype()), "expected a floating-point input, got ", x.type());
                    int a = x.shape().normalize_axis(o.axis, "layer_norm");
                    Expr y = normalize(x, mean(x, {a}, true), variance(x, {a}, true), o.epsilon);
                    return y * along(c.param("gamma"), x, a) + along(c.param("beta"), x, a);
                  },
                  affine_params(o, "layer_norm", true), {o.name});
  return detail::with_options(m, describe(o, false), norm_config({}, o));
}

// Splits the channel axis C into [num_groups, C / num_groups] and normalises each sample's
// group over its spatial axes and the channels in the group.
Model group_norm(const Model& x, std::int64_t num_groups, const NormOptions& o) {
  check_options(o, "group_norm");
  check(num_groups >= 1, "group_norm: num_groups must be >= 1, got ", num_groups);
  Model m =
      layer("group_norm", {x},
            [o, num_groups](LayerContext& c) {
              const Expr& x = c.input();
              check(is_float(x.dtype()), "expected a floating-point input, got ", x.type());
              check(x.rank() >= 2, "expected an input of rank >= 2 ([N, ..., C]), got ", x.type());
              int a = x.shape().normalize_axis(o.axis, "group_norm");
              check(a != 0, "the feature axis must not be the batch axis 0");
              std::int64_t ch = x.dim(a);
              check(ch % num_groups == 0, "num_groups (", num_groups, ") must divide the ", ch,
                    " channels");
              Ints dims = x.shape().dims(), split;
              for (int i = 0; i < x.rank(); ++i) {
                if (i != a) {
                  split.push_back(dims[static_cast<std::size_t>(i)]);
                  continue;
                }
                split.push_back(num_groups);
                split.push_back(ch / num_groups);
              }
              Expr g = reshape(x, split);
              Ints reduce = all_but(g.rank(), {0, a});
              Expr y = reshape(
                  normalize(g, mean(g, reduce, true), variance(g, reduce, true), o.epsilon), dims);
              return y * along(c.param("gamma"), x, a) + along(c.param("beta"), x, a);
            },
            affine_params(o, "group_norm", true), {o.name});
  return detail::with_options(
      m, cat("num_groups=", num_groups, ", ", describe(o, false)),
      norm_config(detail::ConfigWriter().integer("num_groups", num_groups), o));
}

Model rms_norm(const Model& x, const NormOptions& o) {
  check_options(o, "rms_norm");
  Model m = layer("rms_norm", {x},
                  [o](LayerContext& c) {
                    const Expr& x = c.input();
                    check(is_float(x.dtype()), "expected a floating-point input, got ", x.type());
                    int a = x.shape().normalize_axis(o.axis, "rms_norm");
                    Expr y = x * rsqrt(mean(x * x, {a}, true) + o.epsilon);
                    return y * along(c.param("gamma"), x, a);
                  },
                  affine_params(o, "rms_norm", false), {o.name});
  return detail::with_options(m, describe(o, false), norm_config({}, o));
}

}  // namespace glia
