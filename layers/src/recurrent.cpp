// Recurrent layers: lstm and gru as one scan over the time axis. The input projection of
// every step is one matrix product before the loop; the loop body multiplies the hidden
// state by the recurrent kernel and applies the gates.
#include "glia/layers/recurrent.hpp"

#include "glia/core/scan.hpp"
#include "glia/layers/activation.hpp"
#include "layer_util.hpp"

namespace glia {

namespace {

using Vs = std::vector<Expr>;

struct Cell {
  std::string type;  // "lstm", "gru"
  int gates = 4;
  int states = 2;  // carries: h (and c)
  bool recurrent_bias = false;
};

// One step: (states, projected input row [N, gates * units], recurrent params) -> new states.
using StepFn = std::function<Vs(const Vs& states, const Expr& projected, const Vs& params)>;

// Gate k of [N, gates * units].
Expr gate(const Expr& z, std::int64_t k, std::int64_t units) {
  return slice_axis(z, k * units, units, -1);
}

StepFn lstm_step(std::int64_t units, const std::string& act, const std::string& rec) {
  return [=](const Vs& s, const Expr& xw, const Vs& p) {
    Expr z = xw + dot(s[0], p[0]);
    Expr i = activations::by_name(rec, gate(z, 0, units));
    Expr f = activations::by_name(rec, gate(z, 1, units));
    Expr g = activations::by_name(act, gate(z, 2, units));
    Expr o = activations::by_name(rec, gate(z, 3, units));
    Expr c = f * s[1] + i * g;
    return Vs{o * activations::by_name(act, c), c};
  };
}

StepFn gru_step(std::int64_t units, const std::string& act, const std::string& rec, bool use_bias) {
  return [=](const Vs& s, const Expr& xw, const Vs& p) {
    Expr hu = dot(s[0], p[0]);
    if (use_bias) hu = hu + p[1];
    Expr r = activations::by_name(rec, gate(xw, 0, units) + gate(hu, 0, units));
    Expr z = activations::by_name(rec, gate(xw, 1, units) + gate(hu, 1, units));
    Expr n = activations::by_name(act, gate(xw, 2, units) + r * gate(hu, 2, units));
    return Vs{(1.0 - z) * n + z * s[0]};
  };
}

// Runs `step` over xs [N, T, F] -> the outputs [N, T, units] (or the last, [N, units]).
Expr run_sequence(const Expr& xs, const Vs& init, const Expr& kernel, const Expr& bias,
                  const Vs& recurrent, const StepFn& step, const RecurrentOptions& o) {
  // [N, T, F] . [F, G] -> [N, T, G] -> [T, N, G]: the loop steps along the leading axis.
  Expr xw = dot_general(xs, kernel, {2}, {0});
  if (bias.defined()) xw = xw + bias;
  xw = transpose(xw, {1, 0, 2});
  const std::int64_t steps = xw.dim(0);
  Expr sequence, last;
  if (o.unroll) {
    Vs states = init;
    Vs rows(static_cast<std::size_t>(steps));
    for (std::int64_t s = 0; s < steps; ++s) {
      const std::int64_t t = o.reverse ? steps - 1 - s : s;
      states = step(states, squeeze(slice_axis(xw, t, 1, 0), {0}), recurrent);
      rows[static_cast<std::size_t>(t)] = states[0];
    }
    last = states[0];
    if (o.return_sequences)
      sequence = steps > 0 ? stack(rows, 0) : zeros({0, xs.dim(0), init[0].dim(1)});
  } else {
    ScanResult r = scan(
        [&](const Vs& c, const Vs& row, const Vs& p) {
          Vs next = step(c, row[0], p);
          return ScanResult{next, o.return_sequences ? Vs{next[0]} : Vs{}};
        },
        init, {xw}, recurrent, {.reverse = o.reverse, .name = "recurrent_step"});
    last = r.carries[0];
    if (o.return_sequences) sequence = r.outputs[0];
  }
  return o.return_sequences ? transpose(sequence, {1, 0, 2}) : last;
}

std::string recurrent_config(std::int64_t units, const RecurrentOptions& o) {
  return detail::ConfigWriter()
      .integer("units", units)
      .string("activation", o.activation)
      .string("recurrent_activation", o.recurrent_activation)
      .boolean("use_bias", o.use_bias)
      .initializer("kernel_initializer", o.kernel_initializer)
      .initializer("recurrent_initializer", o.recurrent_initializer)
      .initializer("bias_initializer", o.bias_initializer)
      .boolean("return_sequences", o.return_sequences)
      .boolean("reverse", o.reverse)
      .boolean("unroll", o.unroll)
      .str();
}

Model recurrent(const Cell& cell, const Model& x, std::int64_t units, const RecurrentOptions& o,
                const RecurrentState& initial) {
  const std::string& type = cell.type;
  check(units > 0, type, ": units must be positive, got ", units);
  detail::check_activation(type, o.activation);
  detail::check_activation(type, o.recurrent_activation);
  check(cell.states == 2 || !initial.cell.defined(), type,
        ": has no cell state; give the initial hidden state alone");
  check(!initial.cell.defined() || initial.hidden.defined(), type,
        ": an initial cell state needs the initial hidden state too");
  const std::int64_t width = cell.gates * units;
  std::vector<ParamSpec> params{{"kernel",
                                 [type, width](const InputShapes& in) {
                                   check(in[0].rank() == 3, type,
                                         ": expected a sequence [batch, time, features], got ",
                                         in[0].to_string());
                                   return Shape{in[0][2], width};
                                 },
                                 o.kernel_initializer},
                                {"recurrent_kernel",
                                 [units, width](const InputShapes&) {
                                   return Shape{units, width};
                                 },
                                 o.recurrent_initializer}};
  if (o.use_bias) {
    params.push_back(
        {"bias", [width](const InputShapes&) { return Shape{width}; }, o.bias_initializer});
    if (cell.recurrent_bias)
      params.push_back({"recurrent_bias", [width](const InputShapes&) { return Shape{width}; },
                        o.bias_initializer});
  }
  std::vector<Model> inputs{x};
  if (initial.hidden.defined()) inputs.push_back(initial.hidden);
  if (initial.cell.defined()) inputs.push_back(initial.cell);
  const bool has_h = initial.hidden.defined(), has_c = initial.cell.defined();
  StepFn step = type == "lstm" ? lstm_step(units, o.activation, o.recurrent_activation)
                               : gru_step(units, o.activation, o.recurrent_activation, o.use_bias);
  Model m =
      layer(type, inputs,
            [=](LayerContext& c) {
              const Expr& xs = c.input(0);
              check(xs.rank() == 3, type, ": expected a sequence [batch, time, features], got ",
                    xs.type().to_string());
              const Shape state{xs.dim(0), units};
              Vs init;
              std::size_t next = 1;
              for (int s = 0; s < cell.states; ++s) {
                bool given = s == 0 ? has_h : has_c;
                Expr v = given ? c.input(next++) : zeros(state, xs.dtype());
                check(v.shape() == state, type, ": the initial ", s == 0 ? "hidden" : "cell",
                      " state is ", v.type().to_string(), ", expected ",
                      TensorType{xs.dtype(), state}.to_string());
                init.push_back(v);
              }
              Vs recurrent{c.param("recurrent_kernel")};
              if (o.use_bias && cell.recurrent_bias) recurrent.push_back(c.param("recurrent_bias"));
              return run_sequence(xs, init, c.param("kernel"),
                                  o.use_bias ? c.param("bias") : Expr(), recurrent, step, o);
            },
            std::move(params), {o.name});
  return detail::with_options(m,
                              cat("units=", units, o.return_sequences ? "" : ", last step",
                                  o.reverse ? ", reverse" : "", o.unroll ? ", unrolled" : ""),
                              recurrent_config(units, o));
}

}  // namespace

Model lstm(const Model& x, std::int64_t units, const RecurrentOptions& o,
           const RecurrentState& initial) {
  return recurrent({"lstm", 4, 2, false}, x, units, o, initial);
}

Model gru(const Model& x, std::int64_t units, const RecurrentOptions& o,
          const RecurrentState& initial) {
  return recurrent({"gru", 3, 1, true}, x, units, o, initial);
}

}  // namespace glia
