// ConvSpecs on oneDNN: one primitive per kernel (forward with post-ops for the epilogue,
// backward_data, backward_weights) over the spec's strided views. Where oneDNN prefers a
// blocked layout for an operand (the weights of direct convolutions, every operand of
// Winograd ones and of large direct ones on AVX2), the kernel reorders it through its
// scratchpad around each run. glia's own Winograd (winograd_conv.cpp) takes the 3x3,
// unit-stride, channels-last convolutions of AVX2 machines first, where oneDNN has none.
#include <algorithm>
#include <array>
#include <optional>
#include <unordered_map>

#include "backends/cpu/onednn_util.hpp"
#include "backends/cpu/zero_skip_conv.hpp"

namespace glia::detail::cpu {

namespace {

using dims_t = dnnl::memory::dims;
using Pass = ConvSpec::Pass;

dims_t minus_one(const std::vector<std::int64_t>& v) {
  dims_t d;
  for (std::int64_t x : v) d.push_back(x - 1);
  return d;
}

// Winograd F(4x4, 3x3) (oneDNN's jit_wino_4x3, AVX-512 machines) multiplies about 4x less
// than a direct 3x3 convolution. On the MNIST CNN's second convolution (a batch of
// 128 x 32 x 13 x 13 into 64 channels) it ran forward in 1.34 ms against 2.54 ms direct,
// and the weights' gradient in 1.30 ms against 2.66 ms, on 2 threads of a Zen 4 machine;
// the data gradient only 2.38 against 2.55 ms, so that pass stays direct. Its operands are
// blocked (16 channels), reordered in and out at ~0.05 ms each on that batch: convolutions
// of less work than this keep the direct algorithm, as do those where its channels are not
// multiples of 16 (a first layer's single channel ran 7x slower).
constexpr std::int64_t kWinogradWork = std::int64_t{1} << 25;  // multiply-adds

// An epilogue Winograd can take: a per-channel bias first (its bias argument; it has no
// binary post-ops), then activations only.
bool bias_then_activations(const EpilogueSpec& e) {
  for (std::size_t k = 0; k < e.steps.size(); ++k) {
    if (e.steps[k] != EpilogueSpec::Step::add) continue;
    if (k != 0) return false;
    const auto& s = e.operands[0].strides;
    for (std::size_t d = 0; d < s.size(); ++d)
      if (s[d] != (d == 1 ? 1 : 0)) return false;
  }
  return true;
}

// Direct convolutions on AVX2 with enough work and channels in multiples of its 8-channel
// blocks take their activations in oneDNN's blocked layout (nChw8c), reordered in and out:
// on the MNIST CNN's second convolution (128 x 32 x 13 x 13 into 64 channels, 2 threads
// of a Zen 3) the kernel gradient ran 7.3-7.5 ms against 9.5 ms on the graph's
// channels-last layout, the forward pass 6.3-6.6 against 7.1 ms, the data gradient
// 6.0-6.5 against 6.4 ms, reorders included. A first layer's single channel ran 2-5x
// slower blocked; AVX-512 machines (Winograd, and 16-channel blocks) were not measured.
bool blocked_fits(const ConvSpec& p) {
  return vector_isa() == VectorIsa::avx2 && p.groups == 1 && p.weights.dims[1] % 8 == 0 &&
         p.multiply_adds() >= kWinogradWork;
}

bool winograd_fits(const ConvSpec& p) {
  if (p.pass == Pass::backward_data || p.groups != 1 || p.src.dims.size() != 4) return false;
  const auto& w = p.weights.dims;  // [out, in, 3, 3]
  if (w[2] != 3 || w[3] != 3 || w[0] % 16 != 0 || w[1] % 16 != 0) return false;
  for (std::size_t i = 0; i < 2; ++i)
    if (p.strides[i] != 1 || p.dilations[i] != 1) return false;
  if (!bias_then_activations(p.epilogue)) return false;
  return p.multiply_adds() >= kWinogradWork;
}

bool leads_with_bias(const EpilogueSpec& e) {
  return !e.steps.empty() && e.steps[0] == EpilogueSpec::Step::add;
}

EpilogueSpec without_bias(EpilogueSpec e) {
  e.steps.erase(e.steps.begin());
  e.operands.erase(e.operands.begin());
  return e;
}

class ConvKernel final : public CpuKernel {
 public:
  ConvKernel(const ConvSpec& p, const dnnl::engine& engine)
      : pass_(p.pass),
        engine_(engine),
        written_(p.pass == Pass::forward         ? kDst
                 : p.pass == Pass::backward_data ? kSrc
                                                 : kWeights) {
    operands_[kSrc] = {p.src.value, f32_desc(p.src, false)};
    operands_[kWeights] = {p.weights.value, f32_desc(p.weights, false)};
    operands_[kDst] = {p.dst.value, f32_desc(p.dst, false)};
  }

  // False when oneDNN has no implementation for these descriptors.
  bool build(const ConvSpec& p) {
    if (winograd_fits(p)) try {
        if (build(p, dnnl::algorithm::convolution_winograd, true)) return true;
      } catch (const dnnl::error&) {
        // not on this machine: the direct algorithm below
      }
    if (blocked_fits(p)) try {
        if (build(p, dnnl::algorithm::convolution_direct, true)) return true;
      } catch (const dnnl::error&) {
        // a post-op the blocked layout does not take: the graph's layout below
      }
    return build(p, dnnl::algorithm::convolution_direct, false);
  }

  void run(RunContext& ctx) const override {
    auto* scratch = static_cast<std::byte*>(ctx.scratchpad);
    std::array<dnnl::memory, 3> user, used;
    for (int r = 0; r < 3; ++r) {
      const Operand& o = operands_[r];
      user[r] = dnnl::memory(o.desc, engine_, ctx.at(o.value));
      used[r] = user[r];
      if (!o.reorder) continue;
      used[r] = dnnl::memory(o.chosen, engine_, scratch + o.offset);
      if (r != written_) o.reorder.execute(ctx.stream, user[r], used[r]);
    }
    std::unordered_map<int, dnnl::memory> args;
    if (pass_ == Pass::forward)
      args = {{DNNL_ARG_SRC, used[kSrc]},
              {DNNL_ARG_WEIGHTS, used[kWeights]},
              {DNNL_ARG_DST, used[kDst]}};
    else if (pass_ == Pass::backward_data)
      args = {{DNNL_ARG_DIFF_SRC, used[kSrc]},
              {DNNL_ARG_WEIGHTS, used[kWeights]},
              {DNNL_ARG_DIFF_DST, used[kDst]}};
    else
      args = {{DNNL_ARG_SRC, used[kSrc]},
              {DNNL_ARG_DIFF_WEIGHTS, used[kWeights]},
              {DNNL_ARG_DIFF_DST, used[kDst]}};
    if (scratch_desc_.get_size() > 0)
      args.emplace(DNNL_ARG_SCRATCHPAD, dnnl::memory(scratch_desc_, engine_, scratch));
    if (bias_)
      args.emplace(DNNL_ARG_BIAS, dnnl::memory(bias_->desc, engine_, ctx.at(bias_->value)));
    for (const auto& op : post_.operands)
      args.emplace(op.arg, dnnl::memory(op.desc, engine_, ctx.at(op.value)));
    primitive_.execute(ctx.stream, args);
    if (operands_[written_].reorder)
      operands_[written_].reorder.execute(ctx.stream, used[written_], user[written_]);
    ctx.stream.wait();
  }

  std::string describe() const override {
    std::string staged;
    for (int r : {kSrc, kWeights, kDst})
      if (operands_[r].reorder) staged += cat(staged.empty() ? "" : ", ", kRoleNames[r]);
    return cat("onednn (", impl_, staged.empty() ? "" : cat(", ", staged, " reordered"), ")");
  }
  std::size_t scratchpad_bytes() const override { return scratchpad_bytes_; }

 private:
  enum Role { kSrc, kWeights, kDst };
  static constexpr const char* kRoleNames[] = {"src", "weights", "dst"};
  struct Operand {
    ValueId value = 0;
    dnnl::memory::desc desc;    // the graph's layout
    dnnl::memory::desc chosen;  // oneDNN's, where it differs
    dnnl::reorder reorder;      // graph -> chosen before the run, or back after for the written
    std::size_t offset = 0;     // of `chosen` in the scratchpad
  };
  struct Bias {
    ValueId value = 0;
    dnnl::memory::desc desc;
  };

  // `blocked`: the activations in the layout oneDNN chooses (Winograd's, or a large
  // direct convolution's on AVX2), else as the graph has them.
  bool build(const ConvSpec& p, dnnl::algorithm algorithm, bool blocked) {
    using dnnl::prop_kind;
    const bool winograd = algorithm == dnnl::algorithm::convolution_winograd;
    auto any = [](const dnnl::memory::desc& d) {
      return dnnl::memory::desc(d.dims(), dnnl::memory::data_type::f32,
                                dnnl::memory::format_tag::any);
    };
    const dnnl::memory::desc src = blocked ? any(operands_[kSrc].desc) : operands_[kSrc].desc;
    const dnnl::memory::desc dst = blocked ? any(operands_[kDst].desc) : operands_[kDst].desc;
    const dnnl::memory::desc weights = any(operands_[kWeights].desc);
    const dims_t dilates = minus_one(p.dilations);
    const bool bias = winograd && p.pass == Pass::forward && leads_with_bias(p.epilogue);
    post_ = post_ops(bias ? without_bias(p.epilogue) : p.epilogue, p.dst.dims);
    bias_.reset();
    if (bias)
      bias_ = Bias{
          p.epilogue.operands[0].value,
          f32_desc(std::vector<std::int64_t>{p.weights.dims[0]}, std::vector<std::int64_t>{1})};
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    attr.set_post_ops(post_.ops);
    auto fwd = bias ? dnnl::convolution_forward::desc(prop_kind::forward_training, algorithm, src,
                                                      weights, bias_->desc, dst, p.strides, dilates,
                                                      p.padding_low, p.padding_high)
                    : dnnl::convolution_forward::desc(prop_kind::forward_training, algorithm, src,
                                                      weights, dst, p.strides, dilates,
                                                      p.padding_low, p.padding_high);
    dnnl::convolution_forward::primitive_desc fwd_pd(fwd, attr, engine_, true);
    if (!fwd_pd) return false;
    dnnl::primitive_attr plain;
    plain.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    std::array<dnnl::memory::desc, 3> chosen;
    dnnl::memory::desc scratch;
    if (pass_ == Pass::forward) {
      chosen = {fwd_pd.src_desc(), fwd_pd.weights_desc(), fwd_pd.dst_desc()};
      scratch = fwd_pd.scratchpad_desc();
      impl_ = fwd_pd.impl_info_str();
      primitive_ = dnnl::convolution_forward(fwd_pd);
    } else if (pass_ == Pass::backward_data) {
      dnnl::convolution_backward_data::primitive_desc pd(
          {algorithm, src, weights, dst, p.strides, dilates, p.padding_low, p.padding_high}, plain,
          engine_, fwd_pd, true);
      if (!pd) return false;
      chosen = {pd.diff_src_desc(), pd.weights_desc(), pd.diff_dst_desc()};
      scratch = pd.scratchpad_desc();
      impl_ = pd.impl_info_str();
      primitive_ = dnnl::convolution_backward_data(pd);
    } else {
      dnnl::convolution_backward_weights::primitive_desc pd(
          {algorithm, src, weights, dst, p.strides, dilates, p.padding_low, p.padding_high}, plain,
          engine_, fwd_pd, true);
      if (!pd) return false;
      chosen = {pd.src_desc(), pd.diff_weights_desc(), pd.diff_dst_desc()};
      scratch = pd.scratchpad_desc();
      impl_ = pd.impl_info_str();
      primitive_ = dnnl::convolution_backward_weights(pd);
    }
    scratch_desc_ = scratch;
    scratchpad_bytes_ = align64(scratch.get_size());
    for (int r : {kSrc, kWeights, kDst}) {
      Operand& o = operands_[r];
      o.reorder = dnnl::reorder();
      if (chosen[r] == o.desc) continue;
      o.chosen = chosen[r];
      o.offset = scratchpad_bytes_;
      scratchpad_bytes_ += align64(o.chosen.get_size());
      o.reorder =
          r == written_
              ? dnnl::reorder(dnnl::reorder::primitive_desc(engine_, o.chosen, engine_, o.desc))
              : dnnl::reorder(dnnl::reorder::primitive_desc(engine_, o.desc, engine_, o.chosen));
    }
    return true;
  }

  Pass pass_;
  dnnl::engine engine_;
  int written_;
  std::array<Operand, 3> operands_;
  PostOps post_;
  std::optional<Bias> bias_;
  dnnl::primitive primitive_;
  dnnl::memory::desc scratch_desc_;
  std::size_t scratchpad_bytes_ = 0;
  std::string impl_;
};

}  // namespace

std::unique_ptr<CpuKernel> realise_convolution(const Kernel& kernel, const dnnl::engine& engine) {
  const auto& spec = std::get<ConvSpec>(kernel.spec);
  if (spec.dtype != DType::f32 || spec.src.dims.size() > 5) return nullptr;
  // A data or kernel gradient that may skip the zeros of its output gradient wraps the
  // dense kernel.
  auto skipping = [&](std::unique_ptr<CpuKernel> dense) {
    if (zero_skip_conv_fits(spec)) return make_zero_skip_conv(spec, std::move(dense));
    if (zero_skip_kernel_grad_fits(spec)) return make_zero_skip_kernel_grad(spec, std::move(dense));
    return dense;
  };
  if (auto k = realise_winograd(spec)) return skipping(std::move(k));
  try {
    auto k = std::make_unique<ConvKernel>(spec, engine);
    if (k->build(spec)) return skipping(std::move(k));
  } catch (const dnnl::error&) {
    // a layout, padding or post-op this oneDNN build does not take
  }
  return nullptr;
}

}  // namespace glia::detail::cpu
