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
//   conv_lstm: lstm's gates with convolutions for the products, over [batch, time, spatial...,
//         channels]: kernel [k..., channels, 4 filters], recurrent_kernel [k..., filters,
//         4 filters] (a "same" convolution moving by 1), bias [4 filters].
//
// Every recurrent layer also gives its final states, [batch, units] each (final_state());
// a padded batch gives a mask, with which each sequence ends at its own last real step.
#pragma once

#include <functional>

#include "glia/layers/convolution.hpp"
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
  // Padded sequences: [batch, time], true (or nonzero) at the steps to read. A padded step
  // leaves the states as they are and outputs zeros (PyTorch's packed sequences), so the
  // last step's output and the final states are each sequence's own. Undefined: all steps.
  Model mask;
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

// Axon's conv_lstm, channels-last: x [batch, time, spatial..., channels] (1 to 3 spatial
// axes) -> [batch, time, spatial'..., filters] (or the last step's).
//   glia::Model frames = glia::input("frames", {-1, 10, 16, 16, 1});
//   glia::Model y = glia::conv_lstm(frames, 8, {.kernel_size = {3, 3}});
struct ConvLstmOptions {
  Ints kernel_size{3};         // of both convolutions: one per spatial axis, or one for all
  Ints strides{};              // of the input's convolution (1s); the recurrent one moves by 1
  Padding padding = "same";    // of the input's convolution; the recurrent one is "same"
  RecurrentOptions recurrent;  // activations, initializers, bias, mask, sequences, name, ...
};
Model conv_lstm(const Model& x, std::int64_t filters, const ConvLstmOptions& options = {},
                const RecurrentState& initial = {});

// One step of a cell on Exprs (Axon's lstm_cell, gru_cell, conv_lstm_cell), for loops
// written by hand: x [batch, features] (conv_lstm: [batch, spatial..., channels]), the
// states (lstm: {hidden, cell}; gru: {hidden}) and the parameters as the layers name and
// shape them (bias undefined: none; recurrent_bias: gru only). Returns the new states,
// the hidden state first. `options` gives the activations (and conv_lstm's convolution).
struct CellParams {
  Expr kernel, recurrent_kernel, bias, recurrent_bias;
};
std::vector<Expr> lstm_cell(const Expr& x, const std::vector<Expr>& states, const CellParams& p,
                            const RecurrentOptions& options = {});
std::vector<Expr> gru_cell(const Expr& x, const std::vector<Expr>& states, const CellParams& p,
                           const RecurrentOptions& options = {});
std::vector<Expr> conv_lstm_cell(const Expr& x, const std::vector<Expr>& states,
                                 const CellParams& p, const ConvLstmOptions& options = {});

// The final states of a recurrent layer (lstm, gru, conv_lstm) as models: the hidden state
// (the last step's output) and, for the lstms, the cell. With `reverse`, the states after
// the first step; with a mask, after each sequence's last real step. For a decoder that
// starts where an encoder ended:
//   glia::Model enc = glia::lstm(source, 64, {.return_sequences = false});
//   glia::Model dec = glia::lstm(target, 64, {}, glia::final_state(enc));
RecurrentState final_state(const Model& recurrent_layer);

// Axon's mask: true where a sequence step is not padding, [batch, time]. x [batch, time]
// (token ids) is compared with `pad_value`; x [batch, time, features...] is padding where
// every feature equals it (Keras' Masking).
//   glia::Model tokens = glia::input("tokens", {-1, 20}, glia::DType::i32);
//   glia::Model h = glia::lstm(glia::embedding(tokens, 1000, 32), 64,
//                              {.mask = glia::mask(tokens)});
Model mask(const Model& x, double pad_value = 0, const LayerOptions& options = {});

// Axon's bidirectional: the sequence layer read forwards and backwards (its `reverse`
// option), merged by "concatenate" (along the last axis; PyTorch's bidirectional), "sum"
// or "multiply". The two directions have parameters of their own.
//   glia::Model y = glia::bidirectional(x, [](const glia::Model& x, bool reverse) {
//     return glia::lstm(x, 64, {.reverse = reverse}); });
using SequenceLayer = std::function<Model(const Model& x, bool reverse)>;
Model bidirectional(const Model& x, const SequenceLayer& layer,
                    const std::string& merge = "concatenate");

}  // namespace glia
