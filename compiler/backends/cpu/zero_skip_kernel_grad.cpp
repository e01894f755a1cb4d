// The zero-skipping kernel gradient of a 3x3 convolution (zero_skip_conv.hpp). A run that
// may skip:
//  1. samples the output gradient as the data gradient does: at most
//     kZeroSkipKernelGradDensity of the sampled elements nonzero;
//  2. checks the input for infinities and NaN (a zero of the output gradient times one is
//     NaN, which skipping it would lose), each thread a share of the images;
//  3. splits the output channels between the threads: each thread, image by image, lists
//     the output gradient of its channels as a column of positions each (blocks of
//     positions x channels transposed in registers), each column's nonzero positions
//     (compressed a vector at a time); then adds value x the input's window
//     there (the taps inside the image) into the channel's sums ([tap][input channel], two vectors
//     of input channels at a time in registers on AVX-512, one on AVX2), and at the end writes its
//     channels' sums into the kernel gradient.
// Each element of the kernel gradient is summed by one thread, images and positions in
// order: any thread count gives the same bits.
#include <immintrin.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "backends/cpu/spin_team.hpp"
#include "backends/cpu/transpose_blocks.hpp"
#include "backends/cpu/zero_skip_common.hpp"
#include "backends/cpu/zero_skip_conv.hpp"

namespace glia::detail::cpu {

namespace {

constexpr int kTaps = 9;  // 3x3 kernels only: the sums of a block of channels in registers

// A kernel gradient's shape: ConvDims, the kernel gradient [K, C, 3, 3] written through
// its own strides.
struct Geometry : ConvDims {
  std::int64_t tap[kTaps] = {};  // each tap's offset in x from its window's start
  // Per output position p (oy x OW + ox): where its window starts in an image's x
  // (floats; before it where the window hangs over the top or left edge) and which of its
  // taps lie inside x (bit t).
  const std::int64_t* start = nullptr;
  const std::uint32_t* inside = nullptr;
};

// One image's output gradient of a range of output channels, then their nonzero ones:
// channel c's output gradient at c x padded on of `columns` (positions in order, zeros
// past the last to a whole number of vectors); its nonzero positions and values at
// c x slots on of `position` and `value`, how many in count[c].
struct Lists {
  float* columns;
  std::int64_t padded;
  std::int32_t* position;
  float* value;
  std::int32_t* count;
  std::int64_t slots;
};

#pragma GCC push_options
#pragma GCC target("avx512f,avx512dq,avx512bw,avx512vl")
namespace isa_avx512 {
constexpr int kLanes = 16, kBlock = 2;
// The nonzero values of v[0, kLanes) (NaN included) listed as positions first + l and
// values, compressed to the front of a register (compressing to memory is microcoded on
// AMD's parts), whole vectors stored; how many.
inline int keep_nonzero(const float* v, std::int32_t first, std::int32_t* positions,
                        float* values) {
  const __m512 x = _mm512_loadu_ps(v);
  const __mmask16 keep = _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_NEQ_UQ);
  const __m512i lane = _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
  _mm512_storeu_si512(positions, _mm512_maskz_compress_epi32(
                                     keep, _mm512_add_epi32(_mm512_set1_epi32(first), lane)));
  _mm512_storeu_ps(values, _mm512_maskz_compress_ps(keep, x));
  return __builtin_popcount(keep);
}
inline void transpose(const float* a, std::int64_t lda, float* out, std::int64_t ldo) {
  transpose16(a, lda, out, ldo);
}
#include "backends/cpu/zero_skip_kernel_grad_loops.inc"
}  // namespace isa_avx512
#pragma GCC pop_options

#pragma GCC push_options
#pragma GCC target("avx2,fma")
namespace isa_avx2 {
constexpr int kLanes = 8, kBlock = 1;
// As on AVX-512; every lane written, each over the last one kept: no branch on a lane.
inline int keep_nonzero(const float* v, std::int32_t first, std::int32_t* positions,
                        float* values) {
  const auto bits = unsigned(
      _mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(v), _mm256_setzero_ps(), _CMP_NEQ_UQ)));
  int kept = 0;
  for (int l = 0; l < kLanes; ++l) {
    positions[kept] = first + l;
    values[kept] = v[l];
    kept += bits >> l & 1;
  }
  return kept;
}
inline void transpose(const float* a, std::int64_t lda, float* out, std::int64_t ldo) {
  transpose8(a, lda, out, ldo);
}
#include "backends/cpu/zero_skip_kernel_grad_loops.inc"
}  // namespace isa_avx2
#pragma GCC pop_options

using ListFn = void (*)(const Geometry&, const float*, std::int64_t, std::int64_t, const Lists&);
using ChannelFn = void (*)(const Geometry&, const float*, const std::int32_t*, const float*,
                           std::int64_t, float*);

// Whether a float is an infinity or NaN, by its exponent bits (a loop of these vectorises).
inline std::uint32_t not_finite(float v) {
  std::uint32_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  return std::uint32_t((bits & 0x7f800000u) == 0x7f800000u);
}

class ZeroSkipKernelGrad final : public ZeroSkipping {
 public:
  ZeroSkipKernelGrad(const ConvSpec& s, std::unique_ptr<CpuKernel> dense)
      : ZeroSkipping(std::move(dense)),
        x_(s.src.value),
        dw_(s.weights.value),
        dy_(s.dst.value),
        dy_view_(s.dst) {
    static_cast<ConvDims&>(g_) = ConvDims(s);
    dw_strides_ = s.weights.strides;
    for (int t = 0; t < kTaps; ++t) g_.tap[t] = (t / 3) * g_.x_h + (t % 3) * g_.x_w;
    // Each output position's window: its start and the taps inside the image.
    for (std::int64_t oy = 0; oy < g_.oh; ++oy)
      for (std::int64_t ox = 0; ox < g_.ow; ++ox) {
        const std::int64_t y0 = oy - s.padding_low[0], x0 = ox - s.padding_low[1];
        std::uint32_t inside = 0;
        for (int t = 0; t < kTaps; ++t) {
          const std::int64_t yy = y0 + t / 3, xx = x0 + t % 3;
          if (yy >= 0 && yy < g_.h && xx >= 0 && xx < g_.w) inside |= 1u << t;
        }
        start_.push_back(y0 * g_.x_h + x0 * g_.x_w);
        inside_.push_back(inside);
      }
    g_.start = start_.data();
    g_.inside = inside_.data();
    list_ = by_vector_isa<ListFn>(&isa_avx512::list_image, &isa_avx2::list_image, nullptr);
    channel_ = by_vector_isa<ChannelFn>(&isa_avx512::channel, &isa_avx2::channel, nullptr);
    threads_ = std::clamp(run_threads(), 1, 256);
    const auto positions = std::size_t(g_.oh * g_.ow);
    // A run on fewer threads than the program's gives each more channels: room for all.
    const auto most_channels = std::size_t(g_.k);
    // Each channel's column of positions padded to whole vectors, and its list room for a
    // vector more: keep_nonzero stores whole ones.
    padded_ = (std::int64_t(positions) + isa_avx512::kLanes - 1) / isa_avx512::kLanes *
              isa_avx512::kLanes;
    slots_ = std::int64_t(positions) + isa_avx512::kLanes;
    std::size_t at =
        cache_aligned(sizeof(float) * most_channels * kTaps * std::size_t(g_.c));  // sums
    auto add = [&](std::size_t& offset, std::size_t entries) {                     // 4 bytes each
      offset = at;
      at += cache_aligned(4 * entries);
    };
    add(columns_at_, most_channels * std::size_t(padded_));
    for (std::size_t& l : lists_at_) add(l, most_channels * std::size_t(slots_));
    add(count_at_, most_channels);
    own_bytes_ = at;
  }

  std::string what() const override {
    return cat("glia zero-skipping kernel gradient where the output gradient is at most ",
               std::lround(kZeroSkipKernelGradDensity * 100), "% nonzero");
  }
  std::size_t skipping_scratchpad_bytes() const override {
    return std::size_t(threads_) * own_bytes_;
  }

 private:
  // Whether images n0..n1 of x are all finite.
  bool finite(const float* x, std::int64_t n0, std::int64_t n1) const {
    std::uint32_t bad = 0;
    for (std::int64_t n = n0; n < n1; ++n)
      for (std::int64_t y = 0; y < g_.h; ++y)
        for (std::int64_t xx = 0; xx < g_.w; ++xx) {
          const float* v = x + n * g_.x_n + y * g_.x_h + xx * g_.x_w;
          for (std::int64_t c = 0; c < g_.c; ++c) bad |= not_finite(v[c]);
        }
    return bad == 0;
  }

  // Output channels k0..k1: their sums over every image, then written into dw.
  void channels(const float* x, const float* dy, std::int64_t k0, std::int64_t k1, std::byte* own,
                float* dw) const {
    auto* sums = reinterpret_cast<float*>(own);
    auto ints = [&](std::size_t at) { return reinterpret_cast<std::int32_t*>(own + at); };
    auto floats = [&](std::size_t at) { return reinterpret_cast<float*>(own + at); };
    const Lists lists{floats(columns_at_),  padded_,         ints(lists_at_[0]),
                      floats(lists_at_[1]), ints(count_at_), slots_};
    const std::int64_t per_channel = kTaps * g_.c;
    std::fill(sums, sums + (k1 - k0) * per_channel, 0.0f);
    for (std::int64_t k = 0; k < k1 - k0; ++k)  // the columns' padding stays zero
      std::fill(lists.columns + k * padded_ + g_.oh * g_.ow, lists.columns + (k + 1) * padded_,
                0.0f);
    for (std::int64_t n = 0; n < g_.n; ++n) {
      list_(g_, dy + n * g_.dy_n, k0, k1, lists);
      for (std::int64_t k = 0; k < k1 - k0; ++k)
        channel_(g_, x + n * g_.x_n, lists.position + k * slots_, lists.value + k * slots_,
                 lists.count[k], sums + k * per_channel);
    }
    for (std::int64_t k = k0; k < k1; ++k)
      for (int t = 0; t < kTaps; ++t)
        for (std::int64_t c = 0; c < g_.c; ++c)
          dw[k * dw_strides_[0] + c * dw_strides_[1] + (t / 3) * dw_strides_[2] +
             (t % 3) * dw_strides_[3]] = sums[(k - k0) * per_channel + t * g_.c + c];
  }

  bool skip_zeros(RunContext& ctx) const override {
    const auto* dy = ctx.at<const float>(dy_);
    if (!sampled_sparse(dy, dy_view_, kZeroSkipKernelGradDensity)) return false;
    const auto* x = ctx.at<const float>(x_);
    const int parts = std::min(run_threads(), threads_);
    bool ok[256];
    run_parts(ctx.team, parts,
              [&](std::int64_t p) { ok[p] = finite(x, g_.n * p / parts, g_.n * (p + 1) / parts); });
    for (int p = 0; p < parts; ++p)
      if (!ok[p]) return false;
    auto* scratch = static_cast<std::byte*>(ctx.scratchpad);
    float* dw = ctx.at<float>(dw_);
    const int splits = int(std::min<std::int64_t>(parts, g_.k));
    run_parts(ctx.team, splits, [&](std::int64_t p) {
      channels(x, dy, g_.k * p / splits, g_.k * (p + 1) / splits,
               scratch + std::size_t(p) * own_bytes_, dw);
    });
    return true;
  }

  ValueId x_ = 0, dw_ = 0, dy_ = 0;
  StridedView dy_view_;
  Geometry g_;
  std::vector<std::int64_t> dw_strides_;
  // Geometry::start and inside.
  std::vector<std::int64_t> start_;
  std::vector<std::uint32_t> inside_;
  ListFn list_ = nullptr;
  ChannelFn channel_ = nullptr;
  int threads_ = 1;  // the most a run splits over
  // The scratchpad: each thread's own_bytes_, its channels' sums and one channel's terms.
  // The scratchpad: each thread's own_bytes_, its channels' sums, then its Lists.
  std::int64_t padded_ = 0, slots_ = 0;
  std::size_t columns_at_ = 0, lists_at_[2] = {}, count_at_ = 0, own_bytes_ = 0;
};

}  // namespace

bool zero_skip_kernel_grad_fits(const ConvSpec& s) {
  return zero_skip_conv_basics(s, ConvSpec::Pass::backward_weights) && s.weights.dims[2] == 3 &&
         s.weights.dims[3] == 3 && s.dst.dims[2] * s.dst.dims[3] < (std::int64_t(1) << 31);
}

std::unique_ptr<CpuKernel> make_zero_skip_kernel_grad(const ConvSpec& spec,
                                                      std::unique_ptr<CpuKernel> dense) {
  return std::make_unique<ZeroSkipKernelGrad>(spec, std::move(dense));
}

}  // namespace glia::detail::cpu
