// The golden-fixture check shared by the layer suites' golden tests: a case's input.*
// tensors become model inputs, its param.* and state.* tensors the layer's parameters and
// state (the model's last layer that declares some, or the layer <l> of param.<l>.<p>);
// the model's output (and train.* tensors) must match the fixture's PyTorch values.
//   glia::golden::check_golden("dense", [](const glia::golden::Inputs& in) {
//     return glia::dense(in.at("x"), 4); });
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "glia/layers/build.hpp"
#include "golden_fixture.hpp"

namespace glia::golden {

using Inputs = std::map<std::string, Model>;  // the fixture's inputs, by name ("x", "a", ...)
using LayerFn = std::function<Model(const Inputs&)>;

struct Tolerance {
  double rtol = 1e-5;
  double atol = 1e-6;
};
// Fixtures hold correctly rounded values (PyTorch computes them in f64).
constexpr Tolerance kF32{};
constexpr Tolerance kF64{1e-10, 1e-12};
constexpr Tolerance kExact{0, 0};  // data movement, maxima: bit for bit

namespace detail {

inline bool starts_with(const std::string& s, const std::string& prefix) {
  return s.compare(0, prefix.size(), prefix) == 0;
}

// The element farthest outside the tolerance, for the failure message.
inline std::string worst_element(const Tensor& got, const Tensor& want, Tolerance tol) {
  std::int64_t worst = -1;
  double excess = 0;
  for (std::int64_t i = 0; i < want.numel(); ++i) {
    double g = got.element(i), w = want.element(i);
    if (g == w || (std::isnan(g) && std::isnan(w))) continue;
    double e = std::abs(g - w) - (tol.atol + tol.rtol * std::abs(w));
    if (std::isnan(e)) e = INFINITY;
    if (worst < 0 || e > excess) worst = i, excess = e;
  }
  if (worst < 0) return "no element differs";
  return cat("worst at flat index ", worst, ": got ", got.element(worst), ", want ",
             want.element(worst));
}

inline void expect_close(const Tensor& got, const Tensor& want, Tolerance tol,
                         const std::string& what) {
  ASSERT_EQ(got.type(), want.type()) << what;
  EXPECT_TRUE(allclose(got, want, tol.rtol, tol.atol))
      << what << " differs from PyTorch (rtol " << tol.rtol << ", atol " << tol.atol << "); "
      << worst_element(got, want, tol) << "\ngot:  " << got.to_string(24)
      << "\nwant: " << want.to_string(24);
}

inline std::set<std::string> names_in(const ParamMap& map, const std::string& layer) {
  std::set<std::string> names;
  if (auto it = map.find(layer); it != map.end())
    for (const auto& [name, t] : it->second) names.insert(name);
  return names;
}

// The layer whose parameters and state a fixture's plain param.<p> / state.<p> are: the
// model's last layer that declares some (a layer_output or concatenate may follow it).
inline std::string parameter_layer(const Model& model) {
  std::vector<ResolvedLayer> layers = resolve_layers(model);
  for (auto it = layers.rbegin(); it != layers.rend(); ++it)
    if (!it->node->params.empty()) return it->params_of;
  return layers.back().name;
}

// A fixture name's (layer, entry) after its prefix: "<l>.<p>" names layer <l>, "<p>" the
// default layer.
inline std::pair<std::string, std::string> layer_and_entry(const std::string& rest,
                                                           const std::string& layer) {
  std::size_t dot = rest.find('.');
  if (dot == std::string::npos) return {layer, rest};
  return {rest.substr(0, dot), rest.substr(dot + 1)};
}

// The layers that either map names.
inline std::set<std::string> layers_of(const ParamMap& a, const ParamMap& b) {
  std::set<std::string> layers;
  for (const ParamMap* map : {&a, &b})
    for (const auto& [layer, entries] : *map) layers.insert(layer);
  return layers;
}

inline std::string list(const std::set<std::string>& names) {
  std::string s;
  for (const std::string& n : names) s += (s.empty() ? "" : ", ") + n;
  return "{" + s + "}";
}

inline void run_case(const std::string& case_name, const LayerFn& layer_fn, Tolerance tol,
                     const std::string& output) {
  golden::Fixture f = golden::load_fixture(case_name);
  Inputs models;
  std::map<std::string, Tensor> values;
  InputTypes types;
  for (const auto& [name, t] : f) {
    if (!starts_with(name, "input.")) continue;
    std::string n = name.substr(6);
    models[n] = input(n, t.shape().dims(), t.dtype());
    values[n] = t;
    types[n] = t.type();
  }
  ASSERT_FALSE(values.empty()) << "the fixture has no input.* tensor";
  Model model = layer_fn(models);
  std::string layer = parameter_layer(model);
  ModelState given;
  for (const auto& [name, t] : f) {
    if (starts_with(name, "param.")) {
      auto [l, p] = layer_and_entry(name.substr(6), layer);
      given.params[l][p] = t;
    }
    if (starts_with(name, "state.")) {
      auto [l, s] = layer_and_entry(name.substr(6), layer);
      given.state[l][s] = t;
    }
  }
  auto [init, predict] = build(model);
  // The fixture must name exactly the parameters and state the layers declare. Asked only
  // when it has some: init of a model without parameters throws today (jit: "the function
  // returned no Expr"), and predict reports any declared parameter the fixture lacks.
  if (!given.params.empty() || !given.state.empty()) {
    ModelState drawn = init(types, 0);
    for (const std::string& l : layers_of(drawn.params, given.params))
      ASSERT_EQ(names_in(drawn.params, l), names_in(given.params, l))
          << "parameters of '" << l << "': the layer declares " << list(names_in(drawn.params, l))
          << ", the fixture has " << list(names_in(given.params, l));
    for (const std::string& l : layers_of(drawn.state, given.state))
      ASSERT_EQ(names_in(drawn.state, l), names_in(given.state, l))
          << "state of '" << l << "': the layer declares " << list(names_in(drawn.state, l))
          << ", the fixture has " << list(names_in(given.state, l));
  }

  expect_close(predict(given, values), golden::tensor(f, output), tol, output);
  if (f.count("train.output") == 0) return;
  TrainResult r = predict.train(given, values, random::key(0));
  expect_close(r.output, golden::tensor(f, "train.output"), tol, "train.output");
  for (const auto& [name, want] : f) {
    if (!starts_with(name, "train.state.")) continue;
    auto [l, p] = layer_and_entry(name.substr(12), layer);
    ASSERT_TRUE(r.state.count(l) && r.state.at(l).count(p))
        << "train mode returned no state '" << p << "' for '" << l << "'";
    expect_close(r.state.at(l).at(p), want, tol, name);
  }
}

}  // namespace detail

// Builds `layer_fn` on the fixture's inputs, runs it with the fixture's parameters and
// state, and compares with the fixture's `output` tensor (and the train.* tensors).
inline void check_golden(const std::string& case_name, const LayerFn& layer_fn,
                         Tolerance tol = kF32, const std::string& output = "output") {
  SCOPED_TRACE("golden case '" + case_name + "' (tests/layers/golden/" + case_name + ".txt)");
  try {
    detail::run_case(case_name, layer_fn, tol, output);
  } catch (const Error& e) {
    ADD_FAILURE() << "glia::Error: " << e.what();
  }
}
}  // namespace glia::golden
