// ConvPoolSpecs on the cpu backend: a convolution fused with the max pooling that alone
// reads it, and the kernel gradient through pooling's adjoint, as loops of glia's own
// (conv_pool_loops.inc) that never store the convolution's output. Where the convolution
// has few taps a window (the MNIST CNN's first: one channel, 3x3) its arithmetic is cheap
// and its output is what costs: [128, 26, 26, 32] floats, 11 MB written, read by the
// pooling, read again by the adjoint, which writes 11 MB that the kernel gradient reads,
// each pass bound by memory (oneDNN's forward 1.2-1.4 ms, pooling ~1 ms, the adjoint
// 1.5-2 ms and oneDNN's kernel gradient 1.0-1.5 ms a step on a 2-core Zen 3). Here the
// forward pass computes each window's values where it pools them, and the gradient's pass
// computes them again (the same instructions, so the same first maxima) and adds the
// pooled gradient times the picked position's inputs into the kernel gradient.
//
// Each image is first copied into a zero-padded channels-last buffer, so that every tap
// of every window reads in bounds.
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "backends/cpu/realise.hpp"
#include "backends/cpu/spin_team.hpp"

namespace glia::detail::cpu {

namespace {

using Pass = ConvPoolSpec::Pass;

// More taps a window (input channels x kernel size) than this, and the gradient's second
// pass over the convolution costs more than the memory traffic it saves: the unfused
// kernels take it.
constexpr std::int64_t kMaxTaps = 32;
// The chunks of whole images a run splits its batch into, at most: the kernel gradient
// keeps sums per chunk, added in chunk order, so that its bits do not depend on the
// thread count (up to this many threads).
constexpr std::int64_t kGradientChunks = 16;

struct ConvPoolGeometry {
  std::int64_t taps = 0, outs = 0;
  std::vector<std::int64_t> tap_offset;               // per tap (ky, kx, c): in the padded image
  std::vector<std::int64_t> position_offset;          // per window position: its output's origin
  std::int64_t window_step_y = 0, window_step_x = 0;  // between pooling windows
  std::int64_t pooled_h = 0, pooled_w = 0;
  bool relu = false;
  // The exact gradient's walk over every output: their rows and columns, the step between
  // them in the padded image, the pooling's window width and stride in outputs.
  std::int64_t out_h = 0, out_w = 0, out_step_y = 0, out_step_x = 0;
  std::int64_t window_w = 0, pool_stride_y = 0, pool_stride_x = 0;
};

#define GLIA_CONV_POOL_INLINE inline __attribute__((always_inline))

#pragma GCC push_options
#pragma GCC target("avx512f,avx512dq,avx512bw,avx512vl,fma")
namespace isa_avx512 {
constexpr int kLanes = 16;
GLIA_CONV_POOL_INLINE __m512 splat(float v) { return _mm512_set1_ps(v); }
GLIA_CONV_POOL_INLINE __m512 fmadd(__m512 a, __m512 b, __m512 c) {
  return _mm512_fmadd_ps(a, b, c);
}
// Masked: _mm512_max_ps's undefined pass-through operand draws a false -Wmaybe-uninitialized
// from GCC 12.
GLIA_CONV_POOL_INLINE __m512 max(__m512 a, __m512 b) { return _mm512_maskz_max_ps(0xffff, a, b); }
GLIA_CONV_POOL_INLINE bool any_true(__m512i m) { return _mm512_test_epi32_mask(m, m) != 0; }
#include "backends/cpu/conv_pool_loops.inc"
}  // namespace isa_avx512
#pragma GCC pop_options

#pragma GCC push_options
#pragma GCC target("avx2,fma")
namespace isa_avx2 {
constexpr int kLanes = 8;
GLIA_CONV_POOL_INLINE __m256 splat(float v) { return _mm256_set1_ps(v); }
GLIA_CONV_POOL_INLINE __m256 fmadd(__m256 a, __m256 b, __m256 c) {
  return _mm256_fmadd_ps(a, b, c);
}
GLIA_CONV_POOL_INLINE __m256 max(__m256 a, __m256 b) { return _mm256_max_ps(a, b); }
GLIA_CONV_POOL_INLINE bool any_true(__m256i m) { return _mm256_movemask_ps(__m256(m)) != 0; }
#include "backends/cpu/conv_pool_loops.inc"
}  // namespace isa_avx2
#pragma GCC pop_options

namespace isa_baseline {
constexpr int kLanes = 4;
GLIA_CONV_POOL_INLINE __m128 splat(float v) { return _mm_set1_ps(v); }
GLIA_CONV_POOL_INLINE __m128 fmadd(__m128 a, __m128 b, __m128 c) {
  return _mm_add_ps(_mm_mul_ps(a, b), c);
}
GLIA_CONV_POOL_INLINE __m128 max(__m128 a, __m128 b) { return _mm_max_ps(a, b); }
GLIA_CONV_POOL_INLINE bool any_true(__m128i m) { return _mm_movemask_ps(__m128(m)) != 0; }
#include "backends/cpu/conv_pool_loops.inc"
}  // namespace isa_baseline

#undef GLIA_CONV_POOL_INLINE

using ImageFn = void (*)(const ConvPoolGeometry&, const float*, const float*, const float*, float*,
                         const std::int64_t*);
using GradImageFn = void (*)(const ConvPoolGeometry&, const float*, const float*, const float*,
                             const float*, const std::int64_t*, bool, float*);
using ExactGradImageFn = void (*)(const ConvPoolGeometry&, const float*, const float*, const float*,
                                  const float*, const std::int64_t*, bool, float*, float*);

int lanes() { return by_vector_isa(16, 8, 4); }

// At most one add, of a per-channel operand, then at most one relu.
bool epilogue_fits(const EpilogueSpec& e) {
  std::size_t i = 0;
  if (i < e.steps.size() && e.steps[i] == EpilogueSpec::Step::add) {
    const auto& s = e.operands[0].strides;
    if (s.size() != 4 || s[0] != 0 || s[2] != 0 || s[3] != 0) return false;
    ++i;
  }
  if (i < e.steps.size() && e.steps[i] == EpilogueSpec::Step::relu) ++i;
  return i == e.steps.size();
}

bool fits(const ConvPoolSpec& p) {
  if (const char* e = std::getenv("GLIA_CPU_CONV_POOL"); e != nullptr && std::strcmp(e, "0") == 0)
    return false;
  const ConvSpec& c = p.conv;
  const PoolSpec& pool = p.pool;
  if (c.dtype != DType::f32 || c.groups != 1 || c.src.dims.size() != 4 ||
      c.weights.dims.size() != 4 || pool.kind != PoolSpec::Kind::max || pool.window.size() != 2)
    return false;
  const auto& w = c.weights.dims;  // [O, C, KH, KW]
  if (w[1] * w[2] * w[3] > kMaxTaps || w[0] % lanes() != 0 || !epilogue_fits(c.epilogue))
    return false;
  for (std::size_t i = 0; i < 2; ++i)
    if (c.padding_low[i] < 0 || pool.padding_low[i] != 0 || pool.padding_high[i] > 0 ||
        pool.dilations[i] != 1)
      return false;
  return true;
}

class ConvPoolKernel final : public CpuKernel {
 public:
  explicit ConvPoolKernel(const ConvPoolSpec& spec) : spec_(spec) {
    const ConvSpec& c = spec.conv;
    const auto& s = c.src.dims;      // [N, C, H, W]
    const auto& w = c.weights.dims;  // [O, C, KH, KW]
    const auto& d = c.dst.dims;      // [N, O, P, Q]
    images_ = s[0], channels_ = s[1], h_ = s[2], w_ = s[3];
    pad_t_ = c.padding_low[0], pad_l_ = c.padding_low[1];
    // Rows and columns the windows read: the input's, padded, or fewer where the high
    // padding is negative.
    ph_ = std::max(h_ + pad_t_, (d[2] - 1) * c.strides[0] + (w[2] - 1) * c.dilations[0] + 1);
    pw_ = std::max(w_ + pad_l_, (d[3] - 1) * c.strides[1] + (w[3] - 1) * c.dilations[1] + 1);
    const std::int64_t row = pw_ * channels_;
    g_.outs = w[0];
    g_.taps = w[1] * w[2] * w[3];
    for (std::int64_t ky = 0; ky < w[2]; ++ky)
      for (std::int64_t kx = 0; kx < w[3]; ++kx)
        for (std::int64_t ch = 0; ch < channels_; ++ch)
          g_.tap_offset.push_back(ky * c.dilations[0] * row + kx * c.dilations[1] * channels_ + ch);
    const PoolSpec& pool = spec.pool;
    for (std::int64_t wy = 0; wy < pool.window[0]; ++wy)
      for (std::int64_t wx = 0; wx < pool.window[1]; ++wx)
        g_.position_offset.push_back(wy * c.strides[0] * row + wx * c.strides[1] * channels_);
    g_.window_step_y = pool.strides[0] * c.strides[0] * row;
    g_.window_step_x = pool.strides[1] * c.strides[1] * channels_;
    g_.pooled_h = pool.output.dims[2];
    g_.pooled_w = pool.output.dims[3];
    g_.out_h = d[2], g_.out_w = d[3];
    g_.out_step_y = c.strides[0] * row, g_.out_step_x = c.strides[1] * channels_;
    g_.window_w = pool.window[1];
    g_.pool_stride_y = pool.strides[0], g_.pool_stride_x = pool.strides[1];
    g_.relu = !c.epilogue.steps.empty() && c.epilogue.steps.back() == EpilogueSpec::Step::relu;
  }

  bool uses_openmp() const override { return false; }
  std::string describe() const override {
    return cat("glia convolution fused with max pooling, ",
               spec_.pass == Pass::forward ? "forward" : "kernel gradient", " (", lanes(),
               " channels a vector)");
  }
  std::size_t scratchpad_bytes() const override {
    const std::int64_t sums = spec_.pass == Pass::forward ? 0 : kGradientChunks * weight_floats();
    return std::size_t(weight_floats() + g_.outs + sums + kGradientChunks * image_floats()) *
           sizeof(float);
  }

  void run(RunContext& ctx) const override {
    float* w = static_cast<float*>(ctx.scratchpad);
    float* bias = w + weight_floats();
    float* sums = bias + g_.outs;
    float* images = sums + (spec_.pass == Pass::forward ? 0 : kGradientChunks * weight_floats());
    pack_weights(ctx, w, bias);
    const bool forward = spec_.pass == Pass::forward;
    // Chunks of whole images (the gradient's sums are per chunk), spread over the parts.
    const int chunks = static_cast<int>(std::min(images_, kGradientChunks));
    const int parts = std::min(run_threads(), chunks);
    run_parts(ctx.team, parts, [&](int part) {
      float* image = images + part * image_floats();
      std::fill(image, image + image_floats(), 0.0f);
      std::vector<float> adjoint;  // images with an infinity or NaN: their full adjoint
      for (int chunk = chunks * part / parts; chunk < chunks * (part + 1) / parts; ++chunk) {
        float* chunk_sums = sums + chunk * weight_floats();
        if (!forward) std::fill(chunk_sums, chunk_sums + weight_floats(), 0.0f);
        for (std::int64_t n = images_ * chunk / chunks; n < images_ * (chunk + 1) / chunks; ++n) {
          const bool finite = copy_image(ctx, n, image);
          if (forward) {
            const StridedView& o = spec_.pool.output;
            image_(g_, image, w, bias, ctx.at<float>(o.value) + n * o.strides[0],
                   o.strides.data() + 1);
          } else {
            const StridedView& gv = spec_.pooled_grad;
            const float* grad = ctx.at<const float>(gv.value) + n * gv.strides[0];
            if (finite) {
              grad_image_(g_, image, w, bias, grad, gv.strides.data() + 1, spec_.positive_only,
                          chunk_sums);
            } else {
              adjoint.assign(std::size_t(g_.out_h * g_.out_w * g_.outs), 0.0f);
              exact_grad_image_(g_, image, w, bias, grad, gv.strides.data() + 1,
                                spec_.positive_only, adjoint.data(), chunk_sums);
            }
          }
        }
      }
    });
    if (!forward) write_gradient(ctx, sums, chunks);
  }

 private:
  std::int64_t weight_floats() const { return g_.taps * g_.outs; }
  std::int64_t image_floats() const { return ph_ * pw_ * channels_; }

  // The weights as [taps][O] and the bias as [O] (zeros without one).
  void pack_weights(const RunContext& ctx, float* w, float* bias) const {
    const StridedView& v = spec_.conv.weights;
    const float* src = ctx.at<const float>(v.value);
    const auto& s = v.strides;
    const auto& d = v.dims;
    for (std::int64_t o = 0; o < d[0]; ++o) {
      std::int64_t t = 0;
      for (std::int64_t ky = 0; ky < d[2]; ++ky)
        for (std::int64_t kx = 0; kx < d[3]; ++kx)
          for (std::int64_t c = 0; c < d[1]; ++c)
            w[t++ * g_.outs + o] = src[o * s[0] + c * s[1] + ky * s[2] + kx * s[3]];
    }
    const EpilogueSpec& e = spec_.conv.epilogue;
    if (e.operands.empty()) {
      std::fill(bias, bias + g_.outs, 0.0f);
      return;
    }
    const float* b = ctx.at<const float>(e.operands[0].value);
    for (std::int64_t o = 0; o < g_.outs; ++o) bias[o] = b[o * e.operands[0].strides[1]];
  }

  // Image n into the padded channels-last buffer (its padding stays zero): row by row
  // where the view's rows are channels-last and contiguous (NHWC), else element by element.
  // Whether its values are all finite.
  bool copy_image(const RunContext& ctx, std::int64_t n, float* image) const {
    const StridedView& v = spec_.conv.src;
    const float* x = ctx.at<const float>(v.value) + n * v.strides[0];
    const auto& s = v.strides;
    const std::int64_t cols = std::min(w_, pw_ - pad_l_);
    bool finite = true;
    for (std::int64_t y = 0; y < h_ && y + pad_t_ < ph_; ++y) {
      float* to = image + ((y + pad_t_) * pw_ + pad_l_) * channels_;
      const float* from = x + y * s[2];
      if ((s[1] == 1 || channels_ == 1) && (s[3] == channels_ || cols == 1)) {
        std::memcpy(to, from, std::size_t(cols * channels_) * sizeof(float));
      } else {
        for (std::int64_t i = 0; i < cols; ++i)
          for (std::int64_t c = 0; c < channels_; ++c)
            to[i * channels_ + c] = from[c * s[1] + i * s[3]];
      }
      float zero = 0.0f;  // x - x: zero for a number, NaN for an infinity or NaN
      for (std::int64_t i = 0; i < cols * channels_; ++i) zero += to[i] - to[i];
      finite = finite && zero == 0.0f;
    }
    return finite;
  }

  // The chunks' sums, added in chunk order, into the kernel gradient's view.
  void write_gradient(const RunContext& ctx, const float* sums, int chunks) const {
    const StridedView& v = spec_.weight_grad;
    float* dw = ctx.at<float>(v.value);
    const auto& s = v.strides;
    const auto& d = v.dims;  // [O, C, KH, KW]
    for (std::int64_t o = 0; o < d[0]; ++o) {
      std::int64_t t = 0;
      for (std::int64_t ky = 0; ky < d[2]; ++ky)
        for (std::int64_t kx = 0; kx < d[3]; ++kx)
          for (std::int64_t c = 0; c < d[1]; ++c, ++t) {
            float total = 0.0f;
            for (int p = 0; p < chunks; ++p) total += sums[p * weight_floats() + t * g_.outs + o];
            dw[o * s[0] + c * s[1] + ky * s[2] + kx * s[3]] = total;
          }
    }
  }

  ConvPoolSpec spec_;
  ConvPoolGeometry g_;
  std::int64_t images_ = 0, channels_ = 0, h_ = 0, w_ = 0, pad_t_ = 0, pad_l_ = 0;
  std::int64_t ph_ = 0, pw_ = 0;  // the padded image's rows and columns
  ImageFn image_ = by_vector_isa<ImageFn>(&isa_avx512::conv_pool_image, &isa_avx2::conv_pool_image,
                                          &isa_baseline::conv_pool_image);
  GradImageFn grad_image_ =
      by_vector_isa<GradImageFn>(&isa_avx512::conv_pool_grad_image, &isa_avx2::conv_pool_grad_image,
                                 &isa_baseline::conv_pool_grad_image);
  ExactGradImageFn exact_grad_image_ = by_vector_isa<ExactGradImageFn>(
      &isa_avx512::conv_pool_exact_grad_image, &isa_avx2::conv_pool_exact_grad_image,
      &isa_baseline::conv_pool_exact_grad_image);
};

}  // namespace

std::unique_ptr<CpuKernel> realise_conv_pool(const Kernel& kernel) {
  const auto& spec = std::get<ConvPoolSpec>(kernel.spec);
  if (!fits(spec)) return nullptr;
  return std::make_unique<ConvPoolKernel>(spec);
}

}  // namespace glia::detail::cpu
