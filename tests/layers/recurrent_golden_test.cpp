// lstm and gru against golden values from PyTorch's nn.LSTM / nn.GRU(batch_first=True) in
// float64, with masks (PyTorch's packed sequences), final_state and bidirectional. The
// fixtures are written by tests/layers/golden/recurrent_cases.py (through generate.py),
// which also documents the parameter mapping and how glia's `reverse` is reproduced; the
// variants below mirror its calls, one test per fixture. Every case runs twice: as the one
// scan node and unrolled step by step.
#include <gtest/gtest.h>

#include "glia/layers/recurrent.hpp"
#include "layers/f64_params.hpp"
#include "layers/golden_check.hpp"

// GCC 12 flags options given with designated initializers that leave fields out.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace glia {
namespace {

using namespace golden;  // NOLINT(google-build-using-namespace)

using RecurrentFn = Model (*)(const Model&, std::int64_t, const RecurrentOptions&,
                              const RecurrentState&);

// The fixture's initial states, where it has them (input.h, input.c).
RecurrentState initial_state(const Inputs& in) {
  RecurrentState s;
  if (in.count("h")) s.hidden = in.at("h");
  if (in.count("c")) s.cell = in.at("c");
  return s;
}

// One variant of recurrent_cases.py, written for both lstm and gru (<type>_<variant>.txt).
struct Variant {
  std::string name;
  std::int64_t units;
  RecurrentOptions options;
  bool f64 = false;            // f64 inputs and parameters, compared at kF64
  bool masked = false;         // the fixture's input.mask as options.mask
  bool final_states = false;   // output.hidden (and output.cell): final_state, last step
  bool bidirectional = false;  // layers "forward" and "backward", concatenated
};
const Variant kVariants[] = {
    {"sequences", 4, {}},
    {"last", 5, {.return_sequences = false}},
    {"initial_state", 4, {}},  // the fixture's input.h (and input.c)
    {"reverse", 4, {.reverse = true}},
    {"reverse_last", 5, {.return_sequences = false, .reverse = true}},
    {"no_bias", 5, {.use_bias = false}},
    {"f64", 4, {.reverse = true}, true},  // with initial states too
    {"final_state", 4, {}, false, false, true},
    {"masked", 4, {}, false, true, true},
    {"masked_reverse", 3, {.reverse = true}, false, true, true},  // with initial states too
    {"bidirectional", 4, {}, false, false, false, true},
    {"bidirectional_masked", 4, {}, false, true, false, true},
};

struct GoldenCase {
  std::string name;  // the fixture, tests/layers/golden/<name>.txt
  RecurrentFn layer;
  Variant variant;
};

std::vector<GoldenCase> golden_cases() {
  std::vector<GoldenCase> cases;
  for (auto [type, layer] : {std::pair{"lstm", &lstm}, {"gru", &gru}})
    for (const Variant& v : kVariants) cases.push_back({cat(type, "_", v.name), layer, v});
  return cases;
}

// The case's model for `options`: its layer on the fixture's inputs.
Model golden_model(const GoldenCase& c, const Inputs& in, RecurrentOptions options) {
  const Variant& v = c.variant;
  if (v.masked) options.mask = in.at("mask");
  if (v.bidirectional)
    return bidirectional(in.at("x"), [&](const Model& x, bool reverse) {
      RecurrentOptions o = options;
      o.reverse = reverse;
      o.name = reverse ? "backward" : "forward";
      return c.layer(x, v.units, o, {});
    });
  Model m = c.layer(in.at("x"), v.units, options, initial_state(in));
  return v.f64 ? testing::with_f64_params(m) : m;
}

class RecurrentGolden : public ::testing::TestWithParam<GoldenCase> {};

TEST_P(RecurrentGolden, MatchesPyTorch) {
  const GoldenCase& c = GetParam();
  const Variant& v = c.variant;
  for (bool unroll : {false, true}) {
    SCOPED_TRACE(unroll ? "unrolled" : "scan");
    RecurrentOptions options = v.options;
    options.unroll = unroll;
    const Tolerance tol = v.f64 ? kF64 : kF32;
    check_golden(
        c.name, [&](const Inputs& in) { return golden_model(c, in, options); }, tol);
    if (!v.final_states) continue;
    check_golden(
        c.name, [&](const Inputs& in) { return final_state(golden_model(c, in, options)).hidden; },
        tol, "output.hidden");
    RecurrentOptions last = options;
    last.return_sequences = false;
    check_golden(
        c.name, [&](const Inputs& in) { return golden_model(c, in, last); }, tol, "output.hidden");
    if (c.layer == &lstm)
      check_golden(
          c.name, [&](const Inputs& in) { return final_state(golden_model(c, in, options)).cell; },
          tol, "output.cell");
  }
}

INSTANTIATE_TEST_SUITE_P(PyTorch, RecurrentGolden, ::testing::ValuesIn(golden_cases()),
                         [](const ::testing::TestParamInfo<GoldenCase>& info) {
                           return info.param.name;
                         });

}  // namespace
}  // namespace glia
