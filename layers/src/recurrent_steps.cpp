// The loop of the recurrent layers (recurrent_util.hpp): one scan over the time axis, or
// the steps traced one by one (`unroll`); a mask holds the states through padded steps.
#include <cstddef>

#include "glia/core/scan.hpp"
#include "recurrent_util.hpp"

namespace glia::detail {

namespace {

using Vs = std::vector<Expr>;

// `keep` [N] as [N, 1, ...] against a state of rank `rank`.
Expr keep_against(const Expr& keep, int rank) {
  Ints dims{keep.dim(0)};
  dims.resize(static_cast<std::size_t>(rank), 1);
  return reshape(keep, dims);
}

}  // namespace

Steps run_steps(const Expr& xw, const Vs& init, const Expr& keep, const Vs& recurrent,
                const std::function<Vs(const Vs&, const Expr&, const Vs&)>& step,
                const RecurrentOptions& o) {
  // One step with its mask row: the new states, and the step's output.
  // One step with its mask row: the new states, the step's output, and the values the step
  // gives for reverse mode (after the states).
  struct Step {
    Vs states;
    Expr out;
    Vs kept;
  };
  auto masked = [&](const Vs& s, const Expr& row, const Expr& k, const Vs& p) {
    Vs next = step(s, row, p);
    Step r{Vs(next.begin(), next.begin() + std::ptrdiff_t(s.size())), next[0],
           Vs(next.begin() + std::ptrdiff_t(s.size()), next.end())};
    if (k.defined()) {
      Expr kk = keep_against(k, next[0].rank());
      r.out = select(kk, next[0], 0.0);
      for (std::size_t j = 0; j < s.size(); ++j) r.states[j] = select(kk, next[j], s[j]);
    }
    return r;
  };
  const std::int64_t steps = xw.dim(0);
  Steps r;
  if (o.unroll) {
    Vs states = init;
    Vs rows(static_cast<std::size_t>(steps));
    for (std::int64_t i = 0; i < steps; ++i) {
      const std::int64_t t = o.reverse ? steps - 1 - i : i;
      auto row_of = [t](const Expr& x) { return squeeze(slice_axis(x, t, 1, 0), {0}); };
      Step next = masked(states, row_of(xw), keep.defined() ? row_of(keep) : Expr(), recurrent);
      states = next.states;
      rows[static_cast<std::size_t>(t)] = next.out;
    }
    r.finals = states;
    if (o.return_sequences) {
      Ints empty = init[0].shape().dims();
      empty.insert(empty.begin(), 0);
      r.outputs = steps > 0 ? stack(rows, 0) : zeros(Shape(empty), init[0].dtype());
    }
    return r;
  }
  Vs sequences{xw};
  if (keep.defined()) sequences.push_back(keep);
  ScanResult s = scan(
      [&](const Vs& c, const Vs& row, const Vs& p) {
        Step next = masked(c, row[0], row.size() > 1 ? row[1] : Expr(), p);
        Vs outputs = o.return_sequences ? Vs{next.out} : Vs{};
        outputs.insert(outputs.end(), next.kept.begin(), next.kept.end());
        return ScanResult{next.states, outputs};
      },
      init, sequences, recurrent, {.reverse = o.reverse, .name = "recurrent_step"});
  r.finals = s.carries;
  if (o.return_sequences) r.outputs = s.outputs[0];
  return r;
}

std::string recurrent_config(ConfigWriter head, const RecurrentOptions& o) {
  return head.string("activation", o.activation)
      .string("recurrent_activation", o.recurrent_activation)
      .boolean("use_bias", o.use_bias)
      .initializer("kernel_initializer", o.kernel_initializer)
      .initializer("recurrent_initializer", o.recurrent_initializer)
      .initializer("bias_initializer", o.bias_initializer)
      .boolean("return_sequences", o.return_sequences)
      .boolean("reverse", o.reverse)
      .boolean("unroll", o.unroll)
      .boolean("mask", o.mask.defined())
      .str();
}

}  // namespace glia::detail
