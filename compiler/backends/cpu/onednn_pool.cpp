// PoolSpecs on the cpu backend: max pooling over channels-last windows that neither
// overlap nor leave the input as a loop of glia's own vectorised over channels, other max
// pooling as a oneDNN pooling primitive, and the adjoint as a first-maximum loop of
// glia's own (oneDNN's backward pooling would need the forward pass's workspace and does
// not promise which of tied maxima it picks; the reference kernel picks the first in
// window order). oneDNN's jit:avx2 pooling read the MNIST CNN's first activations (11 MB,
// channels-last, 2x2 windows) at 8 GB/s, 1.66 ms a step on a 2-core Zen 3; glia's loop
// is NaN-propagating, as the interpreter's window_max.
#include <algorithm>
#include <cstring>
#include <limits>
#include <optional>
#include <unordered_map>

#include "backends/cpu/onednn_util.hpp"

namespace glia::detail::cpu {

namespace {

// Channels-last windows that neither overlap nor leave the input, for one image: per
// spatial axis the windows' count and where each next one starts in the input and in the
// source (elements); the offset of each window position in the input; the channels.
struct ChannelsLastWindows {
  std::int64_t out_dims[3] = {1, 1, 1}, in_step[3] = {0, 0, 0}, out_step[3] = {0, 0, 0};
  std::vector<std::int64_t> offsets;
  std::int64_t channels = 0;
};

std::int64_t numel_of(const std::vector<std::int64_t>& dims) {
  std::int64_t n = 1;
  for (std::int64_t d : dims) n *= d;
  return n;
}

// The geometry of p's windows over `x` (N, C, up to 3 spatial axes), pooled into
// `pooled`, where both are channels-last and the windows neither overlap nor leave x.
std::optional<ChannelsLastWindows> channels_last_windows(const PoolSpec& p, const StridedView& x,
                                                         const StridedView& pooled) {
  const std::size_t spatial = p.window.size();
  if (spatial > 3 || x.dims.size() != spatial + 2 || pooled.dims.size() != spatial + 2 ||
      x.strides[1] != 1 || pooled.strides[1] != 1)
    return std::nullopt;
  ChannelsLastWindows w;
  std::int64_t window[3] = {1, 1, 1}, x_stride[3] = {0, 0, 0};
  for (std::size_t d = 0; d < spatial; ++d) {
    if (p.strides[d] < p.window[d] || p.dilations[d] != 1 || p.padding_low[d] != 0 ||
        p.padding_high[d] > 0)
      return std::nullopt;
    window[d] = p.window[d], x_stride[d] = x.strides[d + 2];
    w.out_dims[d] = pooled.dims[d + 2];
    w.in_step[d] = p.strides[d] * x.strides[d + 2];
    w.out_step[d] = pooled.strides[d + 2];
  }
  for (std::int64_t k = 0; k < window[0] * window[1] * window[2]; ++k)
    w.offsets.push_back(k / (window[1] * window[2]) * x_stride[0] +
                        k / window[2] % window[1] * x_stride[1] + k % window[2] * x_stride[2]);
  w.channels = x.dims[1];
  return w;
}

// The image loop (onednn_pool_image.inc) in each ISA's vector width, as GCC vector types:
// a template could not do it, GCC lowers a vector type in the target of the function that
// declares it, before inlining, and drops a vector_size that depends on a parameter.
#pragma GCC push_options
#pragma GCC target("avx512f,avx512dq,avx512bw,avx512vl")
namespace isa_avx512 {
constexpr int kLanes = 16;
#include "backends/cpu/onednn_pool_image.inc"
}  // namespace isa_avx512
#pragma GCC pop_options

#pragma GCC push_options
#pragma GCC target("avx2")
namespace isa_avx2 {
constexpr int kLanes = 8;
#include "backends/cpu/onednn_pool_image.inc"
}  // namespace isa_avx2
#pragma GCC pop_options

namespace isa_baseline {
constexpr int kLanes = 4;
#include "backends/cpu/onednn_pool_image.inc"
}  // namespace isa_baseline

class MaxPoolKernel final : public CpuKernel {
 public:
  MaxPoolKernel(const dnnl::pooling_v2_forward::primitive_desc& pd, const dnnl::engine& engine,
                ValueId in, ValueId out)
      : engine_(engine),
        src_(pd.src_desc()),
        dst_(pd.dst_desc()),
        scratch_(pd.scratchpad_desc()),
        primitive_(pd),
        in_(in),
        out_(out),
        impl_(pd.impl_info_str()) {}
  void run(RunContext& ctx) const override {
    std::unordered_map<int, dnnl::memory> args{
        {DNNL_ARG_SRC, dnnl::memory(src_, engine_, ctx.at(in_))},
        {DNNL_ARG_DST, dnnl::memory(dst_, engine_, ctx.at(out_))}};
    if (scratch_.get_size() > 0)
      args.emplace(DNNL_ARG_SCRATCHPAD, dnnl::memory(scratch_, engine_, ctx.scratchpad));
    primitive_.execute(ctx.stream, args);
    ctx.stream.wait();
  }
  std::string describe() const override { return cat("onednn (", impl_, ")"); }
  std::size_t scratchpad_bytes() const override { return scratch_.get_size(); }

 private:
  dnnl::engine engine_;
  dnnl::memory::desc src_, dst_, scratch_;
  dnnl::pooling_v2_forward primitive_;
  ValueId in_, out_;
  std::string impl_;
};

// Max pooling over channels-last windows that neither overlap nor leave the input: one
// image per thread at a time, kLanes channels a register (onednn_pool_image.inc).
class MaxPoolChannelsLastKernel final : public CpuKernel {
 public:
  MaxPoolChannelsLastKernel(const PoolSpec& p, ChannelsLastWindows windows)
      : x_(p.input.value),
        out_(p.output.value),
        images_(p.input.dims[0]),
        x_image_(p.input.strides[0]),
        out_image_(p.output.strides[0]),
        numel_(numel_of(p.input.dims)),
        windows_(std::move(windows)) {}

  void run(RunContext& ctx) const override {
    const auto* x = ctx.at<const float>(x_);
    auto* out = ctx.at<float>(out_);
#pragma omp parallel for schedule(static) if (images_ > 1 && numel_ >= 32768)
    for (std::int64_t b = 0; b < images_; ++b)
      image_(windows_, x + b * x_image_, out + b * out_image_);
  }
  std::string describe() const override { return "glia max loop (channels-last)"; }

 private:
  using ImageFn = void (*)(const ChannelsLastWindows&, const float*, float*);
  ValueId x_, out_;
  std::int64_t images_, x_image_, out_image_, numel_;
  ChannelsLastWindows windows_;
  ImageFn image_ = by_vector_isa<ImageFn>(&isa_avx512::pool_max_image, &isa_avx2::pool_max_image,
                                          &isa_baseline::pool_max_image);
};

std::unique_ptr<CpuKernel> make_max_pool(const PoolSpec& p, const dnnl::engine& engine) {
  if (auto windows = channels_last_windows(p, p.input, p.output))
    return std::make_unique<MaxPoolChannelsLastKernel>(p, std::move(*windows));
  dnnl::memory::dims dilation;
  for (std::int64_t d : p.dilations) dilation.push_back(d - 1);
  try {
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    dnnl::pooling_v2_forward::primitive_desc pd(
        {dnnl::prop_kind::forward_inference, dnnl::algorithm::pooling_max, f32_desc(p.input),
         f32_desc(p.output), p.strides, p.window, dilation, p.padding_low, p.padding_high},
        attr, engine, true);
    if (!pd) return nullptr;
    return std::make_unique<MaxPoolKernel>(pd, engine, p.input.value, p.output.value);
  } catch (const dnnl::error&) {
    return nullptr;
  }
}

// select_and_scatter: each window's source value goes to the first maximum of the
// window (row-major window order; a NaN beats numbers), summed where windows overlap.
class MaxPoolBackwardKernel final : public CpuKernel {
 public:
  explicit MaxPoolBackwardKernel(const PoolSpec& p)
      : x_(p.input.value),
        source_(p.source.value),
        out_(p.output.value),
        positive_only_(p.positive_input_only) {
    in_dims_ = p.output.dims, in_strides_ = p.output.strides;
    out_dims_ = p.source.dims, out_strides_ = p.source.strides;
    // Up to three spatial axes; missing ones are unit axes of stride 0.
    while (in_dims_.size() < 5) {
      in_dims_.push_back(1), in_strides_.push_back(0);
      out_dims_.push_back(1), out_strides_.push_back(0);
    }
    for (std::size_t i = 0; i < p.window.size(); ++i) {
      window_[i] = p.window[i], stride_[i] = p.strides[i];
      dilation_[i] = p.dilations[i], pad_[i] = p.padding_low[i];
    }
    numel_ = numel_of(p.output.dims);
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
    // Channels-last disjoint windows with no padding at either end (every window lies
    // inside the input; a negative high padding leaves the last elements out): the lean
    // loop of run_channels_last.
    if (auto windows = channels_last_windows(p, p.output, p.source)) {
      windows_ = std::move(*windows);
      channels_last_ = true;
    }
  }

  void run(RunContext& ctx) const override {
    const auto* x = ctx.at<const float>(x_);
    const auto* src = ctx.at<const float>(source_);
    auto* out = ctx.at<float>(out_);
    if (!exact_ && !image_contiguous_)
      std::memset(out, 0, static_cast<std::size_t>(numel_) * sizeof(float));
    if (channels_last_) return run_channels_last(x, src, out);
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
                    write_window(out + offset[k], std::integral_constant<int, 1>{}, k, pick, best,
                                 s, std::int64_t{1});
                  else
                    write_window(out + offset[k], cs, k, pick, best, s, src_cs);
                }
              } else {
                for (std::int64_t c = 0; c < channels_; ++c)
                  if (pick[c] >= 0 && (!positive_only_ || best[c] > 0.0f))
                    out[offset[pick[c]] + c * cs] += s[c * src_cs];
              }
            }
      }
    }
  }
  // Channels-last, disjoint and unpadded: one image per thread at a time.
  void run_channels_last(const float* x, const float* src, float* out) const {
#pragma omp parallel for schedule(static) if (in_dims_[0] > 1 && numel_ >= 32768)
    for (std::int64_t b = 0; b < in_dims_[0]; ++b) {
      if (!exact_ && image_contiguous_)
        std::memset(out + b * in_strides_[0], 0,
                    static_cast<std::size_t>(in_strides_[0]) * sizeof(float));
      image_(windows_, x + b * in_strides_[0], src + b * out_strides_[0], out + b * in_strides_[0],
             positive_only_);
    }
  }

  using ImageFn = void (*)(const ChannelsLastWindows&, const float*, const float*, float*, bool);
  static ImageFn pick_image() {
    return by_vector_isa<ImageFn>(&isa_avx512::pool_adjoint_image, &isa_avx2::pool_adjoint_image,
                                  &isa_baseline::pool_adjoint_image);
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

  // Disjoint windows: every element of the window gets the source value or zero (zero
  // too where only positive maxima pass and the window's is not).
  template <class Stride>
  void write_window(float* o, Stride cs, std::int32_t k, const std::int32_t* pick,
                    const float* best, const float* s, std::int64_t src_cs) const {
    for (std::int64_t c = 0; c < channels_; ++c)
      o[c * cs] = pick[c] == k && (!positive_only_ || best[c] > 0.0f) ? s[c * src_cs] : 0.0f;
  }

  std::string describe() const override {
    return positive_only_ ? "glia first-maximum loop, positive maxima only"
                          : "glia first-maximum loop";
  }

 private:
  ValueId x_, source_, out_;
  std::vector<std::int64_t> in_dims_, in_strides_, out_dims_, out_strides_;
  std::int64_t window_[3] = {1, 1, 1}, stride_[3] = {1, 1, 1}, dilation_[3] = {1, 1, 1},
               pad_[3] = {0, 0, 0};
  std::int64_t numel_ = 0, channels_ = 1, positions_ = 1;
  ChannelsLastWindows windows_;  // the geometry the per-ISA image loops read
  bool positive_only_ = false;
  bool disjoint_ = false, exact_ = false, image_contiguous_ = false, channels_last_ = false;
  ImageFn image_ = pick_image();
};

}  // namespace

std::unique_ptr<CpuKernel> realise_pooling(const Kernel& kernel, const dnnl::engine& engine) {
  const auto& spec = std::get<PoolSpec>(kernel.spec);
  if (spec.dtype != DType::f32) return nullptr;
  if (spec.kind == PoolSpec::Kind::max) return make_max_pool(spec, engine);
  return std::make_unique<MaxPoolBackwardKernel>(spec);
}

}  // namespace glia::detail::cpu
