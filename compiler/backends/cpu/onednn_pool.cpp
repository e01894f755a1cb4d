// Max pooling on the cpu backend: the window op's axes mapped onto [N, C, spatial...]
// (NHWC needs no copy: strides say where each axis is), window_max as a oneDNN pooling
// primitive, select_and_scatter as a first-maximum loop vectorised over channels.
#include "backends/cpu/onednn_pool.hpp"

#include <algorithm>
#include <cstring>
#include <limits>

#include "backends/cpu/onednn_epilogue.hpp"

namespace glia::detail::cpu {

namespace {

// Which operand axis is N, which is C (-1: a unit axis stands in), which are spatial.
struct PoolLayout {
  int n = -1, c = -1;
  std::vector<int> spatial;
};

std::optional<PoolLayout> pool_layout(const WindowAttrs& a, int rank) {
  std::vector<int> trivial;
  for (int i = 0; i < rank; ++i) {
    auto u = static_cast<std::size_t>(i);
    if (a.base_dilation[u] != 1) return std::nullopt;
    if (a.window[u] == 1 && a.strides[u] == 1 && a.padding_low[u] == 0 && a.padding_high[u] == 0)
      trivial.push_back(i);
  }
  PoolLayout p;
  if (!trivial.empty()) p.n = trivial.front();
  if (trivial.size() >= 2) p.c = trivial.back();
  for (int i = 0; i < rank; ++i)
    if (i != p.n && i != p.c) p.spatial.push_back(i);
  if (p.spatial.empty() || p.spatial.size() > 3) return std::nullopt;
  return p;
}

// The [N, C, spatial...] dims of a tensor of `shape` laid out as `p`, and their strides.
void pool_dims(const PoolLayout& p, const Shape& shape, std::vector<std::int64_t>& dims,
               std::vector<std::int64_t>& strides) {
  std::vector<std::int64_t> s = shape.strides();
  dims.clear(), strides.clear();
  for (int axis : {p.n, p.c}) {
    dims.push_back(axis < 0 ? 1 : shape[axis]);
    strides.push_back(axis < 0 ? 0 : s[static_cast<std::size_t>(axis)]);
  }
  for (int axis : p.spatial) {
    dims.push_back(shape[axis]);
    strides.push_back(s[static_cast<std::size_t>(axis)]);
  }
}

class MaxPoolKernel final : public Kernel {
 public:
  MaxPoolKernel(const dnnl::pooling_v2_forward::primitive_desc& pd, const dnnl::engine& engine,
                ValueId in, ValueId out, std::string text)
      : engine_(engine),
        src_(pd.src_desc()),
        dst_(pd.dst_desc()),
        scratch_(pd.scratchpad_desc()),
        primitive_(pd),
        text_(std::move(text)) {
    impl_ = pd.impl_info_str();
    inputs = {in};
    outputs = {out};
    covered = {out};
  }
  void run(RunContext& ctx) const override {
    auto& v = ctx.values;
    std::unordered_map<int, dnnl::memory> args{
        {DNNL_ARG_SRC,
         dnnl::memory(src_, engine_, v[static_cast<std::size_t>(inputs[0])].raw_data())},
        {DNNL_ARG_DST,
         dnnl::memory(dst_, engine_, v[static_cast<std::size_t>(outputs[0])].raw_data())}};
    if (scratch_.get_size() > 0)
      args.emplace(DNNL_ARG_SCRATCHPAD, dnnl::memory(scratch_, engine_, ctx.scratchpad));
    primitive_.execute(ctx.stream, args);
    ctx.stream.wait();
  }
  std::string describe() const override { return cat(text_, " (", impl_, ")"); }
  std::size_t scratchpad_bytes() const override { return scratch_.get_size(); }

 private:
  dnnl::engine engine_;
  dnnl::memory::desc src_, dst_, scratch_;
  dnnl::pooling_v2_forward primitive_;
  std::string text_, impl_;
};

std::string dims_text(const std::vector<std::int64_t>& d) {
  std::string s;
  for (std::size_t i = 0; i < d.size(); ++i) s += (i ? "x" : "") + std::to_string(d[i]);
  return s;
}

std::unique_ptr<Kernel> make_max_pool(Lowering& l, ValueId id, const PoolLayout& p) {
  const Node& n = l.node(id);
  const auto& a = std::get<WindowAttrs>(n.attrs);
  std::vector<std::int64_t> in_dims, in_strides, out_dims, out_strides;
  pool_dims(p, l.graph().type(n.inputs[0]).shape, in_dims, in_strides);
  pool_dims(p, n.type.shape, out_dims, out_strides);
  dnnl::memory::dims kernel, strides, dilation, pad_l, pad_r;
  for (std::size_t i = 0; i < p.spatial.size(); ++i) {
    auto ax = static_cast<std::size_t>(p.spatial[i]);
    std::int64_t win = (a.window[ax] - 1) * a.window_dilation[ax] + 1;
    kernel.push_back(a.window[ax]);
    strides.push_back(a.strides[ax]);
    dilation.push_back(a.window_dilation[ax] - 1);
    pad_l.push_back(a.padding_low[ax]);
    pad_r.push_back((out_dims[i + 2] - 1) * a.strides[ax] + win - in_dims[i + 2] -
                    a.padding_low[ax]);
  }
  try {
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    dnnl::pooling_v2_forward::primitive_desc pd(
        {dnnl::prop_kind::forward_inference, dnnl::algorithm::pooling_max,
         f32_desc(in_dims, in_strides), f32_desc(out_dims, out_strides), strides, kernel, dilation,
         pad_l, pad_r},
        attr, l.engine(), true);
    if (!pd) return nullptr;
    return std::make_unique<MaxPoolKernel>(
        pd, l.engine(), n.inputs[0], id,
        cat("onednn pooling max ", dims_text(in_dims), " -> ", dims_text(out_dims)));
  } catch (const dnnl::error&) {
    return nullptr;
  }
}

// select_and_scatter: each window's source value goes to the first maximum of the
// window (row-major window order; a NaN beats numbers), summed where windows overlap.
class MaxPoolBackwardKernel final : public Kernel {
 public:
  MaxPoolBackwardKernel(const Lowering& l, ValueId id, const PoolLayout& p) {
    const Node& n = l.node(id);
    const auto& a = std::get<WindowAttrs>(n.attrs);
    pool_dims(p, n.type.shape, in_dims_, in_strides_);
    pool_dims(p, l.graph().type(n.inputs[1]).shape, out_dims_, out_strides_);
    // Up to three spatial axes; missing ones are unit axes of stride 0.
    while (in_dims_.size() < 5) {
      in_dims_.push_back(1), in_strides_.push_back(0);
      out_dims_.push_back(1), out_strides_.push_back(0);
    }
    for (std::size_t i = 0; i < 3; ++i) {
      if (i < p.spatial.size()) {
        auto ax = static_cast<std::size_t>(p.spatial[i]);
        window_[i] = a.window[ax], stride_[i] = a.strides[ax];
        dilation_[i] = a.window_dilation[ax], pad_[i] = a.padding_low[ax];
      }
    }
    numel_ = n.type.shape.numel();
    channels_ = in_dims_[1];
    positions_ = window_[0] * window_[1] * window_[2];
    // Windows that never share an element are written, not accumulated; when they also
    // cover every element (2x2 windows at stride 2 over an even size), nothing needs
    // zeroing first.
    disjoint_ = exact_ = true;
    for (int d = 0; d < 3; ++d) {
      disjoint_ = disjoint_ && stride_[d] >= window_[d] && dilation_[d] == 1 && pad_[d] == 0;
      exact_ = exact_ && stride_[d] == window_[d] &&
               out_dims_[std::size_t(d) + 2] * stride_[d] == in_dims_[std::size_t(d) + 2];
    }
    exact_ = exact_ && disjoint_;
    image_contiguous_ = in_dims_[0] > 0 && in_strides_[0] * in_dims_[0] == numel_;
    inputs = {n.inputs[0]};
    if (n.inputs[1] != n.inputs[0]) inputs.push_back(n.inputs[1]);
    outputs = {id};
    covered = {id};
    text_ = cat("max_pool_backward ", dims_text(in_dims_), " <- ", dims_text(out_dims_));
  }

  void run(RunContext& ctx) const override {
    const auto* x =
        static_cast<const float*>(ctx.values[static_cast<std::size_t>(inputs[0])].raw_data());
    const auto* src =
        static_cast<const float*>(ctx.values[static_cast<std::size_t>(inputs.back())].raw_data());
    auto* out = static_cast<float*>(ctx.values[static_cast<std::size_t>(outputs[0])].raw_data());
    if (!exact_ && !image_contiguous_)
      std::memset(out, 0, static_cast<std::size_t>(numel_) * sizeof(float));
    const std::int64_t cs = in_strides_[1], src_cs = out_strides_[1];
    // Images are independent (each writes only its own slice of `out`): one per thread at
    // a time, each thread with its own running maxima.
#pragma omp parallel if (in_dims_[0] > 1 && numel_ >= 32768)
    {
      std::vector<float> best_v(static_cast<std::size_t>(channels_));
      std::vector<std::int32_t> pick_v(static_cast<std::size_t>(channels_));
      std::vector<std::int64_t> offset_v(static_cast<std::size_t>(positions_));
      float* best = best_v.data();
      std::int32_t* pick = pick_v.data();
      std::int64_t* offset = offset_v.data();
#pragma omp for schedule(static)
      for (std::int64_t b = 0; b < in_dims_[0]; ++b) {
        if (!exact_ && image_contiguous_)
          std::memset(out + b * in_strides_[0], 0,
                      static_cast<std::size_t>(in_strides_[0]) * sizeof(float));
        for (std::int64_t o0 = 0; o0 < out_dims_[2]; ++o0)
          for (std::int64_t o1 = 0; o1 < out_dims_[3]; ++o1)
            for (std::int64_t o2 = 0; o2 < out_dims_[4]; ++o2) {
              const std::int64_t o[3] = {o0, o1, o2};
              std::fill(best, best + channels_, -std::numeric_limits<float>::infinity());
              std::fill(pick, pick + channels_, -1);
              for (std::int32_t k = 0; k < std::int32_t(positions_); ++k) {
                std::int64_t kk[3] = {k / (window_[1] * window_[2]), k / window_[2] % window_[1],
                                      k % window_[2]};
                std::int64_t at = b * in_strides_[0];
                bool inside = true;
                for (int d = 0; d < 3; ++d) {
                  std::int64_t pos = o[d] * stride_[d] + kk[d] * dilation_[d] - pad_[d];
                  inside = inside && pos >= 0 && pos < in_dims_[std::size_t(d) + 2];
                  at += pos * in_strides_[std::size_t(d) + 2];
                }
                offset[k] = at;
                if (!inside) continue;
                const float* xk = x + at;
                if (cs == 1)  // channels-last: a unit-stride loop the compiler vectorises
                  update_maxima(xk, std::integral_constant<int, 1>{}, k, best, pick);
                else
                  update_maxima(xk, cs, k, best, pick);
              }
              const float* s = src + b * out_strides_[0] + o0 * out_strides_[2] +
                               o1 * out_strides_[3] + o2 * out_strides_[4];
              if (disjoint_) {
                for (std::int32_t k = 0; k < std::int32_t(positions_); ++k) {
                  if (cs == 1 && src_cs == 1)
                    write_window(out + offset[k], std::integral_constant<int, 1>{}, k, pick, s,
                                 std::int64_t{1});
                  else
                    write_window(out + offset[k], cs, k, pick, s, src_cs);
                }
              } else {
                for (std::int64_t c = 0; c < channels_; ++c)
                  if (pick[c] >= 0) out[offset[pick[c]] + c * cs] += s[c * src_cs];
              }
            }
      }
    }
  }
  // The running first maximum per channel after window position k (a NaN beats numbers
  // and the first NaN stays).
  template <class Stride>
  void update_maxima(const float* xk, Stride cs, std::int32_t k, float* best,
                     std::int32_t* pick) const {
    for (std::int64_t c = 0; c < channels_; ++c) {
      float v = xk[c * cs], b = best[c];
      // Bitwise, not short-circuit: the loop stays branch-free and vectorises.
      bool v_nan = v != v, b_nan = b != b;
      bool better = (pick[c] < 0) | (v_nan & !b_nan) | (!v_nan & (v > b));
      best[c] = better ? v : b;
      pick[c] = better ? k : pick[c];
    }
  }

  // Disjoint windows: every element of the window gets the source value or zero.
  template <class Stride>
  void write_window(float* o, Stride cs, std::int32_t k, const std::int32_t* pick, const float* s,
                    std::int64_t src_cs) const {
    for (std::int64_t c = 0; c < channels_; ++c) o[c * cs] = pick[c] == k ? s[c * src_cs] : 0.0f;
  }

  std::string describe() const override { return text_; }

 private:
  std::vector<std::int64_t> in_dims_, in_strides_, out_dims_, out_strides_;
  std::int64_t window_[3] = {1, 1, 1}, stride_[3] = {1, 1, 1}, dilation_[3] = {1, 1, 1},
               pad_[3] = {0, 0, 0};
  std::int64_t numel_ = 0, channels_ = 1, positions_ = 1;
  bool disjoint_ = false, exact_ = false, image_contiguous_ = false;
  std::string text_;
};

}  // namespace

std::unique_ptr<Kernel> make_pool_kernel(Lowering& l, ValueId id) {
  const Node& n = l.node(id);
  if ((n.op != Op::window_max && n.op != Op::select_and_scatter) || n.type.dtype != DType::f32 ||
      n.type.shape.numel() == 0 || l.graph().type(n.inputs.back()).shape.numel() == 0)
    return nullptr;
  auto layout = pool_layout(std::get<WindowAttrs>(n.attrs), n.type.shape.rank());
  if (!layout) return nullptr;
  if (n.op == Op::window_max) return make_max_pool(l, id, *layout);
  return std::make_unique<MaxPoolBackwardKernel>(l, id, *layout);
}

}  // namespace glia::detail::cpu
