// Which ConvSpecs cuDNN's legacy API realises, decided from the spec alone, and why the
// lowering leaves the convolution nodes it leaves (cudnn_views.hpp).
#include "backends/cuda/cudnn_views.hpp"

#include <algorithm>
#include <limits>
#include <optional>
#include <vector>

#include "backends/cuda/cuda_kernel.hpp"
#include "glia/core/error.hpp"

namespace glia::detail::cuda {

namespace conv {

namespace {
constexpr std::int64_t kIntMax = std::numeric_limits<int>::max();
}  // namespace

// ---- What cuDNN takes, decided from the spec alone ---------------------------------------

const char* const kRankReason = "cuDNN convolves 1 to 3 spatial axes";
const char* const kSizeReason = "an operand of 2^31 elements or more (cuDNN indexes with int)";

std::string dtype_declines(DType dtype) {
  bool ok =
      dtype == DType::f32 || dtype == DType::f64 || dtype == DType::f16 || dtype == DType::bf16;
  return ok ? "" : "cuDNN convolves f32, f64, f16 and bf16 only";
}

// cuDNN pads both ends of an axis alike. Padding `high` (the spec's, which makes the output
// size exact) may fall short of `low` by less than a stride: the extra zeros are never read.
std::string padding_declines(const Ints& strides, const Ints& low, const Ints& high) {
  for (std::size_t i = 0; i < strides.size(); ++i) {
    if (low[i] < 0) return "negative padding";
    if (low[i] > kIntMax) return kSizeReason;
    if (low[i] - high[i] < 0 || low[i] - high[i] >= strides[i])
      return cat("asymmetric padding (", low[i], " before and ", high[i], " after spatial axis ", i,
                 "): cuDNN's legacy API pads both ends alike");
  }
  return "";
}

Ints packed_strides(const Ints& dims, Layout layout) {
  std::vector<std::size_t> order{0};
  if (layout == Layout::nchw) order.push_back(1);
  for (std::size_t d = 2; d < dims.size(); ++d) order.push_back(d);
  if (layout == Layout::nhwc) order.push_back(1);
  Ints strides(dims.size());
  std::int64_t step = 1;
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    strides[*it] = step;
    step *= dims[*it];
  }
  return strides;
}

// Whether the view is the packed layout (a size-1 axis may carry any stride).
bool packed_in(const Dims& v, Layout layout) {
  Ints p = packed_strides(v.dims, layout);
  for (std::size_t i = 0; i < p.size(); ++i)
    if (v.dims[i] != 1 && v.strides[i] != p[i]) return false;
  return true;
}

// The view with its size-1 axes given the outermost stride, as the transform's end.
Dims settled(Dims v) {
  std::int64_t outer = 1;
  for (std::size_t i = 0; i < v.dims.size(); ++i)
    if (v.dims[i] != 1) outer = std::max(outer, v.strides[i] * v.dims[i]);
  for (std::size_t i = 0; i < v.dims.size(); ++i)
    if (v.dims[i] == 1) v.strides[i] = outer;
  return v;
}

// A 1-D convolution's view gains a unit height before its width.
static Dims widened(Ints dims, Ints strides) {
  if (dims.size() == 3) {
    dims.insert(dims.begin() + 2, 1);
    strides.insert(strides.begin() + 2, strides[2] * dims[3]);
  }
  return {std::move(dims), std::move(strides)};
}

// Empty when the view's elements are all addressable with int offsets.
static std::string size_declines(const Dims& v) {
  std::int64_t last = 0;
  for (std::size_t i = 0; i < v.dims.size(); ++i) {
    if (v.dims[i] == 1) continue;
    if (v.strides[i] < 1) return "a view with a stride below 1";
    if (v.strides[i] > kIntMax || v.dims[i] > kIntMax) return kSizeReason;
    last += (v.dims[i] - 1) * v.strides[i];
    if (last >= kIntMax) return kSizeReason;
  }
  return v.numel() >= kIntMax ? kSizeReason : "";
}

// The spec's views as cuDNN's descriptors take them, or why not: grouped weights
// [G, O/G, C/G, K...] fold into [O, C/G, K...] (cuDNN's group count splits O).
std::string views_of(const ConvSpec& s, Views& out) {
  const std::size_t rank = s.src.dims.size();
  if (rank < 3 || rank > 5) return kRankReason;
  const std::size_t spatial = rank - 2;
  const StridedView& w = s.weights;
  bool grouped_view = w.dims.size() == rank + 1;
  if (s.dst.dims.size() != rank || (w.dims.size() != rank && !grouped_view) ||
      s.src.strides.size() != rank || s.dst.strides.size() != rank ||
      w.strides.size() != w.dims.size() || s.strides.size() != spatial ||
      s.dilations.size() != spatial || s.padding_low.size() != spatial ||
      s.padding_high.size() != spatial || s.groups < 1 || s.groups > kIntMax ||
      (grouped_view && w.dims[0] != s.groups))
    return "a malformed convolution spec";
  for (std::size_t i = 0; i < spatial; ++i)
    if (s.strides[i] < 1 || s.dilations[i] < 1 || s.strides[i] > kIntMax ||
        s.dilations[i] > kIntMax)
      return "a malformed convolution spec";
  Ints wd = w.dims, ws = w.strides;
  if (grouped_view) {
    std::int64_t g = wd[0], o = wd[1];
    if (g != 1 && o != 1 && ws[0] != o * ws[1])
      return "grouped weights whose groups do not fold into output channels";
    std::int64_t stride = o == 1 ? ws[0] : ws[1];
    wd.erase(wd.begin());
    ws.erase(ws.begin());
    wd[0] = g * o;
    ws[0] = stride;
  }
  out.src = widened(s.src.dims, s.src.strides);
  out.weights = widened(wd, ws);
  out.dst = widened(s.dst.dims, s.dst.strides);
  if (out.src.dims[0] != out.dst.dims[0] || out.weights.dims[0] != out.dst.dims[1] ||
      out.weights.dims[1] * s.groups != out.src.dims[1] || out.dst.dims[1] % s.groups != 0)
    return "a malformed convolution spec";
  for (const Dims* v : {&out.src, &out.weights, &out.dst})
    if (std::string why = size_declines(*v); !why.empty()) return why;
  return padding_declines(s.strides, s.padding_low, s.padding_high);
}

// ---- Why a convolution node is left -------------------------------------------------------

struct Geometry {
  Ints strides, low, high;
};

static bool all_ones(const Ints& v) {
  return std::all_of(v.begin(), v.end(), [](std::int64_t e) { return e == 1; });
}

static std::int64_t window(std::int64_t k, std::int64_t dilation) { return (k - 1) * dilation + 1; }

static std::int64_t spatial_numel(const Shape& s) {
  std::int64_t n = 1;
  for (int i = 2; i < s.rank(); ++i) n *= s[i];
  return n;
}

// The spec's strides and padding for a convolution node as the lowering derives them
// (lowering/conv.cpp), trying its passes in its order; nullopt where it makes no spec.
std::optional<Geometry> node_geometry(const Graph& g, const Node& n) {
  const auto& c = std::get<ConvAttrs>(n.attrs);
  const Shape& x = g.type(n.inputs[0]).shape;
  const Shape& k = g.type(n.inputs[1]).shape;
  const Shape& y = n.type.shape;
  const int rank = y.rank();
  Geometry geo;
  const Node& kernel = g.node(n.inputs[1]);
  bool reversed = kernel.op == Op::reverse && c.feature_groups == 1 && c.batch_groups == 1 &&
                  all_ones(c.strides);
  if (reversed) {  // the input gradient: spec src is the result, dst the node's input
    const Ints& axes = std::get<AxesAttrs>(kernel.attrs).axes;
    for (int i = 0; i < rank; ++i) {
      bool r = std::find(axes.begin(), axes.end(), i) != axes.end();
      if (r ? i < 2 : i >= 2 && k[i] != 1) reversed = false;
    }
    for (int i = 2; i < rank && reversed; ++i) {
      auto a = static_cast<std::size_t>(i - 2);
      std::int64_t win = window(k[i], c.kernel_dilation[a]);
      std::int64_t low = win - 1 - c.padding_low[a];
      reversed = low >= 0;
      geo.strides.push_back(c.input_dilation[a]);
      geo.low.push_back(low);
      geo.high.push_back((x[i] - 1) * c.input_dilation[a] + win - y[i] - low);
    }
    if (reversed) return geo;
    geo = {};
  }
  if (c.batch_groups != 1 || !all_ones(c.input_dilation)) return std::nullopt;
  bool kernel_gradient = c.feature_groups == 1 && spatial_numel(y) < spatial_numel(k);
  for (int i = 2; i < rank; ++i) {
    auto a = static_cast<std::size_t>(i - 2);
    if (kernel_gradient) {  // spec weights are the result; its dst the node's kernel operand
      std::int64_t win = window(y[i], c.strides[a]);
      geo.strides.push_back(c.kernel_dilation[a]);
      geo.high.push_back((k[i] - 1) * c.kernel_dilation[a] + win - x[i] - c.padding_low[a]);
    } else {
      std::int64_t win = window(k[i], c.kernel_dilation[a]);
      geo.strides.push_back(c.strides[a]);
      geo.high.push_back((y[i] - 1) * c.strides[a] + win - x[i] - c.padding_low[a]);
    }
    geo.low.push_back(c.padding_low[a]);
  }
  return geo;
}

}  // namespace conv

using conv::dtype_declines;
using conv::Geometry;
using conv::kRankReason;
using conv::kSizeReason;
using conv::node_geometry;
using conv::padding_declines;
using conv::Views;
using conv::views_of;

std::string cudnn_declines(const Graph&, const Kernel& kernel) {
  const auto& s = std::get<ConvSpec>(kernel.spec);
  if (std::string why = dtype_declines(s.dtype); !why.empty()) return why;
  if (!s.epilogue.empty()) return "cuDNN's legacy convolutions take no epilogue";
  Views views;
  return views_of(s, views);
}

std::string convolution_fallback(const Graph& graph, ValueId node) {
  const Node& n = graph.node(node);
  const auto& c = std::get<ConvAttrs>(n.attrs);
  if (std::string why = dtype_declines(n.type.dtype); !why.empty()) return why;
  const ValueId operands[] = {node, n.inputs[0], n.inputs[1]};
  for (ValueId v : operands)
    if (graph.type(v).shape.numel() == 0) return "a zero-size convolution";
  if (n.type.shape.rank() < 3 || n.type.shape.rank() > 5) return kRankReason;
  if (std::any_of(c.padding_low.begin(), c.padding_low.end(), [](auto p) { return p < 0; }))
    return "negative padding";
  if (c.batch_groups != 1) return "batch groups (a grouped kernel's gradient)";
  std::optional<Geometry> geo = node_geometry(graph, n);
  if (!geo)
    return c.feature_groups != 1 ? "input dilation of a grouped convolution (its input gradient)"
                                 : "input dilation without autograd's reversed kernel";
  if (std::string why = padding_declines(geo->strides, geo->low, geo->high); !why.empty())
    return why;
  for (ValueId v : operands)
    if (graph.type(v).shape.numel() >= conv::kIntMax) return kSizeReason;
  return "";
}

}  // namespace glia::detail::cuda
