// Recurrent layers over sequences [batch, time, features] (Axon's lstm and gru): each is ONE
// loop node (glia::scan) in the traced graph, so the graph does not grow with the sequence
// and reverse mode runs the loop backwards; `unroll` traces the steps one by one instead.
//   glia::Model x = glia::input("rows", {-1, 28, 28});
//   glia::Model seq = glia::lstm(x, 128);                                 // [N, 28, 128]
//   glia::Model last = glia::lstm(x, 128, {.return_sequences = false});   // [N, 128]
//
// Gates and parameters (glia's [in, out] layout, gates side by side along the last axis):
//   lstm: gates i, f, g, o (PyTorch's order); kernel [features, 4 units], recurrent_kernel
//         [units, 4 units], bias [4 units] (PyTorch's bias_ih + bias_hh):
//           i, f, o = rec_act(x.Wi + h.Ui + b), g = act(x.Wg + h.Ug + bg)
//           c' = f * c + i * g,  h' = o * act(c')
//   gru:  gates r, z, n (PyTorch's order); kernel [features, 3 units], recurrent_kernel
//         [units, 3 units], bias [3 units] (bias_ih), recurrent_bias [3 units] (bias_hh):
//           r, z = rec_act(x.Wr + br + h.Ur + ur), n = act(x.Wn + bn + r * (h.Un + un))
//           h' = (1 - z) * n + z * h
// PyTorch's weight_ih is kernel transposed, weight_hh recurrent_kernel transposed.
#pragma once

#include "glia/layers/initializers.hpp"

namespace glia {

struct RecurrentOptions {
  std::string activation = "tanh";               // any name activations::by_name accepts
  std::string recurrent_activation = "sigmoid";  // the gates'
  bool use_bias = true;
  Initializer kernel_initializer = initializers::glorot_uniform();
  Initializer recurrent_initializer = initializers::orthogonal();
  Initializer bias_initializer = initializers::zeros();
  bool return_sequences = true;  // false: the last step's output only, [batch, units]
  bool reverse = false;          // read the sequence from its end (outputs keep their place)
  bool unroll = false;           // trace every step (the graph grows with the sequence)
  std::string name;
};

// The initial states as model inputs ([batch, units] each); undefined: zeros.
struct RecurrentState {
  Model hidden;
  Model cell;  // lstm only
};

Model lstm(const Model& x, std::int64_t units, const RecurrentOptions& options = {},
           const RecurrentState& initial = {});
Model gru(const Model& x, std::int64_t units, const RecurrentOptions& options = {},
          const RecurrentState& initial = {});

}  // namespace glia
