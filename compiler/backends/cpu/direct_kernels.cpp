// Kernels of glia's own for the layer ops that neither oneDNN nor the fused groups run:
// window_sum (avg/lp pooling), gather (embedding), scatter_add (its gradient) and
// argmax/argmin (accuracy metrics). They write into the executor's preallocated outputs,
// unlike the reference kernels, and compute exactly what core/src/kernels does.
#include <algorithm>
#include <cstring>
#include <type_traits>

#include "backends/cpu/program.hpp"
#include "glia/core/attrs.hpp"
#include "glia/core/error.hpp"
#include "glia/core/tensor.hpp"

namespace glia::detail::cpu {

namespace {

// Float sums accumulate in double; integer sums wrap, so they accumulate in u64 (defined
// overflow) and are narrowed modulo 2^bits, as the reference kernels do.
template <class T>
using Acc = std::conditional_t<is_float(dtype_of<T>()), double, std::uint64_t>;

template <class T>
Acc<T> widen(T v) {
  if constexpr (std::is_same_v<Acc<T>, double>)
    return static_cast<double>(static_cast<compute_t<T>>(v));
  else
    return static_cast<std::uint64_t>(static_cast<std::int64_t>(v));
}

template <class T>
T narrow(Acc<T> v) {
  if constexpr (std::is_same_v<Acc<T>, double>)
    return convert_element<T>(v);
  else
    return static_cast<T>(v);
}

const Tensor& value(const RunContext& ctx, ValueId id) {
  return ctx.values[static_cast<std::size_t>(id)];
}

// ---- window_sum -----------------------------------------------------------------------

// Per axis and output coordinate, the operand coordinates its window covers (padding and
// base-dilation holes left out), in window order, premultiplied by the operand stride.
class WindowSumKernel final : public Kernel {
 public:
  WindowSumKernel(const Lowering& l, ValueId id) {
    const Node& n = l.node(id);
    const auto& a = std::get<WindowAttrs>(n.attrs);
    const Shape& x = l.graph().type(n.inputs[0]).shape;
    out_ = n.type.shape;
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
      for (std::int64_t o = 0; o < out_[i]; ++o) {
        for (std::int64_t w = 0; w < a.window[u]; ++w) {
          std::int64_t p = o * a.strides[u] + w * a.window_dilation[u] - a.padding_low[u];
          if (p >= 0 && p < extent && p % b == 0) offsets_.push_back((p / b) * strides[u]);
        }
        begin.push_back(static_cast<std::int64_t>(offsets_.size()));
      }
      window_numel_ *= a.window[u];
    }
    inputs = {n.inputs[0]};
    outputs = {id};
    covered = {id};
    text_ = cat("direct window_sum ", l.graph().type(n.inputs[0]).to_string(), " -> ",
                n.type.to_string());
  }

  void run(RunContext& ctx) const override {
    visit_dtype(dtype_, [&](auto tag) {
      using T = decltype(tag);
      if constexpr (!std::is_same_v<T, bool>)
        sum<T>(static_cast<const T*>(value(ctx, inputs[0]).raw_data()),
               static_cast<T*>(ctx.values[static_cast<std::size_t>(outputs[0])].raw_data()));
    });
  }
  std::string describe() const override { return text_; }

 private:
  template <class T>
  void sum(const T* x, T* y) const {
    const std::int64_t numel = out_.numel();
    const int rank = out_.rank();
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
          coord[u] = rest % out_[r];
          rest /= out_[r];
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

  Shape out_;
  DType dtype_ = DType::f32;
  std::vector<std::vector<std::int64_t>> begin_;  // per axis, out_[i] + 1 list bounds
  std::vector<std::int64_t> offsets_;
  std::int64_t window_numel_ = 1;
  std::string text_;
};

// ---- gather and scatter_add -----------------------------------------------------------

// x seen as (outer, size, inner) around the axis.
struct AxisSplit {
  std::int64_t outer = 1, size = 1, inner = 1;
};
AxisSplit split_at(const Shape& x, int axis) {
  AxisSplit s;
  for (int i = 0; i < axis; ++i) s.outer *= x[i];
  s.size = x[axis];
  for (int i = axis + 1; i < x.rank(); ++i) s.inner *= x[i];
  return s;
}

// The indices as i64, each checked to lie in [0, size) before any thread starts (an
// out-of-range index is a glia::Error, as in the reference kernel).
void read_indices(std::string_view op, const Tensor& indices, std::int64_t size, int axis,
                  std::vector<std::int64_t>& out) {
  out.resize(static_cast<std::size_t>(indices.numel()));
  visit_dtype(indices.dtype(), [&](auto tag) {
    using I = decltype(tag);
    if constexpr (std::is_integral_v<I> && !std::is_same_v<I, bool>) {
      const I* p = static_cast<const I*>(indices.raw_data());
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

class GatherKernel final : public Kernel {
 public:
  GatherKernel(const Lowering& l, ValueId id) {
    const Node& n = l.node(id);
    axis_ = static_cast<int>(std::get<AxisAttrs>(n.attrs).axis);
    split_ = split_at(l.graph().type(n.inputs[0]).shape, axis_);
    row_bytes_ = split_.inner * static_cast<std::int64_t>(dtype_size(n.type.dtype));
    inputs = {n.inputs[0]};
    if (n.inputs[1] != n.inputs[0]) inputs.push_back(n.inputs[1]);
    outputs = {id};
    covered = {id};
    text_ = cat("direct gather axis ", axis_, " ", l.graph().type(n.inputs[0]).to_string(), " [",
                l.graph().type(n.inputs[1]).to_string(), "] -> ", n.type.to_string());
  }
  std::unique_ptr<KernelState> make_state() const override {
    return std::make_unique<IndexState>();
  }

  void run(RunContext& ctx) const override {
    auto& idx = static_cast<IndexState*>(ctx.state)->indices;
    read_indices("gather", value(ctx, inputs.back()), split_.size, axis_, idx);
    const auto n = static_cast<std::int64_t>(idx.size());
    const auto* x = static_cast<const std::byte*>(value(ctx, inputs[0]).raw_data());
    auto* y = static_cast<std::byte*>(ctx.values[static_cast<std::size_t>(outputs[0])].raw_data());
    const std::int64_t rows = split_.outer * n, row = row_bytes_;
    if (row == 0) return;
    const std::int64_t* ip = idx.data();
#pragma omp parallel for schedule(static) if (rows * row >= (1 << 20))
    for (std::int64_t r = 0; r < rows; ++r) {
      const std::int64_t o = r / n, j = r % n;
      std::memcpy(y + r * row, x + (o * split_.size + ip[j]) * row, static_cast<std::size_t>(row));
    }
  }
  std::string describe() const override { return text_; }

 private:
  int axis_ = 0;
  AxisSplit split_;
  std::int64_t row_bytes_ = 0;
  std::string text_;
};

// Accumulates into the scratchpad in the reference kernel's widths (double / u64), so
// duplicate indices round once, then narrows into the output.
class ScatterAddKernel final : public Kernel {
 public:
  ScatterAddKernel(const Lowering& l, ValueId id) {
    const Node& n = l.node(id);
    axis_ = static_cast<int>(std::get<AxisAttrs>(n.attrs).axis);
    split_ = split_at(n.type.shape, axis_);
    dtype_ = n.type.dtype;
    numel_ = n.type.shape.numel();
    for (ValueId in : n.inputs)
      if (std::find(inputs.begin(), inputs.end(), in) == inputs.end()) inputs.push_back(in);
    operands_ = {n.inputs[0], n.inputs[1], n.inputs[2]};
    outputs = {id};
    covered = {id};
    text_ = cat("direct scatter_add axis ", axis_, " ", n.type.to_string(), " <- ",
                l.graph().type(n.inputs[2]).to_string());
  }
  std::unique_ptr<KernelState> make_state() const override {
    return std::make_unique<IndexState>();
  }
  std::size_t scratchpad_bytes() const override {
    return static_cast<std::size_t>(numel_) * 8;  // double or u64 per element
  }

  void run(RunContext& ctx) const override {
    auto& idx = static_cast<IndexState*>(ctx.state)->indices;
    read_indices("scatter_add", value(ctx, operands_[1]), split_.size, axis_, idx);
    visit_dtype(dtype_, [&](auto tag) {
      using T = decltype(tag);
      if constexpr (!std::is_same_v<T, bool>)
        add<T>(static_cast<const T*>(value(ctx, operands_[0]).raw_data()), idx.data(),
               static_cast<std::int64_t>(idx.size()),
               static_cast<const T*>(value(ctx, operands_[2]).raw_data()),
               static_cast<Acc<T>*>(ctx.scratchpad),
               static_cast<T*>(ctx.values[static_cast<std::size_t>(outputs[0])].raw_data()));
    });
  }
  std::string describe() const override { return text_; }

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
  std::string text_;
};

// ---- argmax / argmin ------------------------------------------------------------------

// (outer, n, inner): the index of the first extreme along the middle axis, a NaN counting
// as the extreme (the first NaN wins), as the reference kernel and numpy do. Inner > 1
// keeps a running best per column so the rows are read contiguously.
template <bool kMax>
class ArgReduceKernel final : public Kernel {
 public:
  ArgReduceKernel(const Lowering& l, ValueId id) {
    const Node& n = l.node(id);
    const auto& a = std::get<ArgReduceAttrs>(n.attrs);
    const TensorType& x = l.graph().type(n.inputs[0]);
    split_ = split_at(x.shape, static_cast<int>(a.axis));
    dtype_ = x.dtype;
    inputs = {n.inputs[0]};
    outputs = {id};
    covered = {id};
    text_ = cat("direct ", kMax ? "argmax" : "argmin", " axis ", a.axis, " ", x.to_string(), " -> ",
                n.type.to_string());
  }

  void run(RunContext& ctx) const override {
    auto* y =
        static_cast<std::int64_t*>(ctx.values[static_cast<std::size_t>(outputs[0])].raw_data());
    visit_dtype(dtype_, [&](auto tag) {
      using T = decltype(tag);
      if constexpr (!std::is_same_v<T, bool>)
        reduce<T>(static_cast<const T*>(value(ctx, inputs[0]).raw_data()), y);
    });
  }
  std::string describe() const override { return text_; }

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
  DType dtype_ = DType::f32;
  std::string text_;
};

}  // namespace

void lower_direct(Lowering& lowering) {
  const Graph& g = lowering.graph();
  for (std::int64_t i = 0; i < g.size(); ++i) {
    auto id = static_cast<ValueId>(i);
    if (lowering.claimed(id)) continue;
    const Node& n = lowering.node(id);
    if (n.op == Op::window_sum && n.type.dtype != DType::boolean)
      lowering.add(std::make_unique<WindowSumKernel>(lowering, id));
    else if (n.op == Op::gather)
      lowering.add(std::make_unique<GatherKernel>(lowering, id));
    else if (n.op == Op::scatter_add && n.type.dtype != DType::boolean)
      lowering.add(std::make_unique<ScatterAddKernel>(lowering, id));
    else if (n.op == Op::argmax)
      lowering.add(std::make_unique<ArgReduceKernel<true>>(lowering, id));
    else if (n.op == Op::argmin)
      lowering.add(std::make_unique<ArgReduceKernel<false>>(lowering, id));
  }
  lower_direct_layout(lowering);
}

}  // namespace glia::detail::cpu
