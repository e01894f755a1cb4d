// The zero-skipping data gradient of a convolution (zero_skip_conv.hpp). A run that may
// skip:
//  1. samples 16 output positions spread over the output gradient, every output channel
//     of each: at most kZeroSkipConvDensity of those elements may be nonzero;
//  2. packs the weights into the scratchpad as [output channel][tap][input channel],
//     checking them for infinities and NaN, each thread a share of the output channels;
//  3. splits the images between the threads: per image, output position by output
//     position, the position's nonzero output channels listed (compressed a vector at a
//     time) and each one's value x its weights added into the input positions of the
//     position's window (a padded copy of the image's input gradient, so that every
//     window lies inside), the window's sums in registers (taps in groups of 9, input
//     channels two vectors at a time on AVX-512, one on AVX2), then the image's input
//     gradient copied out (zero_skip_conv_loops.inc).
// Each element of the input gradient is summed by one thread, output positions and
// channels in order: the thread count never changes the bits.
#include "backends/cpu/zero_skip_conv.hpp"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <utility>
#include <vector>

#include "backends/cpu/spin_team.hpp"
#include "backends/cpu/zero_skip_common.hpp"

namespace glia::detail::cpu {

namespace {

// A data gradient's shape: ConvDims (x is the input gradient dx, written), the weights
// [K, C, KH, KW] at any strides (floats), the forward padding.
struct Geometry : ConvDims {
  std::int64_t kh = 0, kw = 0, pad_h = 0, pad_w = 0;
  std::int64_t w_k = 0, w_c = 0, w_i = 0, w_j = 0;
  // The input gradient summed padded: acc_h x acc_w positions of c floats, every output
  // position's window inside; tap t (row-major) at tap[t] floats from its window's start.
  std::int64_t acc_h = 0, acc_w = 0;
  const std::int64_t* tap = nullptr;
};

// Taps whose sums a pass holds in registers (a 3x3 kernel's).
constexpr int kTaps = 9;

// One output position's nonzero terms: where each one's weights start in the packed
// weights ([k][tap][c], floats), and the output gradient's value.
struct Terms {
  std::int32_t* row;
  float* value;
};

// A thread's tables: one output position's terms and an image's padded input gradient.
struct Scratch {
  Terms terms;
  float* acc;
};

// GCC lowers a vector type in the target of the function that declares it, so each ISA
// includes the loops in its own target region (as zero_skip_isa.inc does).
#pragma GCC push_options
#pragma GCC target("avx512f,avx512dq,avx512bw,avx512vl")
namespace isa_avx512 {
constexpr int kLanes = 16, kBlock = 2;
inline unsigned nonzero_lanes(const float* p) {
  return _mm512_cmp_ps_mask(_mm512_loadu_ps(p), _mm512_setzero_ps(), _CMP_NEQ_UQ);
}
// The lanes of `bits` as terms: rows first + lane x step, values v[lane], compressed to
// the front of a register (compressing to memory is microcoded on AMD's parts), a whole
// vector stored; how many.
inline int keep_lanes(unsigned bits, std::int32_t first, std::int32_t step, const float* v,
                      std::int32_t* rows, float* values) {
  const auto keep = __mmask16(bits);
  const __m512i lanes = _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
  const __m512i at = _mm512_add_epi32(_mm512_set1_epi32(first),
                                      _mm512_mullo_epi32(lanes, _mm512_set1_epi32(step)));
  _mm512_storeu_si512(rows, _mm512_maskz_compress_epi32(keep, at));
  _mm512_storeu_ps(values, _mm512_maskz_compress_ps(keep, _mm512_loadu_ps(v)));
  return __builtin_popcount(bits);
}
#include "backends/cpu/zero_skip_conv_loops.inc"
}  // namespace isa_avx512
#pragma GCC pop_options

#pragma GCC push_options
#pragma GCC target("avx2,fma")
namespace isa_avx2 {
constexpr int kLanes = 8, kBlock = 1;
inline unsigned nonzero_lanes(const float* p) {
  return unsigned(
      _mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(p), _mm256_setzero_ps(), _CMP_NEQ_UQ)));
}
// Every lane written, each over the last one kept: no branch on a lane.
inline int keep_lanes(unsigned bits, std::int32_t first, std::int32_t step, const float* v,
                      std::int32_t* rows, float* values) {
  int kept = 0;
  for (int l = 0; l < kLanes; ++l) {
    rows[kept] = first + l * step;
    values[kept] = v[l];
    kept += bits >> l & 1;
  }
  return kept;
}
#include "backends/cpu/zero_skip_conv_loops.inc"
}  // namespace isa_avx2
#pragma GCC pop_options

using ImagesFn = void (*)(const Geometry&, const float*, const float*, float*, std::int64_t,
                          std::int64_t, const Scratch&);

class ZeroSkipConv final : public ZeroSkipping {
 public:
  ZeroSkipConv(const ConvSpec& s, std::unique_ptr<CpuKernel> dense)
      : ZeroSkipping(std::move(dense)),
        dx_(s.src.value),
        weights_(s.weights.value),
        dy_(s.dst.value),
        dy_view_(s.dst) {
    const auto& w = s.weights;
    static_cast<ConvDims&>(g_) = ConvDims(s);
    g_.kh = w.dims[2], g_.kw = w.dims[3];
    g_.pad_h = s.padding_low[0], g_.pad_w = s.padding_low[1];
    g_.w_k = w.strides[0], g_.w_c = w.strides[1], g_.w_i = w.strides[2], g_.w_j = w.strides[3];
    g_.acc_h = g_.oh + g_.kh - 1, g_.acc_w = g_.ow + g_.kw - 1;
    for (std::int64_t i = 0; i < g_.kh; ++i)
      for (std::int64_t j = 0; j < g_.kw; ++j) taps_.push_back((i * g_.acc_w + j) * g_.c);
    g_.tap = taps_.data();
    images_ = by_vector_isa<ImagesFn>(&isa_avx512::images, &isa_avx2::images, nullptr);
    threads_ = std::clamp(run_threads(), 1, 256);
    // The terms have room for a vector more: keep_lanes writes whole ones.
    const auto terms = std::size_t(g_.k + isa_avx512::kLanes);
    packed_bytes_ = cache_aligned(sizeof(float) * std::size_t(g_.kh * g_.kw * g_.k * g_.c));
    values_at_ = cache_aligned(sizeof(std::int32_t) * terms);
    acc_at_ = values_at_ + cache_aligned(sizeof(float) * terms);
    own_bytes_ = acc_at_ + cache_aligned(sizeof(float) * std::size_t(g_.acc_h * g_.acc_w * g_.c));
  }

  std::string what() const override {
    return cat("glia zero-skipping data gradient where the output gradient is at most ",
               std::lround(kZeroSkipConvDensity * 100), "% nonzero");
  }
  std::size_t skipping_scratchpad_bytes() const override {
    return packed_bytes_ + std::size_t(threads_) * own_bytes_;
  }

 private:
  // Output channels k0..k1 of the weights into `packed` ([tap][k][c]); whether they are
  // all finite: where one is not, a zero of the output gradient times it is NaN, which
  // skipping it would lose.
  bool pack(const float* w, std::int64_t k0, std::int64_t k1, float* packed) const {
    bool finite = true;
    for (std::int64_t i = 0; i < g_.kh; ++i)
      for (std::int64_t j = 0; j < g_.kw; ++j)
        for (std::int64_t k = k0; k < k1; ++k) {
          const float* from = w + k * g_.w_k + i * g_.w_i + j * g_.w_j;
          float* to = packed + (k * g_.kh * g_.kw + i * g_.kw + j) * g_.c;
          for (std::int64_t c = 0; c < g_.c; ++c) {
            to[c] = from[c * g_.w_c];
            finite &= std::isfinite(to[c]);
          }
        }
    return finite;
  }

  bool skip_zeros(RunContext& ctx) const override {
    const auto* dy = ctx.at<const float>(dy_);
    if (!sampled_sparse(dy, dy_view_, kZeroSkipConvDensity)) return false;
    auto* scratch = static_cast<std::byte*>(ctx.scratchpad);
    auto* packed = reinterpret_cast<float*>(scratch);
    const auto* w = ctx.at<const float>(weights_);
    const int parts = std::min(run_threads(), threads_);
    bool finite[256];
    run_parts(ctx.team, parts, [&](std::int64_t p) {
      finite[p] = pack(w, g_.k * p / parts, g_.k * (p + 1) / parts, packed);
    });
    for (int p = 0; p < parts; ++p)
      if (!finite[p]) return false;
    float* dx = ctx.at<float>(dx_);
    const int splits = int(std::min<std::int64_t>(parts, g_.n));
    run_parts(ctx.team, splits, [&](std::int64_t p) {
      std::byte* own = scratch + packed_bytes_ + std::size_t(p) * own_bytes_;
      const Scratch tables{
          {reinterpret_cast<std::int32_t*>(own), reinterpret_cast<float*>(own + values_at_)},
          reinterpret_cast<float*>(own + acc_at_)};
      images_(g_, dy, packed, dx, g_.n * p / splits, g_.n * (p + 1) / splits, tables);
    });
    return true;
  }

  ValueId dx_ = 0, weights_ = 0, dy_ = 0;
  StridedView dy_view_;
  Geometry g_;
  std::vector<std::int64_t> taps_;  // Geometry::tap
  ImagesFn images_ = nullptr;
  int threads_ = 1;  // the most a run splits over
  // The scratchpad: the packed weights, then each thread's tables (own_bytes_ each: the
  // terms' rows, their values, the padded input gradient).
  std::size_t packed_bytes_ = 0, values_at_ = 0, acc_at_ = 0, own_bytes_ = 0;
};

}  // namespace

bool sampled_sparse(const float* dy, const StridedView& view, double density) {
  constexpr std::int64_t kSamples = 16;
  const auto& d = view.dims;
  const auto& s = view.strides;
  const std::int64_t positions = d[0] * d[2] * d[3];
  std::int64_t nonzero = 0;
  for (std::int64_t i = 0; i < kSamples; ++i) {
    const std::int64_t p = (2 * i + 1) * positions / (2 * kSamples);
    const std::int64_t image = p / (d[2] * d[3]), oy = p / d[3] % d[2], ox = p % d[3];
    const float* v = dy + image * s[0] + oy * s[2] + ox * s[3];
    for (std::int64_t k = 0; k < d[1]; ++k) nonzero += v[k * s[1]] != 0.0f;
  }
  return double(nonzero) <= density * double(kSamples * d[1]);
}

ConvDims::ConvDims(const ConvSpec& spec) {
  const auto& x = spec.src;
  const auto& y = spec.dst;
  n = x.dims[0], c = x.dims[1], h = x.dims[2], w = x.dims[3];
  k = y.dims[1], oh = y.dims[2], ow = y.dims[3];
  x_n = x.strides[0], x_h = x.strides[2], x_w = x.strides[3];
  dy_n = y.strides[0], dy_k = y.strides[1], dy_h = y.strides[2], dy_w = y.strides[3];
}

int zero_skip_conv_lanes() { return by_vector_isa(isa_avx512::kLanes, isa_avx2::kLanes, 0); }

bool zero_skip_conv_basics(const ConvSpec& s, ConvSpec::Pass pass) {
  const int lanes = zero_skip_conv_lanes();
  if (!zero_skip_enabled() || lanes == 0 || s.pass != pass || s.dtype != DType::f32 ||
      s.groups != 1 || s.src.dims.size() != 4)
    return false;
  for (std::size_t d = 0; d < 2; ++d)
    if (s.strides[d] != 1 || s.dilations[d] != 1) return false;
  return s.src.strides[1] == 1 && s.dst.strides[1] == 1 && s.src.dims[1] % lanes == 0 &&
         s.multiply_adds() >= (std::int64_t(1) << 21);
}

bool zero_skip_conv_fits(const ConvSpec& s) {
  if (!zero_skip_conv_basics(s, ConvSpec::Pass::backward_data)) return false;
  const std::int64_t c = s.src.dims[1], k = s.dst.dims[1];
  const std::int64_t taps = s.weights.dims[2] * s.weights.dims[3];
  return k % zero_skip_conv_lanes() == 0 && taps * k * c < (std::int64_t(1) << 31);
}

std::unique_ptr<CpuKernel> make_zero_skip_conv(const ConvSpec& spec,
                                               std::unique_ptr<CpuKernel> dense) {
  return std::make_unique<ZeroSkipConv>(spec, std::move(dense));
}

}  // namespace glia::detail::cpu
