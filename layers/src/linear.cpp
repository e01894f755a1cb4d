// Linear layers: dense, bilinear, embedding and bias.
#include "glia/layers/linear.hpp"

#include "glia/layers/activation.hpp"
#include "layer_util.hpp"

namespace glia {

namespace {
std::string dense_config(std::int64_t units, const DenseOptions& o) {
  return detail::ConfigWriter()
      .integer("units", units)
      .string("activation", o.activation)
      .boolean("use_bias", o.use_bias)
      .initializer("kernel_initializer", o.kernel_initializer)
      .initializer("bias_initializer", o.bias_initializer)
      .str();
}
}  // namespace

Model dense(const Model& x, std::int64_t units, const DenseOptions& o) {
  check(units > 0, "dense: units must be positive, got ", units);
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
  return detail::with_options(m, cat("units=", units, ", activation=", act),
                              dense_config(units, o));
}

Model bilinear(const Model& a, const Model& b, std::int64_t units, const DenseOptions& o) {
  check(units > 0, "bilinear: units must be positive, got ", units);
  detail::check_activation("bilinear", o.activation);
  std::vector<ParamSpec> params{{"kernel",
                                 [units](const InputShapes& in) {
                                   return Shape{units, detail::last_dim(in[0], "bilinear"),
                                                detail::last_dim(in[1], "bilinear")};
                                 },
                                 o.kernel_initializer}};
  if (o.use_bias)
    params.push_back(
        {"bias", [units](const InputShapes&) { return Shape{units}; }, o.bias_initializer});
  bool use_bias = o.use_bias;
  std::string act = o.activation;
  Model m =
      layer("bilinear", {a, b},
            [use_bias, act](LayerContext& c) {
              const Expr& x1 = c.input(0);  // (..., in1)
              const Expr& x2 = c.input(1);  // (..., in2)
              Ints lead1(x1.shape().begin(), x1.shape().end() - 1);
              Ints lead2(x2.shape().begin(), x2.shape().end() - 1);
              check(lead1 == lead2, "bilinear: expected inputs with the same leading axes, got ",
                    x1.type(), " and ", x2.type());
              // (..., units, in2) . (..., 1, in2) summed over in2 -> (..., units)
              Expr t = dot_general(x1, c.param("kernel"), {x1.rank() - 1}, {1});
              Expr y = sum(t * expand_dims(x2, -2), {-1});
              if (use_bias) y = y + c.param("bias");
              return activations::by_name(act, y);
            },
            std::move(params), {o.name});
  return detail::with_options(m, cat("units=", units, ", activation=", act),
                              dense_config(units, o));
}

Model embedding(const Model& ids, std::int64_t vocab_size, std::int64_t embedding_size,
                const EmbeddingOptions& o) {
  check(vocab_size > 0, "embedding: vocab_size must be positive, got ", vocab_size);
  check(embedding_size > 0, "embedding: embedding_size must be positive, got ", embedding_size);
  std::vector<ParamSpec> params{{"kernel",
                                 [=](const InputShapes&) {
                                   return Shape{vocab_size, embedding_size};
                                 },
                                 o.kernel_initializer}};
  Model m =
      layer("embedding", {ids},
            [](LayerContext& c) {
              const Expr& in = c.input();
              check(is_integer(in.dtype()), "embedding: expected integer ids, got ", in.type());
              return take(c.param("kernel"), in, 0);
            },
            std::move(params), {o.name});
  return detail::with_options(m,
                              cat("vocab_size=", vocab_size, ", embedding_size=", embedding_size),
                              detail::ConfigWriter()
                                  .integer("vocab_size", vocab_size)
                                  .integer("embedding_size", embedding_size)
                                  .initializer("kernel_initializer", o.kernel_initializer)
                                  .str());
}

Model bias(const Model& x, const BiasOptions& o) {
  std::vector<ParamSpec> params{
      {"bias", [](const InputShapes& in) { return Shape{detail::last_dim(in[0], "bias")}; },
       o.bias_initializer}};
  Model m = layer("bias", {x}, [](LayerContext& c) { return c.input() + c.param("bias"); },
                  std::move(params), {o.name});
  return detail::with_config(
      m, detail::ConfigWriter().initializer("bias_initializer", o.bias_initializer).str());
}

}  // namespace glia
