// Linear layers: dense, bilinear, embedding and bias.
#include "glia/layers/linear.hpp"

#include "glia/layers/activation.hpp"
#include "layer_util.hpp"

namespace glia {

Model dense(const Model& x, std::int64_t units, const DenseOptions& o) {
  check(units > 0, "dense: units must be positive, got ", units);
  activations::names();  // validate the activation name now, not at build time
  detail::check_activation("dense", o.activation);
  std::vector<ParamSpec> params{{"kernel",
                                 [units](const InputShapes& in) {
                                   return Shape{detail::last_dim(in[0], "dense"), units};
                                 },
                                 o.kernel_initializer}};
  if (o.use_bias)
    params.push_back(
        {"bias", [units](const InputShapes&) { return Shape{units}; }, o.bias_initializer});
  bool use_bias = o.use_bias;
  std::string act = o.activation;
  Model m = layer("dense", {x},
                  [use_bias, act](LayerContext& c) {
                    const Expr& in = c.input();
                    Expr y = dot_general(in, c.param("kernel"), {in.rank() - 1}, {0});
                    if (use_bias) y = y + c.param("bias");
                    return activations::by_name(act, y);
                  },
                  std::move(params), {o.name});
  return detail::with_options(m, cat("units=", units, ", activation=", act));
}

}  // namespace glia
