// Recurrent layers: lstm, gru and conv_lstm as one scan over the time axis. The input
// projection of every step is one product before the loop (a matrix product, or one
// convolution over all frames); the loop body applies the recurrent product and the gates.
#include "glia/layers/recurrent.hpp"

#include "glia/core/scan.hpp"
#include "glia/layers/activation.hpp"
#include "layer_util.hpp"
#include "recurrent_util.hpp"
#include "spatial_util.hpp"

namespace glia {

namespace {

using Vs = std::vector<Expr>;

// One step: (states, projected input row [N, ..., gates * units], recurrent params) -> new
// states, the hidden state first, then the recurrent product: the loop stores it, so that
// reverse mode reads it instead of multiplying again.
using StepFn = std::function<Vs(const Vs& states, const Expr& projected, const Vs& params)>;
// The hidden state times the recurrent kernel: a matrix product, or a "same" convolution.
using ProductFn = std::function<Expr(const Expr& h, const Expr& kernel)>;

// What distinguishes the cells: gates, states, parameter shapes, products, the step.
struct Cell {
  std::string type;  // "lstm", "gru", "conv_lstm"
  int gates = 4;
  int states = 2;  // carries: h (and c)
  bool recurrent_bias = false;
  std::int64_t units = 0;
  // The kernels' shapes, from the input's.
  std::function<Shape(const Shape&x)> kernel_shape, recurrent_shape;
  // [N, T, ...] . kernel -> every step's projected input, time first: [T, N, ..., G].
  std::function<Expr(const Expr& xs, const Expr& kernel)> project;
  StepFn step;
};

// Gate k of [..., gates * units].
Expr gate(const Expr& z, std::int64_t k, std::int64_t units) {
  return slice_axis(z, k * units, units, -1);
}

StepFn lstm_step(std::int64_t units, const RecurrentOptions& o, ProductFn product) {
  return [=, act = o.activation, rec = o.recurrent_activation](const Vs& s, const Expr& xw,
                                                               const Vs& p) {
    Expr hu = product(s[0], p[0]);
    Expr z = xw + hu;
    Expr i = activations::by_name(rec, gate(z, 0, units));
    Expr f = activations::by_name(rec, gate(z, 1, units));
    Expr g = activations::by_name(act, gate(z, 2, units));
    Expr o = activations::by_name(rec, gate(z, 3, units));
    Expr c = f * s[1] + i * g;
    return Vs{o * activations::by_name(act, c), c, hu};
  };
}

StepFn gru_step(std::int64_t units, const RecurrentOptions& o) {
  return [=, act = o.activation, rec = o.recurrent_activation, bias = o.use_bias](
             const Vs& s, const Expr& xw, const Vs& p) {
    Expr hu = dot(s[0], p[0]);
    if (bias) hu = hu + p[1];
    Expr r = activations::by_name(rec, gate(xw, 0, units) + gate(hu, 0, units));
    Expr z = activations::by_name(rec, gate(xw, 1, units) + gate(hu, 1, units));
    Expr n = activations::by_name(act, gate(xw, 2, units) + r * gate(hu, 2, units));
    return Vs{(1.0 - z) * n + z * s[0], hu};
  };
}

// The rows of a sequence [N, T, ...] as [T, N, ...] and back (the loop steps along axis 0).
Expr swap_batch_and_time(const Expr& x) {
  Ints perm{1, 0};
  for (int a = 2; a < x.rank(); ++a) perm.push_back(a);
  return transpose(x, perm);
}

// The layer's forward: the projection, then the steps. `keep` is [T, N] bool, or undefined.
Expr run(LayerContext& c, const Cell& cell, const RecurrentOptions& o, bool has_h, bool has_c,
         bool has_mask) {
  const Expr& xs = c.input(0);
  Expr xw = cell.project(xs, c.param("kernel"));
  if (o.use_bias) xw = xw + c.param("bias");
  Ints state_dims = xw.shape().dims();
  state_dims.erase(state_dims.begin());
  state_dims.back() = cell.units;
  const Shape state(state_dims);
  Vs init;
  std::size_t next = 1;
  for (int s = 0; s < cell.states; ++s) {
    bool given = s == 0 ? has_h : has_c;
    Expr v = given ? c.input(next++) : zeros(state, xs.dtype());
    check(v.shape() == state, cell.type, ": the initial ", s == 0 ? "hidden" : "cell", " state is ",
          v.type(), ", expected ", TensorType{xs.dtype(), state}.to_string());
    init.push_back(v);
  }
  Expr keep;
  if (has_mask) {
    const Expr& m = c.input(next);
    const Shape want{xs.dim(0), xs.dim(1)};
    check(m.shape() == want, cell.type, ": the mask is ", m.type(), ", expected ", want.to_string(),
          " ([batch, time])");
    keep = transpose(m.dtype() == DType::boolean ? m : not_equal(m, 0), {1, 0});
  }
  Vs recurrent{c.param("recurrent_kernel")};
  if (o.use_bias && cell.recurrent_bias) recurrent.push_back(c.param("recurrent_bias"));
  detail::Steps r = detail::run_steps(xw, init, keep, recurrent, cell.step, o);
  c.set_output("hidden", r.finals[0]);
  if (cell.states == 2) c.set_output("cell", r.finals[1]);
  return o.return_sequences ? swap_batch_and_time(r.outputs) : r.finals[0];
}

Model recurrent(const Cell& cell, const Model& x, const RecurrentOptions& o,
                const RecurrentState& initial, std::string options_text,
                detail::ConfigWriter config) {
  const std::string& type = cell.type;
  check(cell.units > 0, type, ": units must be positive, got ", cell.units);
  detail::check_activation(type, o.activation);
  detail::check_activation(type, o.recurrent_activation);
  check(cell.states == 2 || !initial.cell.defined(), type,
        ": has no cell state; give the initial hidden state alone");
  check(!initial.cell.defined() || initial.hidden.defined(), type,
        ": an initial cell state needs the initial hidden state too");
  const std::int64_t width = cell.gates * cell.units;
  auto fixed = [](Shape s) { return [s](const InputShapes&) { return s; }; };
  auto of_input = [](auto f) { return [f](const InputShapes& in) { return f(in[0]); }; };
  std::vector<ParamSpec> params{
      {"kernel", of_input(cell.kernel_shape), o.kernel_initializer},
      {"recurrent_kernel", of_input(cell.recurrent_shape), o.recurrent_initializer}};
  if (o.use_bias) {
    params.push_back({"bias", fixed(Shape{width}), o.bias_initializer});
    if (cell.recurrent_bias)
      params.push_back({"recurrent_bias", fixed(Shape{width}), o.bias_initializer});
  }
  std::vector<Model> inputs{x};
  const bool has_h = initial.hidden.defined(), has_c = initial.cell.defined();
  const bool has_mask = o.mask.defined();
  if (has_h) inputs.push_back(initial.hidden);
  if (has_c) inputs.push_back(initial.cell);
  if (has_mask) inputs.push_back(o.mask);
  Model m =
      layer(type, inputs, [=](LayerContext& c) { return run(c, cell, o, has_h, has_c, has_mask); },
            std::move(params), {o.name});
  options_text += cat(o.return_sequences ? "" : ", last step", o.reverse ? ", reverse" : "",
                      o.unroll ? ", unrolled" : "", has_mask ? ", masked" : "");
  return detail::with_options(m, options_text, detail::recurrent_config(config, o));
}

Shape sequence_input(const std::string& type, const Shape& x) {
  check(x.rank() == 3, type, ": expected a sequence [batch, time, features], got ", x.to_string());
  return x;
}

Cell dense_cell(std::string type, int gates, int states, std::int64_t units) {
  Cell cell{std::move(type), gates, states, gates == 3, units, {}, {}, {}, {}};
  std::int64_t width = gates * units;
  cell.kernel_shape = [type = cell.type, width](const Shape& x) {
    return Shape{sequence_input(type, x)[2], width};
  };
  cell.recurrent_shape = [units, width](const Shape&) { return Shape{units, width}; };
  cell.project = [type = cell.type](const Expr& xs, const Expr& kernel) {
    sequence_input(type, xs.shape());
    return swap_batch_and_time(dot_general(xs, kernel, {2}, {0}));
  };
  return cell;
}

// A cell's step on one row: the input projection, then `step` (its kept values dropped).
std::vector<Expr> cell_step(const Expr& xw, const std::vector<Expr>& states, const StepFn& step,
                            const Vs& recurrent) {
  Vs next = step(states, xw, recurrent);
  return Vs(next.begin(), next.begin() + std::ptrdiff_t(states.size()));
}

// The units of a cell's states (and the check that there are `count` of them).
std::int64_t cell_units(const char* type, const std::vector<Expr>& states, std::size_t count) {
  check(states.size() == count, type, ": expected ", count, " state(s), got ", states.size());
  check(states[0].defined() && states[0].rank() >= 2, type,
        ": the hidden state must be [batch, ..., units]");
  return states[0].dim(states[0].rank() - 1);
}

Expr with_bias(const Expr& xw, const CellParams& p) { return p.bias.defined() ? xw + p.bias : xw; }

}  // namespace

std::vector<Expr> lstm_cell(const Expr& x, const std::vector<Expr>& states, const CellParams& p,
                            const RecurrentOptions& o) {
  std::int64_t units = cell_units("lstm_cell", states, 2);
  StepFn step = lstm_step(units, o, [](const Expr& h, const Expr& u) { return dot(h, u); });
  return cell_step(with_bias(dot(x, p.kernel), p), states, step, {p.recurrent_kernel});
}

std::vector<Expr> gru_cell(const Expr& x, const std::vector<Expr>& states, const CellParams& p,
                           const RecurrentOptions& o) {
  std::int64_t units = cell_units("gru_cell", states, 1);
  RecurrentOptions with = o;
  with.use_bias = p.recurrent_bias.defined();
  Vs recurrent{p.recurrent_kernel};
  if (with.use_bias) recurrent.push_back(p.recurrent_bias);
  return cell_step(with_bias(dot(x, p.kernel), p), states, gru_step(units, with), recurrent);
}

std::vector<Expr> conv_lstm_cell(const Expr& x, const std::vector<Expr>& states,
                                 const CellParams& p, const ConvLstmOptions& co) {
  const char* type = "conv_lstm_cell";
  ConvLayerOptions in_conv{.strides = co.strides, .padding = co.padding};
  ConvLayerOptions rec_conv{.padding = "same"};
  StepFn step = lstm_step(
      cell_units(type, states, 2), co.recurrent,
      [=](const Expr& h, const Expr& u) { return detail::conv_forward(type, h, u, rec_conv, 1); });
  Expr xw = detail::conv_forward(type, x, p.kernel, in_conv, 1);
  return cell_step(with_bias(xw, p), states, step, {p.recurrent_kernel});
}

Model lstm(const Model& x, std::int64_t units, const RecurrentOptions& o,
           const RecurrentState& initial) {
  Cell cell = dense_cell("lstm", 4, 2, units);
  cell.step = lstm_step(units, o, [](const Expr& h, const Expr& u) { return dot(h, u); });
  return recurrent(cell, x, o, initial, cat("units=", units),
                   detail::ConfigWriter().integer("units", units));
}

Model gru(const Model& x, std::int64_t units, const RecurrentOptions& o,
          const RecurrentState& initial) {
  Cell cell = dense_cell("gru", 3, 1, units);
  cell.step = gru_step(units, o);
  return recurrent(cell, x, o, initial, cat("units=", units),
                   detail::ConfigWriter().integer("units", units));
}

Model conv_lstm(const Model& x, std::int64_t filters, const ConvLstmOptions& co,
                const RecurrentState& initial) {
  const char* type = "conv_lstm";
  check(filters > 0, type, ": filters must be positive, got ", filters);
  detail::check_spatial_option(type, "kernel_size", co.kernel_size);
  detail::check_spatial_option(type, "strides", co.strides);
  detail::check_padding_option(type, co.padding);
  check(!co.kernel_size.empty(), type, ": kernel_size must not be empty");
  // The input's convolution, and the recurrent one: "same", moving by 1.
  ConvLayerOptions in_conv{
      .kernel_size = co.kernel_size, .strides = co.strides, .padding = co.padding};
  ConvLayerOptions rec_conv{.padding = "same"};
  Cell cell{type, 4, 2, false, filters, {}, {}, {}, {}};
  const std::int64_t width = 4 * filters;
  auto kernel_dims = [type, k = co.kernel_size](const Shape& frame) {
    int s = detail::spatial_rank(type, frame);
    check(k.size() == 1 || static_cast<int>(k.size()) == s, type, ": kernel_size ",
          detail::ints_text(k), " for ", s, " spatial axes");
    return detail::spatial_values(type, "kernel_size", k, s, 1);
  };
  // One frame's shape [batch, spatial..., channels]: the sequence without its time axis.
  auto frame_of = [type](const Shape& xs) {
    check(xs.rank() >= 4 && xs.rank() <= 6, type,
          ": expected [batch, time, spatial..., channels] with 1 to 3 spatial axes, got ",
          xs.to_string());
    Ints d = xs.dims();
    d.erase(d.begin() + 1);
    return Shape(d);
  };
  cell.kernel_shape = [=](const Shape& xs) {
    Shape frame = frame_of(xs);
    Ints d = kernel_dims(frame);
    d.push_back(frame[frame.rank() - 1]);
    d.push_back(width);
    return Shape(d);
  };
  cell.recurrent_shape = [=](const Shape& xs) {
    Ints d = kernel_dims(frame_of(xs));
    d.push_back(filters);
    d.push_back(width);
    return Shape(d);
  };
  cell.project = [=](const Expr& xs, const Expr& kernel) {
    Ints d = frame_of(xs.shape()).dims();
    d[0] = xs.dim(0) * xs.dim(1);
    Expr y = detail::conv_forward(type, reshape(xs, d), kernel, in_conv, 1);
    Ints out = y.shape().dims();
    out[0] = xs.dim(1);
    out.insert(out.begin(), xs.dim(0));
    return swap_batch_and_time(reshape(y, out));
  };
  cell.step = lstm_step(filters, co.recurrent, [=](const Expr& h, const Expr& u) {
    return detail::conv_forward(type, h, u, rec_conv, 1);
  });
  return recurrent(cell, x, co.recurrent, initial,
                   cat("filters=", filters, ", kernel_size=", detail::ints_text(co.kernel_size)),
                   detail::ConfigWriter()
                       .integer("filters", filters)
                       .integers("kernel_size", co.kernel_size)
                       .integers("strides", co.strides)
                       .padding("padding", co.padding));
}

}  // namespace glia
