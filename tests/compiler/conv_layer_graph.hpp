// The conv layer's forward pass as layers/ traces it, for backend tests: NHWC input, HWIO
// kernel, padding 1 on each side, then bias and relu.
#pragma once

#include "glia/core/expr.hpp"

namespace glia::testing {

inline Expr conv_layer_nhwc(const Expr& x, const Expr& kernel, const Expr& bias) {
  Expr nchw = transpose(x, {0, 3, 1, 2});
  Expr oihw = transpose(kernel, {3, 2, 0, 1});
  Expr y =
      transpose(conv(nchw, oihw, {.padding_low = {1, 1}, .padding_high = {1, 1}}), {0, 2, 3, 1});
  return relu(y + broadcast(bias, y.shape(), {3}));
}

}  // namespace glia::testing
