// The activation functions (Expr compositions) and the activation layer. Each one is
// written so that no intermediate overflows for large |x| (finite at +-1e4 in f32, exp
// aside), and so that its gradient is finite there too (the branch not taken never sees
// a huge argument).
#include "glia/layers/activation.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "glia/autograd/grad.hpp"
#include "layer_util.hpp"

namespace glia {

namespace activations {

namespace {
// Integer inputs of float-only activations are cast to f32, as Nx does.
Expr floating(const Expr& x) { return is_float(x.dtype()) ? x : cast(x, DType::f32); }
}  // namespace

// max(x, 0) + alpha * expm1(min(x, 0) / alpha): expm1 only ever sees x <= 0.
Expr celu(const Expr& x, double alpha) {
  check(alpha != 0, "celu: alpha must not be 0");
  Expr f = floating(x);
  return max(f, 0.0) + alpha * expm1(min(f, 0.0) / alpha);
}

Expr elu(const Expr& x, double alpha) {
  Expr f = floating(x);
  return select(greater(f, 0.0), f, alpha * expm1(min(f, 0.0)));
}

Expr exp(const Expr& x) { return glia::exp(floating(x)); }

Expr gelu(const Expr& x, bool approximate) {
  Expr f = floating(x);
  if (!approximate) return 0.5 * f * (1.0 + erf(f * (1.0 / std::numbers::sqrt2)));
  const double c = std::sqrt(2.0 / std::numbers::pi);
  return 0.5 * f * (1.0 + glia::tanh(c * (f + 0.044715 * f * f * f)));
}

Expr hard_sigmoid(const Expr& x, double alpha, double beta) {
  return clip(alpha * floating(x) + beta, 0.0, 1.0);
}

Expr hard_silu(const Expr& x) {
  Expr f = floating(x);
  return f * hard_sigmoid(f);
}

Expr hard_tanh(const Expr& x) { return clip(x, -1, 1); }

Expr leaky_relu(const Expr& x, double alpha) {
  Expr f = floating(x);
  return select(greater(f, 0.0), f, alpha * f);
}

Expr linear(const Expr& x) { return x; }

Expr log_sumexp(const Expr& x, std::int64_t axis) { return logsumexp(x, {axis}, true); }

Expr log_sigmoid(const Expr& x) { return -softplus(-floating(x)); }

Expr log_softmax(const Expr& x, std::int64_t axis) { return glia::log_softmax(x, axis); }

Expr mish(const Expr& x) {
  Expr f = floating(x);
  return f * glia::tanh(softplus(f));
}

// max(x, 0), with the gradient of Axon's and PyTorch's relu: the cotangent where the output is
// positive and zero elsewhere, at 0 too (max's own rule would give half there). Written on the
// output, the backward pass needs only what the forward pass keeps anyway, so a compiled
// training step need not store the pre-activation or a mask beside it, and the relu can join
// the producing matmul or convolution as its epilogue.
Expr relu(const Expr& x) {
  Expr y = glia::relu(x);
  if (!is_float(x.dtype())) return y;
  return custom_grad(y, {x}, [y](const Expr& cotangent) {
    return std::vector<Expr>{select(greater(y, 0.0), cotangent, 0.0)};
  });
}

Expr relu6(const Expr& x) { return clip(x, 0, 6); }

Expr sigmoid(const Expr& x) { return glia::sigmoid(floating(x)); }

Expr silu(const Expr& x) {
  Expr f = floating(x);
  return f * glia::sigmoid(f);
}

Expr selu(const Expr& x) {
  constexpr double kAlpha = 1.6732632423543772;
  constexpr double kScale = 1.0507009873554805;
  Expr f = floating(x);
  return kScale * select(greater(f, 0.0), f, kAlpha * expm1(min(f, 0.0)));
}

Expr softmax(const Expr& x, std::int64_t axis) { return glia::softmax(x, axis); }

// log(1 + e^x) = max(x, 0) + log1p(e^-|x|): the exponent is never positive.
Expr softplus(const Expr& x) {
  Expr f = floating(x);
  return max(f, 0.0) + log1p(glia::exp(-abs(f)));
}

Expr softsign(const Expr& x) {
  Expr f = floating(x);
  return f / (1.0 + abs(f));
}

Expr tanh(const Expr& x) { return glia::tanh(floating(x)); }

const std::vector<std::string>& names() {
  static const std::vector<std::string> kNames = {
      "celu",      "elu",        "exp",      "gelu",       "hard_sigmoid", "hard_silu",
      "hard_tanh", "leaky_relu", "linear",   "log_sumexp", "log_sigmoid",  "log_softmax",
      "mish",      "relu",       "relu6",    "sigmoid",    "silu",         "selu",
      "softmax",   "softplus",   "softsign", "tanh"};
  return kNames;
}

Expr by_name(std::string_view name, const Expr& x) {
  using Fn = Expr (*)(const Expr&);
  static const std::vector<std::pair<std::string_view, Fn>> kTable = {
      {"celu", [](const Expr& e) { return celu(e); }},
      {"elu", [](const Expr& e) { return elu(e); }},
      {"exp", [](const Expr& e) { return activations::exp(e); }},
      {"gelu", [](const Expr& e) { return gelu(e); }},
      {"hard_sigmoid", [](const Expr& e) { return hard_sigmoid(e); }},
      {"hard_silu", [](const Expr& e) { return hard_silu(e); }},
      {"hard_tanh", [](const Expr& e) { return hard_tanh(e); }},
      {"leaky_relu", [](const Expr& e) { return leaky_relu(e); }},
      {"linear", [](const Expr& e) { return linear(e); }},
      {"log_sumexp", [](const Expr& e) { return log_sumexp(e); }},
      {"log_sigmoid", [](const Expr& e) { return log_sigmoid(e); }},
      {"log_softmax", [](const Expr& e) { return activations::log_softmax(e); }},
      {"mish", [](const Expr& e) { return mish(e); }},
      {"relu", [](const Expr& e) { return activations::relu(e); }},
      {"relu6", [](const Expr& e) { return relu6(e); }},
      {"sigmoid", [](const Expr& e) { return activations::sigmoid(e); }},
      {"silu", [](const Expr& e) { return silu(e); }},
      {"selu", [](const Expr& e) { return selu(e); }},
      {"softmax", [](const Expr& e) { return activations::softmax(e); }},
      {"softplus", [](const Expr& e) { return softplus(e); }},
      {"softsign", [](const Expr& e) { return softsign(e); }},
      {"tanh", [](const Expr& e) { return activations::tanh(e); }},
  };
  for (const auto& [n, fn] : kTable)
    if (n == name) return fn(x);
  std::string known;
  for (const std::string& n : names()) known += (known.empty() ? "" : ", ") + n;
  throw Error(cat("unknown activation '", name, "' (known: ", known, ")"));
}

}  // namespace activations

namespace detail {
void check_activation(std::string_view layer, const std::string& activation) {
  const auto& n = activations::names();
  check(std::find(n.begin(), n.end(), activation) != n.end(), layer, ": unknown activation '",
        activation, "'");
}
}  // namespace detail

Model Model::then(const std::string& activation) const {
  return glia::activation(*this, activation);
}

Model activation(const Model& x, const std::string& activation, const ActivationOptions& options) {
  detail::check_activation("activation", activation);
  Model m =
      layer(activation, {x},
            [activation](LayerContext& c) { return activations::by_name(activation, c.input()); },
            {}, {options.name});
  return detail::with_config(m, "{}");  // the type names the activation
}

}  // namespace glia
