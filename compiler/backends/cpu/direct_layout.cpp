// Direct kernels of the layout ops layers use: pad (the pad layer, some conv paddings)
// and concatenate. They move whole elements as bytes (the dtype only sets their size),
// copying contiguous runs with memcpy, into the executor's preallocated output.
#include <algorithm>
#include <cstring>

#include "backends/cpu/realise.hpp"
#include "glia/core/attrs.hpp"
#include "glia/core/error.hpp"
#include "glia/core/tensor.hpp"

namespace glia::detail::cpu {

namespace {

// Below this many bytes moved, a copy runs on one thread.
constexpr std::int64_t kParallelBytes = 1 << 20;

// ---- concatenate ---------------------------------------------------------------------

// Seen as (outer, axis * inner): each operand contributes one contiguous block per outer
// index, in operand order.
class ConcatenateKernel final : public CpuKernel {
 public:
  ConcatenateKernel(const Graph& g, ValueId id) : out_(id) {
    const Node& n = g.node(id);
    auto axis = static_cast<int>(std::get<AxisAttrs>(n.attrs).axis);
    for (int i = 0; i < axis; ++i) outer_ = outer_ * n.type.shape[i];
    auto size = static_cast<std::int64_t>(dtype_size(n.type.dtype));
    for (ValueId in : n.inputs) {
      const Shape& s = g.type(in).shape;
      operands_.push_back(in);
      blocks_.push_back(outer_ ? s.numel() / outer_ * size : 0);
      row_ += blocks_.back();
    }
  }

  void run(RunContext& ctx) const override {
    std::byte* dst = ctx.at(out_);
    std::vector<const std::byte*> src(operands_.size());
    for (std::size_t k = 0; k < operands_.size(); ++k) src[k] = ctx.at(operands_[k]);
    const std::byte* const* sp = src.data();
#pragma omp parallel for schedule(static) if (outer_ > 1 && outer_ * row_ >= kParallelBytes)
    for (std::int64_t o = 0; o < outer_; ++o) {
      std::byte* d = dst + o * row_;
      for (std::size_t k = 0; k < blocks_.size(); ++k) {
        const std::int64_t b = blocks_[k];
        if (b == 0) continue;
        std::memcpy(d, sp[k] + o * b, static_cast<std::size_t>(b));
        d += b;
      }
    }
  }
  std::string describe() const override { return "glia block copies"; }

 private:
  ValueId out_;
  std::int64_t outer_ = 1, row_ = 0;
  std::vector<ValueId> operands_;
  std::vector<std::int64_t> blocks_;  // bytes of each operand per outer index
};

// ---- pad -----------------------------------------------------------------------------

// Per axis, the input offset (elements) each output coordinate reads, or -1 where it is
// padding: output o reads input (o - low) / (interior + 1) when that is exact and in
// range (negative low/high crop).
class PadKernel final : public CpuKernel {
 public:
  PadKernel(const Graph& g, ValueId id) : out_id_(id) {
    const Node& n = g.node(id);
    const auto& a = std::get<PadAttrs>(n.attrs);
    const Shape& x = g.type(n.inputs[0]).shape;
    out_ = n.type.shape;
    esize_ = static_cast<std::int64_t>(dtype_size(n.type.dtype));
    std::vector<std::int64_t> strides = x.strides();
    source_.resize(static_cast<std::size_t>(x.rank()));
    for (int i = 0; i < x.rank(); ++i) {
      auto u = static_cast<std::size_t>(i);
      const std::int64_t step = a.interior[u] + 1;
      for (std::int64_t o = 0; o < out_[i]; ++o) {
        std::int64_t p = o - a.low[u];
        bool inside = p >= 0 && p % step == 0 && p / step < x[i];
        source_[u].push_back(inside ? p / step * strides[u] : -1);
      }
    }
    operand_ = n.inputs[0], value_ = n.inputs[1];
  }

  void run(RunContext& ctx) const override {
    const std::byte* x = ctx.at(operand_);
    const std::byte* v = ctx.at(value_);
    std::byte* y = ctx.at(out_id_);
    const int rank = out_.rank();
    const std::int64_t numel = out_.numel();
    if (numel == 0) return;
    if (rank == 0) {
      std::memcpy(y, x, static_cast<std::size_t>(esize_));
      return;
    }
    const std::int64_t width = out_[rank - 1], es = esize_;
    const std::int64_t rows = numel / width;
    const auto& last = source_[static_cast<std::size_t>(rank - 1)];
#pragma omp parallel for schedule(static) if (rows > 1 && numel * es >= kParallelBytes)
    for (std::int64_t r = 0; r < rows; ++r) {
      // The row's input offset over the outer axes, or -1 when any of them is padding.
      std::int64_t base = 0, rest = r;
      for (int i = rank - 2; i >= 0 && base >= 0; --i) {
        std::int64_t s =
            source_[static_cast<std::size_t>(i)][static_cast<std::size_t>(rest % out_[i])];
        rest /= out_[i];
        base = s < 0 ? -1 : base + s;
      }
      std::byte* row = y + r * width * es;
      std::int64_t j = 0;
      while (j < width) {
        std::int64_t s = base < 0 ? -1 : last[static_cast<std::size_t>(j)];
        if (s < 0) {  // a run of padding: the value, then copies of what is filled so far
          std::int64_t end = j + 1;
          while (end < width && (base < 0 || last[static_cast<std::size_t>(end)] < 0)) ++end;
          std::byte* at = row + j * es;
          std::memcpy(at, v, static_cast<std::size_t>(es));
          for (std::int64_t done = 1; done < end - j;) {
            std::int64_t n = std::min(done, end - j - done);
            std::memcpy(at + done * es, at, static_cast<std::size_t>(n * es));
            done += n;
          }
          j = end;
          continue;
        }
        // A run of consecutive input elements (no interior padding): one memcpy.
        std::int64_t end = j + 1;
        while (end < width && last[static_cast<std::size_t>(end)] == s + (end - j)) ++end;
        std::memcpy(row + j * es, x + (base + s) * es, static_cast<std::size_t>((end - j) * es));
        j = end;
      }
    }
  }
  std::string describe() const override { return "glia run copies"; }

 private:
  ValueId out_id_;
  Shape out_;
  std::int64_t esize_ = 4;
  std::vector<std::vector<std::int64_t>> source_;
  ValueId operand_{}, value_{};
};

}  // namespace

std::unique_ptr<CpuKernel> realise_direct_layout(const Graph& graph, const Kernel& kernel) {
  const auto& spec = std::get<DirectSpec>(kernel.spec);
  if (spec.op == Op::pad) return std::make_unique<PadKernel>(graph, spec.node);
  if (spec.op == Op::concatenate) return std::make_unique<ConcatenateKernel>(graph, spec.node);
  return nullptr;
}

}  // namespace glia::detail::cpu
