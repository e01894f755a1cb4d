// Convolution nodes on oneDNN: which pass a node is (forward, input gradient, kernel
// gradient), its operands as strided views through transposes (NHWC data and HWIO
// kernels need no copies), and one primitive, with a weights reorder where oneDNN
// prefers a blocked layout, made once at compile time.
#include "backends/cpu/onednn_conv.hpp"

#include <algorithm>
#include <numeric>
#include <optional>
#include <sstream>

#include "backends/cpu/onednn_epilogue.hpp"

namespace glia::detail::cpu {

namespace {

using dims_t = dnnl::memory::dims;
enum class Pass { forward, backward_data, backward_weights };

// A node as a oneDNN convolution: src [N, C, S...], weights [(g,) O, C/g, K...] and
// dst [N, O, S'...] (diff_src, weights, diff_dst in the backward passes).
struct ConvPlan {
  Pass pass = Pass::forward;
  StridedView src, weights, dst;  // dst's base is unused for the output operand
  dims_t strides, dilates, pad_l, pad_r;
  std::vector<ValueId> covered;
};

bool all_f32(const Lowering& l, const Node& n) {
  return n.type.dtype == DType::f32 && l.graph().type(n.inputs[0]).dtype == DType::f32 &&
         l.graph().type(n.inputs[1]).dtype == DType::f32;
}

bool all_equal(const Ints& v, std::int64_t x) {
  return std::all_of(v.begin(), v.end(), [x](std::int64_t e) { return e == x; });
}

std::int64_t window(std::int64_t k, std::int64_t dilation) { return (k - 1) * dilation + 1; }

// Right padding that makes oneDNN's output size formula give `out` exactly.
std::int64_t pad_right(std::int64_t in, std::int64_t out, std::int64_t win, std::int64_t stride,
                       std::int64_t pad_l) {
  return (out - 1) * stride + win - in - pad_l;
}

std::int64_t spatial_numel(const std::vector<std::int64_t>& dims) {
  return std::accumulate(dims.begin() + 2, dims.end(), std::int64_t{1}, std::multiplies<>());
}

// The input gradient: conv(ct, reverse(kernel with O and I swapped)) at unit strides.
std::optional<ConvPlan> backward_data_plan(Lowering& l, ValueId id) {
  const Node& n = l.node(id);
  const auto& c = std::get<ConvAttrs>(n.attrs);
  const Node& rev = l.node(n.inputs[1]);
  const int rank = n.type.shape.rank();
  if (rev.op != Op::reverse || c.feature_groups != 1 || c.batch_groups != 1 ||
      !all_equal(c.strides, 1))
    return std::nullopt;
  // Every spatial axis reversed (the tracer leaves out axes of size 1), nothing else.
  const Ints& axes = std::get<AxesAttrs>(rev.attrs).axes;
  for (int i = 0; i < rank; ++i) {
    bool reversed = std::find(axes.begin(), axes.end(), i) != axes.end();
    if (reversed ? i < 2 : i >= 2 && rev.type.shape[i] != 1) return std::nullopt;
  }
  ConvPlan p;
  p.pass = Pass::backward_data;
  bool own_reverse =
      l.uses(n.inputs[1]) == 1 && !l.claimed(n.inputs[1]) && !l.is_output(n.inputs[1]);
  p.weights = swap_leading(
      view_through_transposes(l, rev.inputs[0], own_reverse ? n.inputs[1] : ValueId(-1)));
  if (own_reverse) p.covered.push_back(n.inputs[1]);
  p.src.dims = n.type.shape.dims();  // diff_src: the node's result
  p.dst = view_through_transposes(l, n.inputs[0], id);
  for (std::size_t i = 0; i + 2 < std::size_t(rank); ++i) {
    std::int64_t win = window(p.weights.dims[i + 2], c.kernel_dilation[i]);
    std::int64_t pl = win - 1 - c.padding_low[i];
    if (pl < 0) return std::nullopt;
    p.strides.push_back(c.input_dilation[i]);
    p.dilates.push_back(c.kernel_dilation[i] - 1);
    p.pad_l.push_back(pl);
    p.pad_r.push_back(
        pad_right(p.src.dims[i + 2], p.dst.dims[i + 2], win, c.input_dilation[i], pl));
  }
  return p;
}

// The kernel gradient: conv(x with N and C swapped, ct with N and O swapped), whose
// result (the kernel's size) is smaller than the "kernel" operand it reads.
std::optional<ConvPlan> backward_weights_plan(Lowering& l, ValueId id) {
  const Node& n = l.node(id);
  const auto& c = std::get<ConvAttrs>(n.attrs);
  if (c.feature_groups != 1 || c.batch_groups != 1 || !all_equal(c.input_dilation, 1) ||
      spatial_numel(n.type.shape.dims()) >= spatial_numel(l.graph().type(n.inputs[1]).shape.dims()))
    return std::nullopt;
  ConvPlan p;
  p.pass = Pass::backward_weights;
  p.src = swap_leading(view_through_transposes(l, n.inputs[0], id));
  p.dst = swap_leading(view_through_transposes(l, n.inputs[1], id));
  p.weights.dims = n.type.shape.dims();
  std::swap(p.weights.dims[0], p.weights.dims[1]);
  for (std::size_t i = 0; i + 2 < p.weights.dims.size(); ++i) {
    std::int64_t win = window(p.weights.dims[i + 2], c.strides[i]);
    p.strides.push_back(c.kernel_dilation[i]);
    p.dilates.push_back(c.strides[i] - 1);
    p.pad_l.push_back(c.padding_low[i]);
    p.pad_r.push_back(pad_right(p.src.dims[i + 2], p.dst.dims[i + 2], win, c.kernel_dilation[i],
                                c.padding_low[i]));
  }
  return p;
}

ConvPlan forward_plan(Lowering& l, ValueId id) {
  const Node& n = l.node(id);
  const auto& c = std::get<ConvAttrs>(n.attrs);
  ConvPlan p;
  p.src = view_through_transposes(l, n.inputs[0], id);
  p.weights = view_through_transposes(l, n.inputs[1], id);
  p.dst.dims = n.type.shape.dims();
  if (std::int64_t g = c.feature_groups; g > 1) {  // [O, ...] -> [g, O/g, ...]
    auto& w = p.weights;
    w.dims[0] /= g;
    w.dims.insert(w.dims.begin(), g);
    w.strides.insert(w.strides.begin(), w.strides[0] * w.dims[1]);
  }
  std::size_t k0 = p.weights.dims.size() - (p.dst.dims.size() - 2);
  for (std::size_t i = 0; i + 2 < p.dst.dims.size(); ++i) {
    std::int64_t win = window(p.weights.dims[k0 + i], c.kernel_dilation[i]);
    p.strides.push_back(c.strides[i]);
    p.dilates.push_back(c.kernel_dilation[i] - 1);
    p.pad_l.push_back(c.padding_low[i]);
    p.pad_r.push_back(
        pad_right(p.src.dims[i + 2], p.dst.dims[i + 2], win, c.strides[i], c.padding_low[i]));
  }
  return p;
}

std::string dims_text(const dims_t& d) {
  std::string s;
  for (std::size_t i = 0; i < d.size(); ++i) s += (i ? "x" : "") + std::to_string(d[i]);
  return s;
}

class ConvKernel final : public Kernel {
 public:
  ConvKernel(const ConvPlan& p, const dnnl::memory::desc& out_desc, Epilogue e,
             const dnnl::engine& engine)
      : pass_(p.pass), engine_(engine), epilogue_(std::move(e)) {
    Operand& result = pass_ == Pass::forward         ? dst_
                      : pass_ == Pass::backward_data ? src_
                                                     : weights_;
    for (auto [o, v] : {std::pair{&src_, &p.src}, {&weights_, &p.weights}, {&dst_, &p.dst}})
      *o = o == &result ? Operand{epilogue_.result, out_desc}
                        : Operand{v->base, f32_desc(v->dims, v->strides, false)};
    for (const Operand* o : {&src_, &weights_, &dst_})
      if (o != &result) add_input(o->value);
    for (const auto& o : epilogue_.operands) add_input(o.value);
    outputs = {epilogue_.result};
    text_ = pass_ == Pass::forward         ? "onednn convolution "
            : pass_ == Pass::backward_data ? "onednn convolution_backward_data "
                                           : "onednn convolution_backward_weights ";
    text_ += cat("src ", dims_text(p.src.dims), ", weights ", dims_text(p.weights.dims), ", dst ",
                 dims_text(p.dst.dims));
  }

  // False when oneDNN has no implementation for these descriptors.
  bool build(const ConvPlan& p) {
    using dnnl::algorithm;
    using dnnl::prop_kind;
    dnnl::memory::desc any(weights_.desc.dims(), dnnl::memory::data_type::f32,
                           dnnl::memory::format_tag::any);
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    attr.set_post_ops(epilogue_.ops);
    dnnl::convolution_forward::desc fwd(prop_kind::forward_training, algorithm::convolution_direct,
                                        src_.desc, any, dst_.desc, p.strides, p.dilates, p.pad_l,
                                        p.pad_r);
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
          {algorithm::convolution_direct, src_.desc, any, dst_.desc, p.strides, p.dilates, p.pad_l,
           p.pad_r},
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
          {algorithm::convolution_direct, src_.desc, any, dst_.desc, p.strides, p.dilates, p.pad_l,
           p.pad_r},
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
    auto mem = [&](const Operand& o) {
      return dnnl::memory(o.desc, engine_,
                          ctx.values[static_cast<std::size_t>(o.value)].raw_data());
    };
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
    bind_epilogue(epilogue_, engine_, ctx, args);
    primitive_.execute(ctx.stream, args);
    if (reorder_ && pass_ == Pass::backward_weights) {
      dnnl::memory user = mem(weights_);
      reorder_.execute(ctx.stream, weights, user);
    }
    ctx.stream.wait();
  }

  std::string describe() const override {
    return cat(text_, epilogue_.text, " (", impl_, reorder_ ? ", weights reordered" : "", ")");
  }
  std::size_t scratchpad_bytes() const override { return scratchpad_bytes_; }
  const Epilogue& epilogue() const { return epilogue_; }

 private:
  struct Operand {
    ValueId value = 0;
    dnnl::memory::desc desc;
  };
  void add_input(ValueId v) {
    if (std::find(inputs.begin(), inputs.end(), v) == inputs.end()) inputs.push_back(v);
  }

  Pass pass_;
  dnnl::engine engine_;
  Epilogue epilogue_;
  Operand src_, weights_, dst_;
  dnnl::primitive primitive_;
  dnnl::reorder reorder_;
  dnnl::memory::desc reordered_, scratch_desc_;
  std::size_t weights_offset_ = 0, scratchpad_bytes_ = 0;
  std::string text_, impl_;
};

}  // namespace

std::unique_ptr<Kernel> make_conv_kernel(Lowering& l, ValueId id) {
  const Node& n = l.node(id);
  if (n.op != Op::convolution || !all_f32(l, n)) return nullptr;
  const auto& c = std::get<ConvAttrs>(n.attrs);
  const int rank = n.type.shape.rank();
  if (rank < 3 || rank > 5 || n.type.shape.numel() == 0 ||
      l.graph().type(n.inputs[0]).shape.numel() == 0 ||
      l.graph().type(n.inputs[1]).shape.numel() == 0 ||
      std::any_of(c.padding_low.begin(), c.padding_low.end(), [](auto p) { return p < 0; }))
    return nullptr;
  std::optional<ConvPlan> plan = backward_data_plan(l, id);
  if (!plan) plan = backward_weights_plan(l, id);
  if (!plan && c.batch_groups == 1 && all_equal(c.input_dilation, 1)) plan = forward_plan(l, id);
  if (!plan) return nullptr;

  // The result, written through a transpose that only reads it (NCHW -> NHWC).
  ValueId out = id;
  std::vector<std::int64_t> out_strides = n.type.shape.strides();
  std::vector<int> dst_dim(static_cast<std::size_t>(rank));  // graph axis -> oneDNN dim
  std::iota(dst_dim.begin(), dst_dim.end(), 0);
  if (!l.is_output(id) && l.uses(id) == 1 && l.node(l.readers(id)[0]).op == Op::transpose &&
      !l.claimed(l.readers(id)[0])) {
    out = l.readers(id)[0];
    const Ints& perm = std::get<TransposeAttrs>(l.node(out).attrs).perm;
    std::vector<std::int64_t> t_strides = l.graph().type(out).shape.strides();
    for (std::size_t i = 0; i < perm.size(); ++i) {
      out_strides[static_cast<std::size_t>(perm[i])] = t_strides[i];
      dst_dim[i] = int(perm[i]);
    }
  }
  std::vector<std::int64_t> out_dims = n.type.shape.dims();
  if (plan->pass == Pass::backward_weights) {
    std::swap(out_dims[0], out_dims[1]);
    std::swap(out_strides[0], out_strides[1]);
  }
  dnnl::memory::desc out_desc = f32_desc(out_dims, out_strides, false);
  Epilogue e, none;
  e.result = none.result = out;
  if (plan->pass == Pass::forward) e = find_epilogue(l, out, dst_dim, out_dims);
  // Without the epilogue where oneDNN takes no such post-ops here.
  std::unique_ptr<ConvKernel> kernel;
  for (const Epilogue* attempt : {&e, &none}) {
    try {
      kernel = std::make_unique<ConvKernel>(*plan, out_desc, *attempt, l.engine());
      if (kernel->build(*plan)) break;
    } catch (const dnnl::error&) {
      // a layout or padding this oneDNN build does not take
    }
    kernel.reset();
    if (e.covered.empty()) break;
  }
  if (!kernel) return nullptr;
  const Epilogue& used = kernel->epilogue();
  std::vector<ValueId>& cov = kernel->covered;
  cov = plan->covered;
  for (const StridedView* v : {&plan->src, &plan->weights, &plan->dst})
    cov.insert(cov.end(), v->walked.begin(), v->walked.end());
  cov.push_back(id);
  if (out != id) cov.push_back(out);
  cov.insert(cov.end(), used.covered.begin(), used.covered.end());
  return kernel;
}

}  // namespace glia::detail::cpu
