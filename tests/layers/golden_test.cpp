// Every layer's forward pass against golden values from PyTorch (or a numpy closed form):
// tests/layers/golden/<case>.txt, written by generate.py there and committed. The fixture's
// inputs, parameters and state go in; its output (and, for the running-statistics norms,
// the train-mode output and updated state) must come out. See generate.py for each case's
// PyTorch call; the layer options below mirror it.
#include <gtest/gtest.h>

#include "glia/layers/activation.hpp"
#include "glia/layers/build.hpp"
#include "glia/layers/combine.hpp"
#include "glia/layers/convolution.hpp"
#include "glia/layers/linear.hpp"
#include "glia/layers/normalization.hpp"
#include "glia/layers/pooling.hpp"
#include "glia/layers/shaping.hpp"
#include "layers/golden_check.hpp"

// Layer options are designated initializers leaving most fields at their defaults (the
// API's intended use); GCC 12's -Wextra would flag every omitted field.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace glia {
namespace {

using namespace golden;  // NOLINT(google-build-using-namespace)

Padding pads(std::vector<std::pair<std::int64_t, std::int64_t>> pairs) {
  return Padding(std::move(pairs));
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
