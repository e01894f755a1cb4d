// The 22 activations of Axon, as Expr functions (glia::activations) and as layers.
//   glia::Model y = glia::activation(x, "gelu");
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "glia/layers/model.hpp"

namespace glia {

namespace activations {
Expr celu(const Expr& x, double alpha = 1.0);
Expr elu(const Expr& x, double alpha = 1.0);
Expr exp(const Expr& x);
Expr gelu(const Expr& x, bool approximate = false);  // exact uses erf
Expr hard_sigmoid(const Expr& x, double alpha = 1.0 / 6.0,
                  double beta = 0.5);  // relu6(x+3)/6 at defaults
Expr hard_silu(const Expr& x);
Expr hard_tanh(const Expr& x);
Expr leaky_relu(const Expr& x, double alpha = 0.01);
Expr linear(const Expr& x);
Expr log_sumexp(const Expr& x, std::int64_t axis = -1);  // keeps the axis (size 1)
Expr log_sigmoid(const Expr& x);
Expr log_softmax(const Expr& x, std::int64_t axis = -1);
Expr mish(const Expr& x);
Expr relu(const Expr& x);
Expr relu6(const Expr& x);
Expr sigmoid(const Expr& x);
Expr silu(const Expr& x);
Expr selu(const Expr& x);
Expr softmax(const Expr& x, std::int64_t axis = -1);
Expr softplus(const Expr& x);
Expr softsign(const Expr& x);
Expr tanh(const Expr& x);

// The activation with this name and default parameters; glia::Error listing the names.
Expr by_name(std::string_view name, const Expr& x);
const std::vector<std::string>& names();  // the 22 names
}  // namespace activations

struct ActivationOptions {
  std::string name;  // the layer's name
};
// A layer applying the named activation (type: the activation's name).
Model activation(const Model& x, const std::string& activation,
                 const ActivationOptions& options = {});

}  // namespace glia
