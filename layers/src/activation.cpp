// The activation functions (Expr compositions) and the activation layer.
#include "glia/layers/activation.hpp"

#include <algorithm>

#include "layer_util.hpp"

namespace glia {

namespace activations {

Expr linear(const Expr& x) { return x; }
Expr relu(const Expr& x) { return glia::relu(x); }
Expr sigmoid(const Expr& x) { return glia::sigmoid(x); }
Expr tanh(const Expr& x) { return glia::tanh(x); }
Expr softmax(const Expr& x, std::int64_t axis) { return glia::softmax(x, axis); }

const std::vector<std::string>& names() {
  static const std::vector<std::string> kNames = {
      "celu",      "elu",        "exp",      "gelu",       "hard_sigmoid", "hard_silu",
      "hard_tanh", "leaky_relu", "linear",   "log_sumexp", "log_sigmoid",  "log_softmax",
      "mish",      "relu",       "relu6",    "sigmoid",    "silu",         "selu",
      "softmax",   "softplus",   "softsign", "tanh"};
  return kNames;
}

Expr by_name(std::string_view name, const Expr& x) {
  if (name == "linear") return activations::linear(x);
  if (name == "relu") return activations::relu(x);
  if (name == "sigmoid") return activations::sigmoid(x);
  if (name == "tanh") return activations::tanh(x);
  if (name == "softmax") return activations::softmax(x);
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

}  // namespace glia
