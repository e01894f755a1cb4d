// ConvSpecs on oneDNN: one primitive per kernel (forward with post-ops for the epilogue,
// backward_data, backward_weights) over the spec's strided views, with a weights reorder
// where oneDNN prefers a blocked layout, made once at compile time.
#include <algorithm>
#include <unordered_map>

#include "backends/cpu/onednn_util.hpp"

namespace glia::detail::cpu {

namespace {

using dims_t = dnnl::memory::dims;
using Pass = ConvSpec::Pass;

dims_t minus_one(const std::vector<std::int64_t>& v) {
  dims_t d;
  for (std::int64_t x : v) d.push_back(x - 1);
  return d;
}

class ConvKernel final : public CpuKernel {
 public:
  ConvKernel(const ConvSpec& p, const dnnl::engine& engine)
      : pass_(p.pass),
        engine_(engine),
        post_(post_ops(p.epilogue, p.dst.dims)),
        src_{p.src.value, f32_desc(p.src, false)},
        weights_{p.weights.value, f32_desc(p.weights, false)},
        dst_{p.dst.value, f32_desc(p.dst, false)} {}

  // False when oneDNN has no implementation for these descriptors.
  bool build(const ConvSpec& p) {
    using dnnl::algorithm;
    using dnnl::prop_kind;
    dnnl::memory::desc any(weights_.desc.dims(), dnnl::memory::data_type::f32,
                           dnnl::memory::format_tag::any);
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    attr.set_post_ops(post_.ops);
    const dims_t dilates = minus_one(p.dilations);
    dnnl::convolution_forward::desc fwd(prop_kind::forward_training, algorithm::convolution_direct,
                                        src_.desc, any, dst_.desc, p.strides, dilates,
                                        p.padding_low, p.padding_high);
    dnnl::convolution_forward::primitive_desc fwd_pd(fwd, attr, engine_, true);
    if (!fwd_pd) return false;
    dnnl::memory::desc chosen, scratch;
    if (pass_ == Pass::forward) {
      chosen = fwd_pd.weights_desc();
      scratch = fwd_pd.scratchpad_desc();
      impl_ = fwd_pd.impl_info_str();
      primitive_ = dnnl::convolution_forward(fwd_pd);
    } else if (pass_ == Pass::backward_data) {
      dnnl::primitive_attr plain;
      plain.set_scratchpad_mode(dnnl::scratchpad_mode::user);
      dnnl::convolution_backward_data::primitive_desc pd(
          {algorithm::convolution_direct, src_.desc, any, dst_.desc, p.strides, dilates,
           p.padding_low, p.padding_high},
          plain, engine_, fwd_pd, true);
      if (!pd) return false;
      chosen = pd.weights_desc();
      scratch = pd.scratchpad_desc();
      impl_ = pd.impl_info_str();
      primitive_ = dnnl::convolution_backward_data(pd);
    } else {
      dnnl::primitive_attr plain;
      plain.set_scratchpad_mode(dnnl::scratchpad_mode::user);
      dnnl::convolution_backward_weights::primitive_desc pd(
          {algorithm::convolution_direct, src_.desc, any, dst_.desc, p.strides, dilates,
           p.padding_low, p.padding_high},
          plain, engine_, fwd_pd, true);
      if (!pd) return false;
      chosen = pd.diff_weights_desc();
      scratch = pd.scratchpad_desc();
      impl_ = pd.impl_info_str();
      primitive_ = dnnl::convolution_backward_weights(pd);
    }
    scratch_desc_ = scratch;
    weights_offset_ = align64(scratch.get_size());
    scratchpad_bytes_ = weights_offset_;
    if (chosen != weights_.desc) {
      // The weights move between their graph layout and oneDNN's blocked one per run.
      reordered_ = chosen;
      reorder_ = pass_ == Pass::backward_weights ? dnnl::reorder(dnnl::reorder::primitive_desc(
                                                       engine_, chosen, engine_, weights_.desc))
                                                 : dnnl::reorder(dnnl::reorder::primitive_desc(
                                                       engine_, weights_.desc, engine_, chosen));
      scratchpad_bytes_ += align64(chosen.get_size());
    }
    return true;
  }

  void run(RunContext& ctx) const override {
    auto mem = [&](const Operand& o) { return dnnl::memory(o.desc, engine_, ctx.at(o.value)); };
    auto* scratch = static_cast<std::byte*>(ctx.scratchpad);
    dnnl::memory weights = mem(weights_);
    if (reorder_) {
      dnnl::memory blocked(reordered_, engine_, scratch + weights_offset_);
      if (pass_ != Pass::backward_weights) reorder_.execute(ctx.stream, weights, blocked);
      std::swap(weights, blocked);
    }
    std::unordered_map<int, dnnl::memory> args;
    if (pass_ == Pass::forward)
      args = {{DNNL_ARG_SRC, mem(src_)}, {DNNL_ARG_WEIGHTS, weights}, {DNNL_ARG_DST, mem(dst_)}};
    else if (pass_ == Pass::backward_data)
      args = {{DNNL_ARG_DIFF_SRC, mem(src_)},
              {DNNL_ARG_WEIGHTS, weights},
              {DNNL_ARG_DIFF_DST, mem(dst_)}};
    else
      args = {{DNNL_ARG_SRC, mem(src_)},
              {DNNL_ARG_DIFF_WEIGHTS, weights},
              {DNNL_ARG_DIFF_DST, mem(dst_)}};
    if (scratch_desc_.get_size() > 0)
      args.emplace(DNNL_ARG_SCRATCHPAD, dnnl::memory(scratch_desc_, engine_, scratch));
    for (const auto& op : post_.operands)
      args.emplace(op.arg, dnnl::memory(op.desc, engine_, ctx.at(op.value)));
    primitive_.execute(ctx.stream, args);
    if (reorder_ && pass_ == Pass::backward_weights) {
      dnnl::memory user = mem(weights_);
      reorder_.execute(ctx.stream, weights, user);
    }
    ctx.stream.wait();
  }

  std::string describe() const override {
    return cat("onednn (", impl_, reorder_ ? ", weights reordered" : "", ")");
  }
  std::size_t scratchpad_bytes() const override { return scratchpad_bytes_; }

 private:
  struct Operand {
    ValueId value = 0;
    dnnl::memory::desc desc;
  };
  Pass pass_;
  dnnl::engine engine_;
  PostOps post_;
  Operand src_, weights_, dst_;
  dnnl::primitive primitive_;
  dnnl::reorder reorder_;
  dnnl::memory::desc reordered_, scratch_desc_;
  std::size_t weights_offset_ = 0, scratchpad_bytes_ = 0;
  std::string impl_;
};

}  // namespace

std::unique_ptr<CpuKernel> realise_convolution(const Kernel& kernel, const dnnl::engine& engine) {
  const auto& spec = std::get<ConvSpec>(kernel.spec);
  if (spec.dtype != DType::f32 || spec.src.dims.size() > 5) return nullptr;
  try {
    auto k = std::make_unique<ConvKernel>(spec, engine);
    if (k->build(spec)) return k;
  } catch (const dnnl::error&) {
    // a layout, padding or post-op this oneDNN build does not take
  }
  return nullptr;
}

}  // namespace glia::detail::cpu
