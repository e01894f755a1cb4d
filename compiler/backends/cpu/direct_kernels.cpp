// Kernels of glia's own for the layer ops that neither oneDNN nor the fused groups run:
// window_sum (avg/lp pooling), gather (embedding), scatter_add (its gradient) and
// argmax/argmin (accuracy metrics). They write into the executor's preallocated outputs,
// unlike the reference kernels, and compute exactly what core/src/kernels does.
#include <algorithm>
#include <cstring>
#include <type_traits>

#include "backends/cpu/realise.hpp"
#include "glia/core/attrs.hpp"
#include "glia/core/error.hpp"
#include "glia/core/monoid.hpp"
#include "glia/core/tensor.hpp"

namespace glia::detail::cpu {

namespace {

// Sums accumulate as the reference kernels do (glia/core/monoid.hpp): floats in double,
// integers in u64 (wrapping, narrowed modulo 2^bits).
using Sum = monoid<Op::reduce_sum>;
template <class T>
using Acc = Sum::acc_t<T>;

template <class T>
Acc<T> widen(T v) {
  return Sum::widen<T>(static_cast<compute_t<T>>(v));
}

template <class T>
T narrow(Acc<T> v) {
  return convert_element<T>(Sum::narrow<T>(v));
}

// ---- window_sum -----------------------------------------------------------------------

// Per axis and output coordinate, the operand coordinates its window covers (padding and
// base-dilation holes left out), in window order, premultiplied by the operand stride.
class WindowSumKernel final : public CpuKernel {
 public:
  WindowSumKernel(const Graph& g, const DirectSpec& spec) : in_(spec.operands[0]), out_(spec.node) {
    const Node& n = g.node(spec.node);
    const auto& a = std::get<WindowAttrs>(n.attrs);
    const Shape& x = g.type(n.inputs[0]).shape;
    out_shape_ = n.type.shape;
    dtype_ = n.type.dtype;
    const int rank = x.rank();
    std::vector<std::int64_t> strides = x.strides();
    begin_.resize(static_cast<std::size_t>(rank));
    window_numel_ = 1;
    for (int i = 0; i < rank; ++i) {
      auto u = static_cast<std::size_t>(i);
      const std::int64_t b = a.base_dilation[u], d = x[i];
      const std::int64_t extent = d == 0 ? 0 : (d - 1) * b + 1;
      auto& begin = begin_[u];
      begin.push_back(static_cast<std::int64_t>(offsets_.size()));
      for (std::int64_t o = 0; o < out_shape_[i]; ++o) {
        for (std::int64_t w = 0; w < a.window[u]; ++w) {
          std::int64_t p = o * a.strides[u] + w * a.window_dilation[u] - a.padding_low[u];
          if (p >= 0 && p < extent && p % b == 0) offsets_.push_back((p / b) * strides[u]);
        }
        begin.push_back(static_cast<std::int64_t>(offsets_.size()));
      }
      window_numel_ *= a.window[u];
    }
  }

  void run(RunContext& ctx) const override {
    visit_dtype(dtype_, [&](auto tag) {
      using T = decltype(tag);
      if constexpr (!std::is_same_v<T, bool>) sum<T>(ctx.at<const T>(in_), ctx.at<T>(out_));
    });
  }
  std::string describe() const override { return "glia window sum"; }

 private:
  template <class T>
  void sum(const T* x, T* y) const {
    const std::int64_t numel = out_shape_.numel();
    const int rank = out_shape_.rank();
    const bool large = double(numel) * double(window_numel_) >= kSingleThreadFlops;
#pragma omp parallel if (large)
    {
      // Per axis: the current output coordinate's list and the position within it.
      std::vector<std::int64_t> coord(static_cast<std::size_t>(rank));
      std::vector<std::int64_t> pos(static_cast<std::size_t>(rank));
#pragma omp for schedule(static)
      for (std::int64_t i = 0; i < numel; ++i) {
        std::int64_t rest = i;
        bool empty = false;
        for (int r = rank - 1; r >= 0; --r) {
          auto u = static_cast<std::size_t>(r);
          coord[u] = rest % out_shape_[r];
          rest /= out_shape_[r];
          pos[u] = begin_[u][static_cast<std::size_t>(coord[u])];
          empty = empty || pos[u] == begin_[u][static_cast<std::size_t>(coord[u]) + 1];
        }
        Acc<T> acc = 0;
        // Odometer over the product of the axes' lists, last axis fastest (window order).
        while (!empty) {
          std::int64_t flat = 0;
          for (int r = 0; r < rank; ++r)
            flat += offsets_[static_cast<std::size_t>(pos[std::size_t(r)])];
          acc += widen<T>(x[flat]);
          int r = rank - 1;
          for (; r >= 0; --r) {
            auto u = static_cast<std::size_t>(r);
            if (++pos[u] < begin_[u][static_cast<std::size_t>(coord[u]) + 1]) break;
            pos[u] = begin_[u][static_cast<std::size_t>(coord[u])];
          }
          if (r < 0) break;
        }
        y[i] = narrow<T>(acc);
      }
    }
  }

  ValueId in_, out_;
  Shape out_shape_;
  DType dtype_ = DType::f32;
  std::vector<std::vector<std::int64_t>> begin_;  // per axis, out_shape_[i] + 1 list bounds
  std::vector<std::int64_t> offsets_;
  std::int64_t window_numel_ = 1;
};

// ---- gather and scatter_add -----------------------------------------------------------

// The indices as i64, each checked to lie in [0, size) before any thread starts (an
// out-of-range index is a glia::Error, as in the reference kernel).
void read_indices(std::string_view op, DType dtype, const std::byte* indices, std::int64_t count,
                  std::int64_t size, int axis, std::vector<std::int64_t>& out) {
  out.resize(static_cast<std::size_t>(count));
  visit_dtype(dtype, [&](auto tag) {
    using I = decltype(tag);
    if constexpr (std::is_integral_v<I> && !std::is_same_v<I, bool>) {
      const I* p = reinterpret_cast<const I*>(indices);
      for (std::size_t i = 0; i < out.size(); ++i) out[i] = static_cast<std::int64_t>(p[i]);
    }
  });
  for (std::size_t i = 0; i < out.size(); ++i)
    check(out[i] >= 0 && out[i] < size, op, ": index ", out[i], " (at position ", i,
          " of the indices) is out of range for axis ", axis, " of size ", size);
}

struct IndexState final : KernelState {
  std::vector<std::int64_t> indices;
};

class GatherKernel final : public CpuKernel {
 public:
  GatherKernel(const Graph& g, const DirectSpec& spec)
      : split_(spec.split), x_(spec.operands[0]), indices_(spec.operands[1]), out_(spec.node) {
    const Node& n = g.node(spec.node);
    axis_ = static_cast<int>(std::get<AxisAttrs>(n.attrs).axis);
    indices_type_ = g.type(indices_);
    row_bytes_ = split_.inner * static_cast<std::int64_t>(dtype_size(n.type.dtype));
  }
  std::unique_ptr<KernelState> make_state() const override {
    return std::make_unique<IndexState>();
  }

  void run(RunContext& ctx) const override {
    auto& idx = static_cast<IndexState*>(ctx.state)->indices;
    read_indices("gather", indices_type_.dtype, ctx.at(indices_), indices_type_.shape.numel(),
                 split_.size, axis_, idx);
    const auto n = static_cast<std::int64_t>(idx.size());
    const std::byte* x = ctx.at(x_);
    std::byte* y = ctx.at(out_);
    const std::int64_t rows = split_.outer * n, row = row_bytes_;
    if (row == 0) return;
    const std::int64_t* ip = idx.data();
#pragma omp parallel for schedule(static) if (rows * row >= (1 << 20))
    for (std::int64_t r = 0; r < rows; ++r) {
      const std::int64_t o = r / n, j = r % n;
      std::memcpy(y + r * row, x + (o * split_.size + ip[j]) * row, static_cast<std::size_t>(row));
    }
  }
  std::string describe() const override { return "glia row copies"; }

 private:
  int axis_ = 0;
  AxisSplit split_;
  ValueId x_, indices_, out_;
  TensorType indices_type_;
  std::int64_t row_bytes_ = 0;
};

// Accumulates into the scratchpad in the reference kernel's widths (double / u64), so
// duplicate indices round once, then narrows into the output.
class ScatterAddKernel final : public CpuKernel {
 public:
  ScatterAddKernel(const Graph& g, const DirectSpec& spec)
      : split_(spec.split), operands_(spec.operands), out_(spec.node) {
    const Node& n = g.node(spec.node);
    axis_ = static_cast<int>(std::get<AxisAttrs>(n.attrs).axis);
    dtype_ = n.type.dtype;
    numel_ = n.type.shape.numel();
    indices_type_ = g.type(operands_[1]);
  }
  std::unique_ptr<KernelState> make_state() const override {
    return std::make_unique<IndexState>();
  }
  std::size_t scratchpad_bytes() const override {
    return static_cast<std::size_t>(numel_) * 8;  // double or u64 per element
  }

  void run(RunContext& ctx) const override {
    auto& idx = static_cast<IndexState*>(ctx.state)->indices;
    read_indices("scatter_add", indices_type_.dtype, ctx.at(operands_[1]),
                 indices_type_.shape.numel(), split_.size, axis_, idx);
    visit_dtype(dtype_, [&](auto tag) {
      using T = decltype(tag);
      if constexpr (!std::is_same_v<T, bool>)
        add<T>(ctx.at<const T>(operands_[0]), idx.data(), static_cast<std::int64_t>(idx.size()),
               ctx.at<const T>(operands_[2]), static_cast<Acc<T>*>(ctx.scratchpad),
               ctx.at<T>(out_));
    });
  }
  std::string describe() const override { return "glia blocked accumulation"; }

 private:
  template <class T>
  void add(const T* target, const std::int64_t* idx, std::int64_t n, const T* updates, Acc<T>* acc,
           T* y) const {
    // Column blocks of one outer slice are disjoint in the output: threads split them.
    constexpr std::int64_t kBlock = 256;
    const std::int64_t inner = split_.inner, size = split_.size;
    const std::int64_t blocks = (inner + kBlock - 1) / kBlock;
    const bool large = double(numel_) + double(split_.outer * n * inner) >= kSingleThreadFlops;
#pragma omp parallel for schedule(static) if (large)
    for (std::int64_t t = 0; t < split_.outer * blocks; ++t) {
      const std::int64_t o = t / blocks, k0 = (t % blocks) * kBlock;
      const std::int64_t k1 = std::min(inner, k0 + kBlock);
      for (std::int64_t s = 0; s < size; ++s) {
        const std::int64_t base = (o * size + s) * inner;
        for (std::int64_t k = k0; k < k1; ++k) acc[base + k] = widen<T>(target[base + k]);
      }
      for (std::int64_t j = 0; j < n; ++j) {
        Acc<T>* a = acc + (o * size + idx[j]) * inner;
        const T* u = updates + (o * n + j) * inner;
        for (std::int64_t k = k0; k < k1; ++k) a[k] += widen<T>(u[k]);
      }
      for (std::int64_t s = 0; s < size; ++s) {
        const std::int64_t base = (o * size + s) * inner;
        for (std::int64_t k = k0; k < k1; ++k) y[base + k] = narrow<T>(acc[base + k]);
      }
    }
  }

  int axis_ = 0;
  AxisSplit split_;
  DType dtype_ = DType::f32;
  std::int64_t numel_ = 0;
  std::vector<ValueId> operands_;
  ValueId out_;
  TensorType indices_type_;
};

// ---- argmax / argmin ------------------------------------------------------------------

// (outer, n, inner): the index of the first extreme along the middle axis, a NaN counting
// as the extreme (the first NaN wins), as the reference kernel and numpy do. Inner > 1
// keeps a running best per column so the rows are read contiguously.
template <bool kMax>
class ArgReduceKernel final : public CpuKernel {
 public:
  ArgReduceKernel(const Graph& g, const DirectSpec& spec)
      : split_(spec.split), x_(spec.operands[0]), out_(spec.node) {
    dtype_ = g.type(x_).dtype;
  }

  void run(RunContext& ctx) const override {
    auto* y = ctx.at<std::int64_t>(out_);
    visit_dtype(dtype_, [&](auto tag) {
      using T = decltype(tag);
      if constexpr (!std::is_same_v<T, bool>) reduce<T>(ctx.at<const T>(x_), y);
    });
  }
  std::string describe() const override { return "glia column sweep"; }

 private:
  template <class T>
  void reduce(const T* x, std::int64_t* y) const {
    using C = compute_t<T>;
    const std::int64_t outer = split_.outer, n = split_.size, inner = split_.inner;
    auto better = [](C v, C best) {
      if constexpr (std::is_floating_point_v<C>)
        if (v != v) return true;
      return kMax ? v > best : v < best;
    };
    auto is_nan = [](C v) { return v != v; };
    const bool large = outer > 1 && double(outer * n * inner) >= kSingleThreadFlops;
#pragma omp parallel if (large)
    {
      std::vector<C> best(static_cast<std::size_t>(inner));
#pragma omp for schedule(static)
      for (std::int64_t o = 0; o < outer; ++o) {
        const T* block = x + o * n * inner;
        std::int64_t* out = y + o * inner;
        for (std::int64_t i = 0; i < inner; ++i) {
          best[static_cast<std::size_t>(i)] = static_cast<C>(block[i]);
          out[i] = 0;
        }
        for (std::int64_t k = 1; k < n; ++k) {
          const T* row = block + k * inner;
          for (std::int64_t i = 0; i < inner; ++i) {
            C& b = best[static_cast<std::size_t>(i)];
            if (is_nan(b)) continue;  // a NaN stays the extreme
            auto v = static_cast<C>(row[i]);
            if (better(v, b)) b = v, out[i] = k;
          }
        }
      }
    }
  }

  AxisSplit split_;
  ValueId x_, out_;
  DType dtype_ = DType::f32;
};

}  // namespace

std::unique_ptr<CpuKernel> realise_direct(const Graph& graph, const Kernel& kernel) {
  const auto& spec = std::get<DirectSpec>(kernel.spec);
  const Graph& g = graph;
  switch (spec.op) {
    case Op::window_sum:
      return std::make_unique<WindowSumKernel>(g, spec);
    case Op::gather:
      return std::make_unique<GatherKernel>(g, spec);
    case Op::scatter_add:
      return std::make_unique<ScatterAddKernel>(g, spec);
    case Op::argmax:
      return std::make_unique<ArgReduceKernel<true>>(g, spec);
    case Op::argmin:
      return std::make_unique<ArgReduceKernel<false>>(g, spec);
    default:
      return realise_direct_layout(graph, kernel);
  }
}

}  // namespace glia::detail::cpu
