// MatmulSpecs on the cpu backend: oneDNN's matmul primitive (post-ops for the epilogue),
// made once at compile time, or glia's small kernel for tiny products (small_matmul.hpp);
// products that may skip zeros of their left operand wrap it (zero_skip_matmul.hpp).
#include <sstream>
#include <unordered_map>

#include "backends/cpu/onednn_util.hpp"
#include "backends/cpu/small_matmul.hpp"
#include "backends/cpu/zero_skip_matmul.hpp"

namespace glia::detail::cpu {

namespace {

dnnl::memory::dims dims_of(const MatmulSpec& s, std::int64_t rows, std::int64_t cols) {
  dnnl::memory::dims d(s.batch.begin(), s.batch.end());
  d.push_back(rows);
  d.push_back(cols);
  return d;
}

class MatmulKernel final : public CpuKernel {
 public:
  // Null when oneDNN has no implementation for these descriptors and post-ops.
  static std::unique_ptr<MatmulKernel> create(const MatmulSpec& s, ValueId out,
                                              const dnnl::engine& engine) {
    auto k = std::unique_ptr<MatmulKernel>(new MatmulKernel);
    k->engine_ = engine;
    k->lhs_ = s.lhs, k->rhs_ = s.rhs, k->out_ = out;
    double flops = 2.0 * double(s.multiply_adds());
    k->threads_ = flops < kSingleThreadFlops ? 1 : 0;
    ThreadScope scope(k->threads_);  // oneDNN picks its kernels for the threads it sees
    try {
      k->src_ = f32_desc(dims_of(s, s.m, s.k), s.lhs_strides);
      k->weights_ = f32_desc(dims_of(s, s.k, s.n), s.rhs_strides);
      k->dst_ = f32_desc(dims_of(s, s.m, s.n), s.out_strides);
      k->post_ = post_ops(s.epilogue, dims_of(s, s.m, s.n));
      dnnl::primitive_attr attr;
      // The caller provides scratch memory per run: a primitive's own would be shared by
      // concurrent runs of one executable.
      attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
      attr.set_post_ops(k->post_.ops);
      dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(k->src_, k->weights_, k->dst_), attr,
                                      engine, /*allow_empty=*/true);
      if (!pd) return nullptr;
      k->scratchpad_ = pd.scratchpad_desc();
      k->scratchpad_bytes_ = k->scratchpad_.get_size();
      k->impl_ = pd.impl_info_str();
      k->primitive_ = dnnl::matmul(pd);
    } catch (const dnnl::error&) {
      return nullptr;  // a layout this oneDNN build does not take
    }
    return k;
  }

  // The arguments' memory objects, made once per workspace and repointed each run:
  // making them per run costs more than a small product.
  struct State final : KernelState {
    dnnl::memory src, weights, dst, scratchpad;
    std::vector<dnnl::memory> operands;  // the epilogue's, in its order
    std::unordered_map<int, dnnl::memory> args;
  };
  std::unique_ptr<KernelState> make_state() const override {
    auto st = std::make_unique<State>();
    st->src = dnnl::memory(src_, engine_, nullptr);
    st->weights = dnnl::memory(weights_, engine_, nullptr);
    st->dst = dnnl::memory(dst_, engine_, nullptr);
    st->args = {{DNNL_ARG_SRC, st->src}, {DNNL_ARG_WEIGHTS, st->weights}, {DNNL_ARG_DST, st->dst}};
    if (scratchpad_bytes_ > 0) {
      st->scratchpad = dnnl::memory(scratchpad_, engine_, nullptr);
      st->args.emplace(DNNL_ARG_SCRATCHPAD, st->scratchpad);
    }
    for (const auto& op : post_.operands) {
      st->operands.emplace_back(op.desc, engine_, nullptr);
      st->args.emplace(op.arg, st->operands.back());
    }
    return st;
  }

  void run(RunContext& ctx) const override {
    auto& st = static_cast<State&>(*ctx.state);
    for (std::size_t i = 0; i < post_.operands.size(); ++i)
      st.operands[i].set_data_handle(ctx.at(post_.operands[i].value));
    st.src.set_data_handle(ctx.at(lhs_));
    st.weights.set_data_handle(ctx.at(rhs_));
    st.dst.set_data_handle(ctx.at(out_));
    if (scratchpad_bytes_ > 0) st.scratchpad.set_data_handle(ctx.scratchpad);
    ThreadScope scope(threads_);
    primitive_.execute(ctx.stream, st.args);
    ctx.stream.wait();
  }
  std::string describe() const override {
    return cat("onednn (", impl_, threads_ == 1 ? ", 1 thread" : "", ")");
  }
  std::size_t scratchpad_bytes() const override { return scratchpad_bytes_; }

 private:
  MatmulKernel() = default;
  dnnl::engine engine_;
  ValueId lhs_ = 0, rhs_ = 0, out_ = 0;
  dnnl::memory::desc src_, weights_, dst_, scratchpad_;
  PostOps post_;
  dnnl::matmul primitive_;
  std::size_t scratchpad_bytes_ = 0;
  std::string impl_;
  int threads_ = 0;  // 1 for small products (see kSingleThreadFlops), else the program's
};

}  // namespace

std::unique_ptr<CpuKernel> realise_matmul(const Graph&, const Kernel& kernel,
                                          const dnnl::engine& engine) {
  const auto& s = std::get<MatmulSpec>(kernel.spec);
  if (s.dtype != DType::f32 || s.batch.size() + 2 > std::size_t(DNNL_MAX_NDIMS)) return nullptr;
  if (is_small_matmul(s))
    if (auto small = make_small_matmul_kernel(s, kernel.outputs[0])) return small;
  std::unique_ptr<CpuKernel> dense = MatmulKernel::create(s, kernel.outputs[0], engine);
  if (dense != nullptr && zero_skip_fits(s))
    return make_zero_skip_matmul(s, kernel.outputs[0], std::move(dense));
  return dense;
}

}  // namespace glia::detail::cpu
