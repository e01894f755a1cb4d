// Attention against golden values from PyTorch: nn.MultiheadAttention(batch_first=True) for
// the multi_head_attention layer, and scaled_dot_product_attention's math in torch ops
// (torch 1.13 has no F.scaled_dot_product_attention). The fixtures are written by
// tests/layers/golden/attention_cases.py (through generate.py), which also documents the
// weight layout and the masks' opposite senses; the options below mirror its calls.
#include <gtest/gtest.h>

#include "glia/layers/attention.hpp"
#include "layers/golden_check.hpp"

// GCC 12 flags options given with designated initializers that leave fields out.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace glia {
namespace {

using namespace golden;  // NOLINT(google-build-using-namespace)

TEST(AttentionGolden, MultiHeadSelfAttention) {
  check_golden("mha_self", [](const Inputs& in) { return multi_head_attention(in.at("x"), 2); });
}

TEST(AttentionGolden, CrossAttentionWithKeyMaskAndOtherKeyValueDims) {
  check_golden("mha_cross_key_mask", [](const Inputs& in) {
    return multi_head_attention(in.at("q"), in.at("k"), in.at("v"), 3,
                                {.key_mask = in.at("key_mask")});
  });
}

TEST(AttentionGolden, CausalWithoutBias) {
  check_golden("mha_causal_no_bias", [](const Inputs& in) {
    return multi_head_attention(in.at("x"), 1, {.use_bias = false, .causal = true});
  });
}

TEST(AttentionGolden, FloatAttentionMaskWithKeyMask) {
  check_golden("mha_float_mask", [](const Inputs& in) {
    return multi_head_attention(in.at("q"), in.at("k"), in.at("v"), 2,
                                {.key_mask = in.at("key_mask"), .attention_mask = in.at("mask")});
  });
}

TEST(AttentionGolden, BoolAttentionMaskSharedByTheBatch) {
  check_golden("mha_bool_mask", [](const Inputs& in) {
    return multi_head_attention(in.at("q"), in.at("k"), in.at("v"), 2,
                                {.attention_mask = in.at("mask")});
  });
}

// scaled_dot_product_attention in a custom layer over the fixture's inputs.
Model sdpa_layer(const Inputs& in, std::vector<std::string> names,
                 std::function<AttentionOptions(LayerContext&)> options) {
  std::vector<Model> models;
  for (const std::string& n : names) models.push_back(in.at(n));
  return layer("sdpa", models, [options](LayerContext& c) {
    return scaled_dot_product_attention(c.input(0), c.input(1), c.input(2), options(c));
  });
}

TEST(AttentionGolden, ScaledDotProductCausalWithScale) {
  check_golden("sdpa_causal", [](const Inputs& in) {
    return sdpa_layer(in, {"q", "k", "v"},
                      [](LayerContext&) { return AttentionOptions{.causal = true, .scale = 0.3}; });
  });
}

TEST(AttentionGolden, ScaledDotProductMaskBiasAndBroadcastKeys) {
  check_golden("sdpa_masks", [](const Inputs& in) {
    return sdpa_layer(in, {"q", "k", "v", "mask", "bias"}, [](LayerContext& c) {
      return AttentionOptions{.mask = c.input(3), .bias = c.input(4)};
    });
  });
}

}  // namespace
}  // namespace glia
