// Every layer's forward pass against golden values from PyTorch (or a numpy closed form):
// tests/layers/golden/<case>.txt, written by generate.py there and committed. The fixture's
// inputs, parameters and state go in; its output (and, for the running-statistics norms,
// the train-mode output and updated state) must come out. See generate.py for each case's
// PyTorch call; the layer options below mirror it.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <set>

#include "glia/layers/activation.hpp"
#include "glia/layers/build.hpp"
#include "glia/layers/combine.hpp"
#include "glia/layers/convolution.hpp"
#include "glia/layers/linear.hpp"
#include "glia/layers/normalization.hpp"
#include "glia/layers/pooling.hpp"
#include "glia/layers/shaping.hpp"
#include "golden_fixture.hpp"

// Layer options are designated initializers leaving most fields at their defaults (the
// API's intended use); GCC 12's -Wextra would flag every omitted field.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace glia {
namespace {

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

Padding pads(std::vector<std::pair<std::int64_t, std::int64_t>> pairs) {
  return Padding(std::move(pairs));
}

bool starts_with(const std::string& s, const std::string& prefix) {
  return s.compare(0, prefix.size(), prefix) == 0;
}

// The element farthest outside the tolerance, for the failure message.
std::string worst_element(const Tensor& got, const Tensor& want, Tolerance tol) {
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

void expect_close(const Tensor& got, const Tensor& want, Tolerance tol, const std::string& what) {
  ASSERT_EQ(got.type(), want.type()) << what;
  EXPECT_TRUE(allclose(got, want, tol.rtol, tol.atol))
      << what << " differs from PyTorch (rtol " << tol.rtol << ", atol " << tol.atol << "); "
      << worst_element(got, want, tol) << "\ngot:  " << got.to_string(24)
      << "\nwant: " << want.to_string(24);
}

std::set<std::string> names_in(const ParamMap& map, const std::string& layer) {
  std::set<std::string> names;
  if (auto it = map.find(layer); it != map.end())
    for (const auto& [name, t] : it->second) names.insert(name);
  return names;
}

std::string list(const std::set<std::string>& names) {
  std::string s;
  for (const std::string& n : names) s += (s.empty() ? "" : ", ") + n;
  return "{" + s + "}";
}

void run_case(const std::string& case_name, const LayerFn& layer_fn, Tolerance tol,
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
  std::string layer = resolve_layers(model).back().name;
  ModelState given;
  for (const auto& [name, t] : f) {
    if (starts_with(name, "param.")) given.params[layer][name.substr(6)] = t;
    if (starts_with(name, "state.")) given.state[layer][name.substr(6)] = t;
  }
  auto [init, predict] = build(model);
  // The fixture must name exactly the parameters and state the layer declares. Asked only
  // when it has some: init of a model without parameters throws today (jit: "the function
  // returned no Expr"), and predict reports any declared parameter the fixture lacks.
  if (!given.params.empty() || !given.state.empty()) {
    ModelState drawn = init(types, 0);
    ASSERT_EQ(names_in(drawn.params, layer), names_in(given.params, layer))
        << "parameters of '" << layer << "': the layer declares "
        << list(names_in(drawn.params, layer)) << ", the fixture has "
        << list(names_in(given.params, layer));
    ASSERT_EQ(names_in(drawn.state, layer), names_in(given.state, layer))
        << "state of '" << layer << "': the layer declares " << list(names_in(drawn.state, layer))
        << ", the fixture has " << list(names_in(given.state, layer));
  }

  expect_close(predict(given, values), golden::tensor(f, output), tol, output);
  if (f.count("train.output") == 0) return;
  TrainResult r = predict.train(given, values, random::key(0));
  expect_close(r.output, golden::tensor(f, "train.output"), tol, "train.output");
  for (const auto& [name, want] : f) {
    if (!starts_with(name, "train.state.")) continue;
    std::string p = name.substr(12);
    ASSERT_TRUE(r.state.count(layer) && r.state.at(layer).count(p))
        << "train mode returned no state '" << p << "' for '" << layer << "'";
    expect_close(r.state.at(layer).at(p), want, tol, name);
  }
}

// Builds `layer_fn` on the fixture's inputs, runs it with the fixture's parameters and
// state, and compares with the fixture's `output` tensor (and the train.* tensors).
void check_golden(const std::string& case_name, const LayerFn& layer_fn, Tolerance tol = kF32,
                  const std::string& output = "output") {
  SCOPED_TRACE("golden case '" + case_name + "' (tests/layers/golden/" + case_name + ".txt)");
  try {
    run_case(case_name, layer_fn, tol, output);
  } catch (const Error& e) {
    ADD_FAILURE() << "glia::Error: " << e.what();
  }
}

// ---- Linear ----------------------------------------------------------------------------

TEST(Golden, Dense) {
  check_golden("dense", [](const Inputs& in) { return dense(in.at("x"), 4); });
  check_golden("dense_rank3", [](const Inputs& in) { return dense(in.at("x"), 4); });
}

TEST(Golden, Bilinear) {
  check_golden("bilinear", [](const Inputs& in) { return bilinear(in.at("a"), in.at("b"), 2); });
}

TEST(Golden, Embedding) {
  check_golden(
      "embedding", [](const Inputs& in) { return embedding(in.at("x"), 7, 3); }, kExact);
}

// ---- Convolution -----------------------------------------------------------------------

TEST(Golden, Conv1d) {
  check_golden("conv1d", [](const Inputs& in) {
    return conv(in.at("x"), 4, {.kernel_size = {3}, .strides = {2}, .padding = pads({{1, 1}})});
  });
  check_golden("conv1d_dilated_same", [](const Inputs& in) {
    return conv(in.at("x"), 2, {.kernel_size = {3}, .padding = "same", .kernel_dilation = {2}});
  });
}

TEST(Golden, Conv2d) {
  check_golden("conv2d", [](const Inputs& in) {
    return conv(in.at("x"), 6,
                {.kernel_size = {3, 2},
                 .strides = {2, 1},
                 .padding = pads({{1, 1}, {0, 0}}),
                 .kernel_dilation = {1, 2},
                 .feature_groups = 2});
  });
  check_golden("conv2d_same", [](const Inputs& in) {
    return conv(in.at("x"), 2, {.kernel_size = {4, 3}, .padding = "same"});
  });
}

TEST(Golden, Conv3d) {
  check_golden("conv3d", [](const Inputs& in) {
    return conv(in.at("x"), 4,
                {.kernel_size = {2, 3, 2},
                 .strides = {1, 2, 1},
                 .padding = pads({{1, 1}, {1, 1}, {0, 0}}),
                 .feature_groups = 2});
  });
}

TEST(Golden, ConvTranspose2d) {
  check_golden("conv_transpose2d", [](const Inputs& in) {
    return conv_transpose(in.at("x"), 2, {.kernel_size = {3, 3}, .strides = {2, 2}});
  });
  // PyTorch padding 1 with output_padding (1, 0): (1, 1 - 1) rows, (1, 1 - 0) columns.
  check_golden("conv_transpose2d_padded", [](const Inputs& in) {
    return conv_transpose(in.at("x"), 4,
                          {.kernel_size = {3, 4},
                           .strides = {2, 2},
                           .padding = pads({{1, 0}, {1, 1}}),
                           .feature_groups = 2});
  });
}

TEST(Golden, DepthwiseConv2d) {
  check_golden("depthwise_conv2d", [](const Inputs& in) {
    return depthwise_conv(in.at("x"), 2,
                          {.kernel_size = {3, 3}, .padding = pads({{1, 1}, {1, 1}})});
  });
}

TEST(Golden, SeparableConv) {
  check_golden("separable_conv2d", [](const Inputs& in) {
    return separable_conv2d(in.at("x"), 4, 2, {.kernel_size = {3, 3}});
  });
  check_golden("separable_conv3d", [](const Inputs& in) {
    return separable_conv3d(in.at("x"), 3, 1, {.kernel_size = {2, 2, 2}});
  });
}

// ---- Activations -----------------------------------------------------------------------

TEST(Golden, Activations) {
  for (auto [case_name, tol] : {std::pair{"activations_f32", kF32}, {"activations_f64", kF64}}) {
    for (const std::string& name : activations::names())
      check_golden(
          case_name, [&](const Inputs& in) { return activation(in.at("x"), name); }, tol,
          "output." + name);
    check_golden(
        case_name,
        [](const Inputs& in) {
          return layer("gelu_tanh", {in.at("x")},
                       [](LayerContext& c) { return activations::gelu(c.input(), true); });
        },
        tol, "output.gelu_tanh");
  }
}

// ---- Pooling ---------------------------------------------------------------------------

TEST(Golden, Pool1d) {
  PoolOptions o{.kernel_size = {3}, .strides = {2}, .padding = pads({{1, 1}})};
  check_golden(
      "max_pool1d", [o](const Inputs& in) { return max_pool(in.at("x"), o); }, kExact);
  check_golden("avg_pool1d", [o](const Inputs& in) { return avg_pool(in.at("x"), o); });
  check_golden("lp_pool1d", [](const Inputs& in) {
    return lp_pool(in.at("x"), {.kernel_size = {3}, .strides = {2}, .norm = 2});
  });
}

TEST(Golden, Pool2d) {
  PoolOptions o{.kernel_size = {3, 2}, .strides = {2, 2}, .padding = pads({{1, 1}, {1, 1}})};
  check_golden(
      "max_pool2d", [o](const Inputs& in) { return max_pool(in.at("x"), o); }, kExact);
  check_golden("avg_pool2d", [o](const Inputs& in) { return avg_pool(in.at("x"), o); });
  check_golden(
      "max_pool2d_dilated",
      [](const Inputs& in) {
        return max_pool(in.at("x"),
                        {.kernel_size = {2, 2}, .strides = {1, 1}, .window_dilation = {2, 2}});
      },
      kExact);
  check_golden("lp_pool2d", [](const Inputs& in) {
    return lp_pool(in.at("x"), {.kernel_size = {2, 2}, .strides = {2, 1}, .norm = 3});
  });
}

TEST(Golden, AdaptivePool2d) {
  check_golden("adaptive_avg_pool2d", [](const Inputs& in) {
    return adaptive_avg_pool(in.at("x"), {.output_size = {3, 2}});
  });
  check_golden(
      "adaptive_max_pool2d",
      [](const Inputs& in) {
        return adaptive_max_pool(in.at("x"), {.output_size = {3, 2}});
      },
      kExact);
  check_golden("adaptive_lp_pool2d", [](const Inputs& in) {
    return adaptive_lp_pool(in.at("x"), {.output_size = {3, 2}, .norm = 2});
  });
}

TEST(Golden, GlobalPool2d) {
  check_golden("global_avg_pool2d", [](const Inputs& in) { return global_avg_pool(in.at("x")); });
  check_golden(
      "global_max_pool2d", [](const Inputs& in) { return global_max_pool(in.at("x")); }, kExact);
  check_golden("global_lp_pool2d",
               [](const Inputs& in) { return global_lp_pool(in.at("x"), {.norm = 2}); });
}

// ---- Normalization ---------------------------------------------------------------------

TEST(Golden, BatchNorm) {  // inference with running statistics, then one train step
  check_golden("batch_norm", [](const Inputs& in) { return batch_norm(in.at("x")); });
  check_golden("batch_norm_1d", [](const Inputs& in) { return batch_norm(in.at("x")); });
}

TEST(Golden, InstanceNorm) {
  check_golden("instance_norm", [](const Inputs& in) { return instance_norm(in.at("x")); });
}

TEST(Golden, LayerGroupRmsNorm) {
  check_golden("layer_norm", [](const Inputs& in) { return layer_norm(in.at("x")); });
  check_golden("group_norm", [](const Inputs& in) { return group_norm(in.at("x"), 2); });
  check_golden("rms_norm", [](const Inputs& in) { return rms_norm(in.at("x")); });
}

// ---- Shaping ---------------------------------------------------------------------------

TEST(Golden, Shaping) {
  check_golden(
      "flatten", [](const Inputs& in) { return flatten(in.at("x")); }, kExact);
  check_golden(
      "reshape",
      [](const Inputs& in) {
        return reshape(in.at("x"), {4, -1});
      },
      kExact);
  check_golden(
      "transpose",
      [](const Inputs& in) {
        return transpose(in.at("x"), {2, 0, 1});
      },
      kExact);
  check_golden(
      "pad",
      [](const Inputs& in) {
        return pad(in.at("x"), {{1, 2}, {0, 1}}, 0.5);
      },
      kExact);
}

TEST(Golden, Resize) {
  for (auto [case_name, size] : {std::pair{"resize_nearest_up2", std::vector<std::int64_t>{6, 8}},
                                 {"resize_nearest_up", {5, 7}},
                                 {"resize_nearest_down", {4, 3}}})
    check_golden(
        case_name, [size](const Inputs& in) { return resize(in.at("x"), size); }, kExact);
  for (auto [case_name, size] : {std::pair{"resize_bilinear_up", std::vector<std::int64_t>{5, 7}},
                                 {"resize_bilinear_down", {4, 3}}})
    check_golden(case_name, [size](const Inputs& in) {
      return resize(in.at("x"), size, {.method = "bilinear"});
    });
}

// ---- Combining -------------------------------------------------------------------------

TEST(Golden, Combine) {
  check_golden(
      "concatenate",
      [](const Inputs& in) {
        return concatenate(std::vector<Model>{in.at("a"), in.at("b")});
      },
      kExact);
  check_golden(
      "concatenate_axis1",
      [](const Inputs& in) {
        return concatenate(std::vector<Model>{in.at("a"), in.at("b"), in.at("c")}, 1);
      },
      kExact);
  check_golden("add", [](const Inputs& in) {
    return add(std::vector<Model>{in.at("a"), in.at("b"), in.at("c")});
  });
  check_golden(
      "subtract", [](const Inputs& in) { return subtract(in.at("a"), in.at("b")); }, kExact);
  check_golden(
      "multiply",
      [](const Inputs& in) {
        return multiply(std::vector<Model>{in.at("a"), in.at("b")});
      },
      kExact);
}

}  // namespace
}  // namespace glia
