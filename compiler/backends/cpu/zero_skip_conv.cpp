// The zero-skipping data gradient of a convolution (zero_skip_conv.hpp). A run that may
// skip:
//  1. samples 16 output positions spread over the output gradient, every output channel
//     of each: at most kZeroSkipConvDensity of those elements may be nonzero;
//  2. packs the weights into the scratchpad as [tap][output channel][input channel], each
//     term's input channels one contiguous row, checking them for infinities and NaN,
//     each thread a share of the output channels;
//  3. splits the input gradient's rows (image, y) between the threads: at each input
//     position, the nonzero terms of its taps (the output positions whose windows cover
//     it), listed tap by tap and output channel ascending as (row of packed weights,
//     value), then summed over the list in four sets of sums (term e into set e % 4: four
//     chains of multiply-adds, not one the list long), the sets added pairwise and stored
//     (zero_skip_conv_loops.inc).
// Each element of the input gradient is summed by one thread in list order: the thread
// count never changes the bits.
#include "backends/cpu/zero_skip_conv.hpp"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "backends/cpu/skip_count.hpp"
#include "backends/cpu/spin_team.hpp"

namespace glia::detail::cpu {

namespace {

// A data gradient's shape: dx [N, C, H, W] and dy [N, K, OH, OW], channels contiguous in
// both (the other strides in floats below), weights [K, C, KH, KW] at any strides.
struct Geometry {
  std::int64_t n = 0, c = 0, h = 0, w = 0, k = 0, oh = 0, ow = 0, kh = 0, kw = 0;
  std::int64_t pad_h = 0, pad_w = 0;
  std::int64_t dx_n = 0, dx_h = 0, dx_w = 0, dy_n = 0, dy_h = 0, dy_w = 0;
  std::int64_t w_k = 0, w_c = 0, w_i = 0, w_j = 0;
};

// One input position's nonzero terms: where each term's row starts in the packed weights
// (floats), and the output gradient's value.
struct Terms {
  std::int32_t* row;
  float* value;
};

// A thread's tables: two of one position's terms (`terms`, `spare`), the nonzero output
// channels of each output position of an image (`image`, `slots` entries a position,
// their rows within a tap) and their counts.
struct Scratch {
  Terms terms, spare, image;
  std::int32_t* counts;
  std::int64_t slots;
};

// GCC lowers a vector type in the target of the function that declares it, so each ISA
// includes the loops in its own target region (as zero_skip_isa.inc does).
#pragma GCC push_options
#pragma GCC target("avx512f,avx512dq,avx512bw,avx512vl")
namespace isa_avx512 {
constexpr int kLanes = 16;
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
constexpr int kLanes = 8;
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

using RowsFn = void (*)(const Geometry&, const float*, const float*, float*, std::int64_t,
                        std::int64_t, const Scratch&);

// The floats of a vector of the ISA that vector_isa() picks; 0: none these loops take.
int vector_lanes() { return by_vector_isa(isa_avx512::kLanes, isa_avx2::kLanes, 0); }

constexpr std::size_t kAlign = 64;
std::size_t aligned(std::size_t bytes) { return (bytes + kAlign - 1) / kAlign * kAlign; }

class ZeroSkipConv final : public CpuKernel {
 public:
  ZeroSkipConv(const ConvSpec& s, std::unique_ptr<CpuKernel> dense)
      : dense_(std::move(dense)),
        dx_(s.src.value),
        weights_(s.weights.value),
        dy_(s.dst.value),
        dy_view_(s.dst) {
    const auto& x = s.src;
    const auto& y = s.dst;
    const auto& w = s.weights;
    g_.n = x.dims[0], g_.c = x.dims[1], g_.h = x.dims[2], g_.w = x.dims[3];
    g_.k = y.dims[1], g_.oh = y.dims[2], g_.ow = y.dims[3];
    g_.kh = w.dims[2], g_.kw = w.dims[3];
    g_.pad_h = s.padding_low[0], g_.pad_w = s.padding_low[1];
    g_.dx_n = x.strides[0], g_.dx_h = x.strides[2], g_.dx_w = x.strides[3];
    g_.dy_n = y.strides[0], g_.dy_h = y.strides[2], g_.dy_w = y.strides[3];
    g_.w_k = w.strides[0], g_.w_c = w.strides[1], g_.w_i = w.strides[2], g_.w_j = w.strides[3];
    rows_ = by_vector_isa<RowsFn>(&isa_avx512::rows, &isa_avx2::rows, nullptr);
    threads_ = std::clamp(run_threads(), 1, 256);
    // Room for a vector more than the entries: keep_lanes and list_terms write whole ones.
    slots_ = g_.k + isa_avx512::kLanes;
    const auto terms = std::size_t(g_.kh * g_.kw * g_.k + isa_avx512::kLanes);
    const auto image = std::size_t(g_.oh * g_.ow * slots_);
    packed_bytes_ = aligned(sizeof(float) * std::size_t(g_.kh * g_.kw * g_.k * g_.c));
    std::size_t at = 0;
    auto add = [&](std::size_t& offset, std::size_t entries) {  // 4 bytes each
      offset = at;
      at += aligned(4 * entries);
    };
    for (std::size_t& t : terms_at_) add(t, terms);  // rows, values; the spare's
    for (std::size_t& t : image_at_) add(t, image);
    add(counts_at_, std::size_t(g_.oh * g_.ow));
    own_bytes_ = at;
  }

  void run(RunContext& ctx) const override {
    count_.run([&] { return skip_zeros(ctx); }, [&] { dense_->run(ctx); });
  }

  std::string describe() const override {
    return cat("glia zero-skipping data gradient where the output gradient is at most ",
               std::lround(kZeroSkipConvDensity * 100), "% nonzero ", count_.text(), ", else ",
               dense_->describe());
  }
  std::size_t scratchpad_bytes() const override {
    return std::max(packed_bytes_ + std::size_t(threads_) * own_bytes_, dense_->scratchpad_bytes());
  }
  std::unique_ptr<KernelState> make_state() const override { return dense_->make_state(); }
  bool uses_openmp() const override { return dense_->uses_openmp(); }

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
          float* to = packed + ((i * g_.kw + j) * g_.k + k) * g_.c;
          for (std::int64_t c = 0; c < g_.c; ++c) {
            to[c] = from[c * g_.w_c];
            finite &= std::isfinite(to[c]);
          }
        }
    return finite;
  }

  bool skip_zeros(RunContext& ctx) const {
    const auto* dy = ctx.at<const float>(dy_);
    if (!sampled_sparse(dy, dy_view_)) return false;
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
    const std::int64_t rows = g_.n * g_.h;
    run_parts(ctx.team, parts, [&](std::int64_t p) {
      rows_(g_, dy, packed, dx, rows * p / parts, rows * (p + 1) / parts,
            own_tables(scratch + packed_bytes_ + std::size_t(p) * own_bytes_));
    });
    return true;
  }

  // A thread's tables, from `own` on.
  Scratch own_tables(std::byte* own) const {
    auto ints = [&](std::size_t at) { return reinterpret_cast<std::int32_t*>(own + at); };
    auto floats = [&](std::size_t at) { return reinterpret_cast<float*>(own + at); };
    return {{ints(terms_at_[0]), floats(terms_at_[1])},
            {ints(terms_at_[2]), floats(terms_at_[3])},
            {ints(image_at_[0]), floats(image_at_[1])},
            ints(counts_at_),
            slots_};
  }

  std::unique_ptr<CpuKernel> dense_;
  ValueId dx_ = 0, weights_ = 0, dy_ = 0;
  StridedView dy_view_;
  Geometry g_;
  RowsFn rows_ = nullptr;
  int threads_ = 1;  // the most a run splits over
  std::int64_t slots_ = 0;
  // The scratchpad: the packed weights, then each thread's tables (own_bytes_ each, at
  // these offsets in them).
  std::size_t packed_bytes_ = 0, own_bytes_ = 0;
  std::size_t terms_at_[4] = {}, image_at_[2] = {}, counts_at_ = 0;
  SkipCount count_;
};

}  // namespace

bool sampled_sparse(const float* dy, const StridedView& view) {
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
  return double(nonzero) <= kZeroSkipConvDensity * double(kSamples * d[1]);
}

bool zero_skip_conv_fits(const ConvSpec& s) {
  if (const char* e = std::getenv("GLIA_CPU_ZERO_SKIP"); e != nullptr && std::strcmp(e, "0") == 0)
    return false;
  const int lanes = vector_lanes();
  if (lanes == 0 || s.pass != ConvSpec::Pass::backward_data || s.dtype != DType::f32 ||
      s.groups != 1 || s.src.dims.size() != 4)
    return false;
  for (std::size_t d = 0; d < 2; ++d)
    if (s.strides[d] != 1 || s.dilations[d] != 1) return false;
  const std::int64_t c = s.src.dims[1], k = s.dst.dims[1];
  const std::int64_t taps = s.weights.dims[2] * s.weights.dims[3];
  return s.src.strides[1] == 1 && s.dst.strides[1] == 1 && c % lanes == 0 && c / lanes >= 1 &&
         c / lanes <= 4 && k % lanes == 0 && taps * k * c < (std::int64_t(1) << 31) &&
         s.multiply_adds() >= (std::int64_t(1) << 21);
}

std::unique_ptr<CpuKernel> make_zero_skip_conv(const ConvSpec& spec,
                                               std::unique_ptr<CpuKernel> dense) {
  return std::make_unique<ZeroSkipConv>(spec, std::move(dense));
}

}  // namespace glia::detail::cpu
