// The cuda backend's convolutions as its lowering decides them, without a GPU: which
// convolution nodes become cuDNN's three passes (a channels-last conv layer and its
// gradients, strided, grouped, 1-D and 3-D convolutions, f64, f16 and bf16), that bias and
// relu are fused after the call rather than an epilogue of it, and that what cuDNN's
// legacy API does not take (asymmetric padding, integers, batch groups, input dilation,
// four spatial axes) stays on the reference kernel with its reason. Every test skips where
// glia was built without the cuda backend's code.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "compiler/conv_layer_graph.hpp"
#include "compiler/cuda_test_util.hpp"
#include "glia/autograd/grad.hpp"
#include "glia/compiler/cuda.hpp"
#include "glia/core/expr.hpp"

namespace glia {
namespace {

using Dims = std::vector<std::int64_t>;
using Pass = ConvSpec::Pass;
using testing::conv_layer_nhwc;
using testing::has;

// Each pass's ConvSpec, checking there is at most one of each.
std::map<Pass, const ConvSpec*> passes(const Program& p) {
  std::map<Pass, const ConvSpec*> found;
  for (const ConvSpec* s : p.specs<ConvSpec>()) {
    EXPECT_EQ(found.count(s->pass), 0u) << p.describe();
    found[s->pass] = s;
  }
  return found;
}

std::vector<const ReferenceSpec*> reference_convolutions(const Program& p) {
  std::vector<const ReferenceSpec*> found;
  for (const ReferenceSpec* r : p.specs<ReferenceSpec>())
    if (r->op == Op::convolution) found.push_back(r);
  return found;
}

// The loss sum(conv(x, k) * t) with its value and its gradients by x and k: the forward
// convolution and exactly the two backward ones.
Graph with_gradients(DType dtype, const Shape& x, const Shape& k, const ConvOptions& o,
                     const std::string& name) {
  Graph forward =
      trace([&](const std::vector<Expr>& in) { return std::vector<Expr>{conv(in[0], in[1], o)}; },
            {{dtype, x}, {dtype, k}}, name);
  Shape y = forward.type(forward.outputs()[0]).shape;
  return trace(
      [&](const std::vector<Expr>& in) {
        Expr loss = sum(conv(in[0], in[1], o) * in[2]);
        std::vector<Expr> out{loss};
        for (const Expr& d : gradients(loss, {in[0], in[1]})) out.push_back(d);
        return out;
      },
      {{dtype, x}, {dtype, k}, {dtype, y}}, name);
}

TEST(CudaConv, AConvLayerAndItsGradientsAreCudnnsThreePasses) {
  // As the conv layer traces it: NHWC input, HWIO kernel, bias and relu after.
  Graph g = trace(
      [](const std::vector<Expr>& in) {
        Expr loss = sum(conv_layer_nhwc(in[0], in[1], in[2]) * in[3]);
        std::vector<Expr> out{loss};
        for (const Expr& d : gradients(loss, {in[0], in[1], in[2]})) out.push_back(d);
        return out;
      },
      {{f32, {2, 9, 9, 3}}, {f32, {3, 3, 3, 4}}, {f32, {4}}, {f32, {2, 9, 9, 4}}}, "conv_layer");
  Program p;
  LOWER_OR_SKIP(p, g);
  EXPECT_TRUE(reference_convolutions(p).empty()) << p.describe();
  auto by_pass = passes(p);
  ASSERT_EQ(by_pass.size(), 3u) << p.describe();
  const ConvSpec& fwd = *by_pass[Pass::forward];
  EXPECT_TRUE(fwd.epilogue.empty()) << "cuDNN's legacy call has no epilogue";
  EXPECT_EQ(fwd.dst.dims, (Dims{2, 4, 9, 9}));
  const ConvSpec& data = *by_pass[Pass::backward_data];
  EXPECT_EQ(data.src.dims, (Dims{2, 3, 9, 9}));
  EXPECT_EQ(data.weights.dims, (Dims{4, 3, 3, 3}));
  const ConvSpec& weights = *by_pass[Pass::backward_weights];
  EXPECT_EQ(weights.weights.dims, (Dims{4, 3, 3, 3}));
  for (const ConvSpec* s : {&fwd, &data, &weights}) {
    EXPECT_EQ(s->dtype, DType::f32);
    EXPECT_EQ(s->groups, 1);
    EXPECT_EQ(s->strides, (Dims{1, 1}));
    EXPECT_EQ(s->padding_low, (Dims{1, 1}));
    EXPECT_EQ(s->padding_high, (Dims{1, 1}));
  }
}

TEST(CudaConv, BiasAndReluRunInAFusedKernelAfterTheConvolution) {
  Graph g = trace(
      [](const std::vector<Expr>& in) {
        return std::vector<Expr>{conv_layer_nhwc(in[0], in[1], in[2])};
      },
      {{f32, {3, 10, 9, 5}}, {f32, {3, 3, 5, 8}}, {f32, {8}}}, "nhwc");
  Program p;
  LOWER_OR_SKIP(p, g);
  ASSERT_EQ(p.kernels.size(), 2u) << p.describe();
  const auto* c = std::get_if<ConvSpec>(&p.kernels[0].spec);
  ASSERT_NE(c, nullptr) << p.describe();
  EXPECT_TRUE(c->epilogue.empty());
  // The NHWC result through its transpose's strides, read by the fused bias and relu.
  EXPECT_EQ(c->dst.strides, (Dims{720, 1, 72, 8}));
  const Kernel& after = p.kernels[1];
  EXPECT_TRUE(std::holds_alternative<FusedSpec>(after.spec)) << p.describe();
  EXPECT_NE(std::find(after.inputs.begin(), after.inputs.end(), c->dst.value), after.inputs.end());
  EXPECT_NE(std::find(after.inputs.begin(), after.inputs.end(), ValueId{2}), after.inputs.end())
      << "the bias";
  EXPECT_EQ(p.kernel_of(p.graph.outputs()[0]), &after);
}

TEST(CudaConv, StridedConvolutionsPadBothEndsAlikeWhereTheLastRowsGoUnread) {
  // Padding (1, 1) at stride 2 over 8 rows: the exact high padding is 0, and cuDNN's
  // symmetric 1 only adds a row no window reaches.
  Graph g =
      with_gradients(f32, {2, 3, 8, 8}, {4, 3, 3, 3},
                     {.strides = {2, 2}, .padding_low = {1, 1}, .padding_high = {1, 1}}, "strided");
  Program p;
  LOWER_OR_SKIP(p, g);
  EXPECT_TRUE(reference_convolutions(p).empty()) << p.describe();
  auto by_pass = passes(p);
  ASSERT_EQ(by_pass.size(), 3u) << p.describe();
  for (auto [pass, s] : by_pass) {
    EXPECT_EQ(s->strides, (Dims{2, 2})) << int(pass);
    EXPECT_EQ(s->padding_low, (Dims{1, 1})) << int(pass);
    EXPECT_EQ(s->padding_high, (Dims{0, 0})) << int(pass);
  }
  EXPECT_EQ(by_pass[Pass::forward]->dst.dims, (Dims{2, 4, 4, 4}));
}

TEST(CudaConv, AsymmetricPaddingStaysOnTheReferenceKernelWithItsReason) {
  // (1, 2) before and (1, 0) after; and a 2x2 kernel padded (0, 1) ("same"), with its
  // gradients, whose convolutions pad (0, 1) too.
  Graph uneven = trace(
      [](const std::vector<Expr>& in) {
        return std::vector<Expr>{
            conv(in[0], in[1], {.padding_low = {1, 2}, .padding_high = {1, 0}})};
      },
      {{f32, {2, 3, 8, 8}}, {f32, {4, 3, 3, 3}}}, "uneven");
  Program p;
  LOWER_OR_SKIP(p, uneven);
  EXPECT_TRUE(p.specs<ConvSpec>().empty()) << p.describe();
  auto refs = reference_convolutions(p);
  ASSERT_EQ(refs.size(), 1u) << p.describe();
  EXPECT_TRUE(has(refs[0]->reason, "asymmetric padding (2 before and 0 after spatial axis 1)"))
      << refs[0]->reason;

  Graph same = with_gradients(f32, {1, 2, 6, 6}, {3, 2, 2, 2},
                              {.padding_low = {0, 0}, .padding_high = {1, 1}}, "same");
  LOWER_OR_SKIP(p, same);
  EXPECT_TRUE(p.specs<ConvSpec>().empty()) << p.describe();
  refs = reference_convolutions(p);
  EXPECT_EQ(refs.size(), 3u) << p.describe();
  for (const ReferenceSpec* r : refs)
    EXPECT_TRUE(has(r->reason, "asymmetric padding (0 before and 1 after spatial axis 0)"))
        << r->reason;
}

TEST(CudaConv, GroupedOneAndThreeDimensionalConvolutions) {
  struct Case {
    std::string name;
    Shape x, k;
    ConvOptions o;
    std::int64_t groups;
    Dims weights;  // the forward spec's weights view
  };
  std::vector<Case> cases = {
      {"grouped", {2, 6, 7, 7}, {9, 2, 3, 3}, {.feature_groups = 3}, 3, {3, 3, 2, 3, 3}},
      {"depthwise",
       {2, 4, 6, 6},
       {4, 1, 3, 3},
       {.padding_low = {1, 1}, .padding_high = {1, 1}, .feature_groups = 4},
       4,
       {4, 1, 1, 3, 3}},
      {"conv1d",
       {3, 5, 17},
       {7, 5, 4},
       {.strides = {2}, .padding_low = {1}, .padding_high = {1}},
       1,
       {7, 5, 4}},
      {"conv3d",
       {2, 2, 5, 6, 4},
       {3, 2, 2, 3, 2},
       {.padding_low = {1, 1, 1}, .padding_high = {1, 1, 1}, .kernel_dilation = {1, 2, 1}},
       1,
       {3, 2, 2, 3, 2}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Graph g = trace(
        [&](const std::vector<Expr>& in) { return std::vector<Expr>{conv(in[0], in[1], c.o)}; },
        {{f32, c.x}, {f32, c.k}}, c.name);
    Program p;
    LOWER_OR_SKIP(p, g);
    auto convs = p.specs<ConvSpec>();
    ASSERT_EQ(convs.size(), 1u) << p.describe();
    EXPECT_EQ(convs[0]->groups, c.groups);
    EXPECT_EQ(convs[0]->weights.dims, c.weights);
    EXPECT_TRUE(reference_convolutions(p).empty()) << p.describe();
  }
  // The 1-D and 3-D ones' gradients are cuDNN's too.
  for (std::size_t i : {2u, 3u}) {
    SCOPED_TRACE(cases[i].name);
    Program p;
    LOWER_OR_SKIP(p, with_gradients(f32, cases[i].x, cases[i].k, cases[i].o, cases[i].name));
    EXPECT_EQ(passes(p).size(), 3u) << p.describe();
    EXPECT_TRUE(reference_convolutions(p).empty()) << p.describe();
  }
}

TEST(CudaConv, DoubleAndHalfPrecisionsAreCudnnConvolutions) {
  for (DType dtype : {DType::f64, DType::f16, DType::bf16}) {
    SCOPED_TRACE(dtype_name(dtype));
    Graph g = trace(
        [](const std::vector<Expr>& in) {
          return std::vector<Expr>{
              conv(in[0], in[1], {.padding_low = {1, 1}, .padding_high = {1, 1}})};
        },
        {{dtype, {2, 3, 6, 6}}, {dtype, {4, 3, 3, 3}}}, "precision");
    Program p;
    LOWER_OR_SKIP(p, g);
    auto convs = p.specs<ConvSpec>();
    ASSERT_EQ(convs.size(), 1u) << p.describe();
    EXPECT_EQ(convs[0]->dtype, dtype);
    EXPECT_EQ(convs[0]->pass, Pass::forward);
  }
  Program p;
  LOWER_OR_SKIP(p, with_gradients(f64, {2, 3, 6, 6}, {4, 3, 3, 3}, {}, "f64_grads"));
  EXPECT_EQ(passes(p).size(), 3u) << p.describe();
}

TEST(CudaConv, WhatCudnnDoesNotTakeIsDeclared) {
  struct Case {
    std::string name;
    DType dtype;
    Shape x, k;
    ConvOptions o;
    std::string reason;
  };
  std::vector<Case> cases = {
      {"integers", i32, {1, 2, 5, 5}, {3, 2, 3, 3}, {}, "f32, f64, f16 and bf16 only"},
      {"batch_groups", f32, {4, 2, 5, 5}, {4, 2, 3, 3}, {.batch_groups = 2}, "batch groups"},
      {"input_dilation",
       f32,
       {1, 2, 5, 5},
       {3, 2, 3, 3},
       {.input_dilation = {2, 2}},
       "input dilation without autograd's reversed kernel"},
      {"four_spatial_axes", f32, {1, 2, 3, 3, 3, 3}, {2, 2, 2, 2, 2, 2}, {}, "1 to 3 spatial axes"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Graph g = trace(
        [&](const std::vector<Expr>& in) { return std::vector<Expr>{conv(in[0], in[1], c.o)}; },
        {{c.dtype, c.x}, {c.dtype, c.k}}, c.name);
    Program p;
    LOWER_OR_SKIP(p, g);
    EXPECT_TRUE(p.specs<ConvSpec>().empty()) << p.describe();
    auto refs = reference_convolutions(p);
    ASSERT_EQ(refs.size(), 1u) << p.describe();
    EXPECT_TRUE(has(refs[0]->reason, c.reason)) << refs[0]->reason;
  }
}

}  // namespace
}  // namespace glia
