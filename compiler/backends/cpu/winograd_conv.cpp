// glia's own Winograd F(2x2, 3x3) convolution for AVX2 machines, where oneDNN has no
// Winograd: forward (with its epilogue), input gradient and kernel gradient of a 3x3,
// unit-stride, ungrouped convolution over channels-last activations (the loops:
// winograd_tiles.hpp).
//
// The output is cut into 2x2 tiles, each reading a 4x4 input tile. A part of a run takes its
// tiles in blocks sized to stay in L2: per block, the 16 transformed positions of each tile
// (U, [16][tiles][C]), then at each position one matrix product with the transformed kernel
// ([16][C][K]) into M ([16][tiles][K]), then the output transform. The input gradient runs
// the adjoints backwards (A dY A', the product with the kernel transposed, B dU B' added into
// the zeroed input gradient; parts own whole images, whose tiles overlap); the kernel
// gradient sums U' (A dY A') over the tiles at each position, per part, then G' . G.
//
// Per 2x2 outputs it multiplies 16 times per channel pair where a direct sum does 36. On the
// MNIST CNN's second convolution (128 x 32 x 13 x 13 into 64 channels, 2 threads of a Zen 3)
// its passes took 4.4-5.0 ms each, against 6.2-6.9 ms (forward, input gradient) and
// 7.2-8.1 ms (kernel gradient) for oneDNN's direct AVX2 kernels in the same minutes.
#include <algorithm>
#include <cstring>

#include "backends/cpu/realise.hpp"
#include "backends/cpu/spin_team.hpp"
#include "backends/cpu/winograd_tiles.hpp"

namespace glia::detail::cpu {

namespace {

using Pass = ConvSpec::Pass;
using winograd::TileEpilogue;

// Less work than this stays on oneDNN, as its blocked layouts do (onednn_conv.cpp).
constexpr std::int64_t kMinWork = std::int64_t{1} << 25;  // multiply-adds
// A block's U and M together, in floats: 288 KB. On the MNIST CNN's second convolution
// (C + K = 96: 48 tiles a block) the three passes took 14.8-16.0 ms with it, against
// 16.2-16.5 ms at 30 tiles and 15.0-15.4 at 96 (2 threads of a Zen 3, noisy).
constexpr std::int64_t kBlockFloats = 72 * 1024;
// Floats between positions in U and M past the block's: a power of two there put the 16
// positions of a tile in one set of L1, whose misses took the three passes above from
// 14.0 to 15.9 ms.
constexpr std::int64_t kSkew = 16;

// Adds whose operands step by 0 or 1 along the channels, and relus.
bool epilogue_fits(const EpilogueSpec& e) {
  if (e.steps.size() > std::size_t{TileEpilogue::kMaxSteps}) return false;
  std::size_t next = 0;
  for (EpilogueSpec::Step s : e.steps) {
    if (s == EpilogueSpec::Step::relu) continue;
    if (s != EpilogueSpec::Step::add) return false;
    const auto& strides = e.operands[next++].strides;
    if (strides.size() != 4 || (strides[1] != 0 && strides[1] != 1)) return false;
  }
  return true;
}

// The epilogue's operands in a run.
TileEpilogue tile_epilogue(const EpilogueSpec& spec, const RunContext& ctx) {
  TileEpilogue e;
  std::size_t next = 0;
  for (EpilogueSpec::Step s : spec.steps) {
    const int i = e.steps++;
    if (s == EpilogueSpec::Step::relu) {
      e.step[i] = TileEpilogue::Step::relu;
      continue;
    }
    const EpilogueSpec::Operand& o = spec.operands[next++];
    e.step[i] = TileEpilogue::Step::add;
    e.base[i] = ctx.at<float>(o.value);
    std::copy(o.strides.begin(), o.strides.end(), e.strides[i]);
  }
  return e;
}

struct Geometry {
  std::int64_t n, c, k, h, w, p, q, pad_t, pad_l;
  std::int64_t th, tw;  // tiles down and across an image
  std::int64_t per_image() const { return th * tw; }
};

class WinogradKernel final : public CpuKernel {
 public:
  explicit WinogradKernel(const ConvSpec& spec) : spec_(spec), parts_(std::max(run_threads(), 1)) {
    const auto& s = spec.src.dims;
    const auto& d = spec.dst.dims;
    g_ = {s[0],
          s[1],
          d[1],
          s[2],
          s[3],
          d[2],
          d[3],
          spec.padding_low[0],
          spec.padding_low[1],
          (d[2] + 1) / 2,
          (d[3] + 1) / 2};
    // Whole 6-row blocks of the products (winograd::gemm).
    block_ = std::clamp<std::int64_t>(kBlockFloats / (16 * (g_.c + g_.k)) / 6 * 6, 6, 120);
    u_step_ = block_ * g_.c + kSkew;
    m_step_ = block_ * g_.k + kSkew;
  }

  std::size_t scratchpad_bytes() const override {
    return std::size_t(shared_floats() + parts_ * part_floats()) * sizeof(float);
  }
  bool uses_openmp() const override { return false; }
  std::string describe() const override {
    return cat("glia winograd F(2x2, 3x3), ", block_, "-tile blocks");
  }

  void run(RunContext& ctx) const override {
    auto* scratch = static_cast<float*>(ctx.scratchpad);
    const std::int64_t tiles = g_.n * g_.per_image();
    // Parts of whole images for the input gradient (its tiles overlap), else of tiles.
    const std::int64_t units = spec_.pass == Pass::backward_data ? g_.n : tiles;
    const int parts = static_cast<int>(std::min<std::int64_t>({run_threads(), parts_, units}));
    const std::int64_t unit = spec_.pass == Pass::backward_data ? g_.per_image() : 1;
    float* shared = scratch;
    float* own = scratch + shared_floats();
    if (spec_.pass != Pass::backward_weights) transform_weights(ctx, shared);
    TileEpilogue e = tile_epilogue(spec_.epilogue, ctx);
    run_parts(ctx.team, parts, [&](int part) {
      float* buf = own + part * part_floats();
      const std::int64_t begin = units * part / parts * unit,
                         end = units * (part + 1) / parts * unit;
      if (spec_.pass == Pass::forward)
        forward(ctx, shared, e, buf, begin, end);
      else if (spec_.pass == Pass::backward_data)
        backward_data(ctx, shared, buf, begin, end);
      else
        backward_weights(ctx, shared + part * kernel_floats(), buf, begin, end);
    });
    if (spec_.pass == Pass::backward_weights) write_weights_gradient(ctx, shared, parts);
  }

 private:
  // The transformed kernel, [16][C][K] or [16][K][C].
  std::int64_t kernel_floats() const { return 16 * g_.c * g_.k; }
  // Shared by the parts: the transformed kernel, or each part's kernel gradient sums.
  std::int64_t shared_floats() const {
    return kernel_floats() * (spec_.pass == Pass::backward_weights ? parts_ : 1);
  }
  // Per part: a row of zeros (input pixels outside the input), U and M.
  std::int64_t part_floats() const { return g_.c + 16 * (u_step_ + m_step_); }

  // The kernel at each position: [16][C][K] forward, [16][K][C] for the input gradient.
  void transform_weights(const RunContext& ctx, float* out) const {
    const float* w = ctx.at<float>(spec_.weights.value);
    const auto& s = spec_.weights.strides;  // [K, C, 3, 3]
    const bool forward = spec_.pass == Pass::forward;
    for (std::int64_t k = 0; k < g_.k; ++k)
      for (std::int64_t c = 0; c < g_.c; ++c)
        winograd::weight_tile(w + k * s[0] + c * s[1], s[2], s[3],
                              out + (forward ? c * g_.k + k : k * g_.c + c), g_.c * g_.k);
  }

  // Tile t's image, and its first output's row and column.
  struct Tile {
    std::int64_t n, y, x;
  };
  Tile tile(std::int64_t t) const {
    const std::int64_t r = t % g_.per_image();
    return {t / g_.per_image(), r / g_.tw * 2, r % g_.tw * 2};
  }

  // The 16 input pixels of a tile in a view [N, C, H, W] (channels at stride 1): each
  // pixel's first channel, or `outside` for those outside the input.
  template <class T>
  void input_pixels(T* base, const std::vector<std::int64_t>& s, const Tile& t, T* outside,
                    T** px) const {
    for (int i = 0; i < 16; ++i) {
      const std::int64_t iy = t.y - g_.pad_t + i / 4, ix = t.x - g_.pad_l + i % 4;
      px[i] = iy >= 0 && iy < g_.h && ix >= 0 && ix < g_.w
                  ? base + t.n * s[0] + iy * s[2] + ix * s[3]
                  : outside;
    }
  }
  // The 4 output pixels of a tile in the dst view, null past its edge.
  template <class T>
  void output_pixels(T* base, const Tile& t, T** px) const {
    const auto& s = spec_.dst.strides;
    for (int i = 0; i < 4; ++i) {
      const std::int64_t oy = t.y + i / 2, ox = t.x + i % 2;
      px[i] = oy < g_.p && ox < g_.q ? base + t.n * s[0] + oy * s[2] + ox * s[3] : nullptr;
    }
  }

  void forward(const RunContext& ctx, const float* w, const TileEpilogue& e, float* buf,
               std::int64_t begin, std::int64_t end) const {
    const float* x = ctx.at<float>(spec_.src.value);
    float* y = ctx.at<float>(spec_.dst.value);
    float* u = buf + g_.c;
    float* m = u + 16 * u_step_;
    for (std::int64_t t0 = begin; t0 < end; t0 += block_) {
      const std::int64_t nt = std::min(block_, end - t0);
      input_tiles(x, t0, nt, buf, u);
      for (int xi = 0; xi < 16; ++xi)
        winograd::gemm(nt, g_.k, g_.c, u + xi * u_step_, g_.c, 1, w + xi * g_.c * g_.k, g_.k,
                       m + xi * m_step_, g_.k, false);
      for (std::int64_t t = 0; t < nt; ++t) {
        const Tile at = tile(t0 + t);
        float* px[4];
        output_pixels<float>(y, at, px);
        winograd::output_tile(m + t * g_.k, m_step_, g_.k, px, e, at.n, at.y, at.x);
      }
    }
  }

  // The input transform for a block of tiles: U = B' X B. `zeros`: a part's row of
  // zeros (pixels outside the input), filled here.
  void input_tiles(const float* x, std::int64_t t0, std::int64_t nt, float* zeros, float* u) const {
    std::fill(zeros, zeros + g_.c, 0.0f);
    for (std::int64_t t = 0; t < nt; ++t) {
      const float* px[16];
      input_pixels<const float>(x, spec_.src.strides, tile(t0 + t), zeros, px);
      winograd::input_tile(px, g_.c, u + t * g_.c, u_step_);
    }
  }

  // The adjoint of the output transform for a block of tiles: M = A dY A'.
  void output_adjoints(const float* dy, std::int64_t t0, std::int64_t nt, float* m) const {
    for (std::int64_t t = 0; t < nt; ++t) {
      const float* px[4];
      output_pixels<const float>(dy, tile(t0 + t), px);
      winograd::output_adjoint(px, g_.k, m + t * g_.k, m_step_);
    }
  }

  void backward_data(const RunContext& ctx, const float* w, float* buf, std::int64_t begin,
                     std::int64_t end) const {
    float* dx = ctx.at<float>(spec_.src.value);
    const float* dy = ctx.at<float>(spec_.dst.value);
    const auto& s = spec_.src.strides;
    for (std::int64_t n = begin / g_.per_image(); n < end / g_.per_image(); ++n)
      for (std::int64_t iy = 0; iy < g_.h; ++iy)
        for (std::int64_t ix = 0; ix < g_.w; ++ix)
          std::fill_n(dx + n * s[0] + iy * s[2] + ix * s[3], g_.c, 0.0f);
    float* du = buf + g_.c;
    float* m = du + 16 * u_step_;
    for (std::int64_t t0 = begin; t0 < end; t0 += block_) {
      const std::int64_t nt = std::min(block_, end - t0);
      output_adjoints(dy, t0, nt, m);
      for (int xi = 0; xi < 16; ++xi)
        winograd::gemm(nt, g_.c, g_.k, m + xi * m_step_, g_.k, 1, w + xi * g_.k * g_.c, g_.c,
                       du + xi * u_step_, g_.c, false);
      for (std::int64_t t = 0; t < nt; ++t) {
        float* px[16];
        input_pixels<float>(dx, s, tile(t0 + t), nullptr, px);
        winograd::input_adjoint(du + t * g_.c, u_step_, g_.c, px);
      }
    }
  }

  // This part's sum over its tiles of U' M at each position, into dw [16][C][K].
  void backward_weights(const RunContext& ctx, float* dw, float* buf, std::int64_t begin,
                        std::int64_t end) const {
    const float* x = ctx.at<float>(spec_.src.value);
    const float* dy = ctx.at<float>(spec_.dst.value);
    std::fill_n(dw, kernel_floats(), 0.0f);
    float* u = buf + g_.c;
    float* m = u + 16 * u_step_;
    for (std::int64_t t0 = begin; t0 < end; t0 += block_) {
      const std::int64_t nt = std::min(block_, end - t0);
      input_tiles(x, t0, nt, buf, u);
      output_adjoints(dy, t0, nt, m);
      for (int xi = 0; xi < 16; ++xi)
        winograd::gemm(g_.c, g_.k, nt, u + xi * u_step_, 1, g_.c, m + xi * m_step_, g_.k,
                       dw + xi * g_.c * g_.k, g_.k, true);
    }
  }

  // The parts' sums added into the first, then G' . G into the kernel gradient's view.
  void write_weights_gradient(const RunContext& ctx, float* sums, int parts) const {
    const std::int64_t size = kernel_floats();
    for (int part = 1; part < parts; ++part)
      for (std::int64_t i = 0; i < size; ++i) sums[i] += sums[part * size + i];
    float* dw = ctx.at<float>(spec_.weights.value);
    const auto& s = spec_.weights.strides;
    for (std::int64_t k = 0; k < g_.k; ++k)
      for (std::int64_t c = 0; c < g_.c; ++c)
        winograd::weight_adjoint(sums + c * g_.k + k, g_.c * g_.k, dw + k * s[0] + c * s[1], s[2],
                                 s[3]);
  }

  ConvSpec spec_;
  int parts_;
  Geometry g_{};
  std::int64_t block_ = 0;
  std::int64_t u_step_ = 0, m_step_ = 0;  // between positions in U and M
};

}  // namespace

bool winograd_fits(const ConvSpec& p) {
  if (vector_isa() != VectorIsa::avx2 || p.dtype != DType::f32 || p.groups != 1 ||
      p.src.dims.size() != 4)
    return false;
  const auto& w = p.weights.dims;  // [K, C, 3, 3]
  if (w[2] != 3 || w[3] != 3 || w[0] % 8 != 0 || w[1] % 8 != 0) return false;
  for (std::size_t i = 0; i < 2; ++i)
    if (p.strides[i] != 1 || p.dilations[i] != 1) return false;
  if (p.src.strides[1] != 1 || p.dst.strides[1] != 1) return false;  // channels-last
  return epilogue_fits(p.epilogue) && p.multiply_adds() >= kMinWork;
}

std::unique_ptr<CpuKernel> realise_winograd(const ConvSpec& spec) {
  if (!winograd_fits(spec)) return nullptr;
  return std::make_unique<WinogradKernel>(spec);
}

}  // namespace glia::detail::cpu
