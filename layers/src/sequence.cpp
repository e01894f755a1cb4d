// Sequence helpers around the recurrent layers: mask (padding -> a step mask), final_state
// (a recurrent layer's further outputs) and bidirectional (two directions, merged).
#include "glia/layers/combine.hpp"
#include "glia/layers/recurrent.hpp"
#include "layer_util.hpp"

namespace glia {

Model mask(const Model& x, double pad_value, const LayerOptions& options) {
  Model m = layer(
      "mask", {x},
      [pad_value](LayerContext& c) {
        const Expr& v = c.input();
        check(v.rank() >= 2, "mask: expected [batch, time, features...], got ", v.type());
        Expr real = not_equal(v, pad_value);
        if (v.rank() == 2) return real;
        Ints features;
        for (int a = 2; a < v.rank(); ++a) features.push_back(a);
        return greater(reduce_max(cast(real, DType::f32), features), 0.0);
      },
      {}, options);
  return detail::with_options(m, cat("pad_value=", pad_value),
                              detail::ConfigWriter().number("pad_value", pad_value).str());
}

RecurrentState final_state(const Model& l) {
  check(l.defined(), "final_state: the layer is an undefined model");
  const std::string& type = l.node().type;
  check(type == "lstm" || type == "gru" || type == "conv_lstm", "final_state: expected an lstm, ",
        "gru or conv_lstm layer, got a ", type, " layer");
  RecurrentState s;
  s.hidden = layer_output(l, "hidden");
  if (type != "gru") s.cell = layer_output(l, "cell");
  return s;
}

Model bidirectional(const Model& x, const SequenceLayer& sequence_layer, const std::string& merge) {
  check(static_cast<bool>(sequence_layer), "bidirectional: the sequence layer is empty");
  check(merge == "concatenate" || merge == "sum" || merge == "multiply",
        "bidirectional: merge must be \"concatenate\", \"sum\" or \"multiply\", got \"", merge,
        "\"");
  Model forward = sequence_layer(x, false);
  Model backward = sequence_layer(x, true);
  check(forward.defined() && backward.defined(),
        "bidirectional: the sequence layer returned an undefined model");
  check(forward.ptr() != backward.ptr(), "bidirectional: the sequence layer returned the same ",
        "model for both directions; build a new layer in each call, reading `reverse`");
  if (merge == "sum") return add({forward, backward});
  if (merge == "multiply") return multiply({forward, backward});
  return concatenate({forward, backward}, -1);
}

}  // namespace glia
