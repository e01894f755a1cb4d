// Max pooling as CUDA source, one thread per written element and no atomics, so a run is
// deterministic and computes what core's reference kernels compute. `max` folds each
// window with glia_max (a NaN wins; padding is skipped, so it never wins). `max_backward`
// gathers: each input element sums, in window order, the source values of the windows
// that hold it and whose first maximum it is (it beats every element before it in the
// window and none after it beats it), in the sum monoid's accumulator, as the reference
// scatter adds them. Threads walk the written view in its storage order (largest stride
// outermost), so neighbouring threads touch neighbouring memory in NCHW and NHWC alike.
#include <algorithm>
#include <numeric>

#include "backends/cuda/kernel_source.hpp"
#include "glia/core/attrs.hpp"
#include "glia/core/elementwise.hpp"
#include "glia/core/error.hpp"

namespace glia::detail::cuda {

namespace {

std::string lit(std::int64_t v) { return int_literal(v); }
std::string v(ValueId id) { return cat("v", id); }

// The coordinates of flat index `e` as locals c0, c1, ... over the view's dims, e counting
// through them in storage order.
std::string coordinates(const std::string& e, const StridedView& view) {
  std::vector<std::size_t> order(view.dims.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return view.strides[a] > view.strides[b]; });
  std::string text = cat("long long rest = ", e, ";\n");
  for (auto d = order.rbegin(); d != order.rend(); ++d) {
    const std::int64_t size = view.dims[*d];
    text += size == 1 ? cat("const long long c", *d, " = 0;\n")
                      : cat("const long long c", *d, " = rest % ", lit(size),
                            "; rest /= ", lit(size), ";\n");
  }
  return text + "(void)rest;\n";
}

// sum(names[i] * strides[i]) over the view's dims from `first` on that step, or "0".
std::string at(const StridedView& view, const std::vector<std::string>& names,
               std::size_t first = 0) {
  std::string e;
  for (std::size_t i = first; i < names.size(); ++i)
    if (view.dims[i] != 1 && view.strides[i] != 0)
      e += cat(e.empty() ? "" : " + ", names[i],
               view.strides[i] == 1 ? "" : " * " + lit(view.strides[i]));
  return e.empty() ? "0" : e;
}

// The index names of a whole [N, C, spatial...] view: the coordinates c0, c1 of N and C,
// then prefix0, prefix1, ... for the spatial dims.
std::vector<std::string> view_names(const std::string& prefix, std::size_t spatial) {
  std::vector<std::string> names{"c0", "c1"};
  for (std::size_t d = 0; d < spatial; ++d) names.push_back(cat(prefix, d));
  return names;
}

// The coordinates c0, c1, ... of a whole view of `rank` dims.
std::vector<std::string> coordinate_names(std::size_t rank) {
  std::vector<std::string> names;
  for (std::size_t d = 0; d < rank; ++d) names.push_back(cat("c", d));
  return names;
}

// Row-major flat position in the window of the loop variables prefix0, prefix1, ...
std::string window_position(const std::string& prefix, const std::vector<std::int64_t>& window) {
  std::string e = cat(prefix, 0);
  for (std::size_t d = 1; d < window.size(); ++d)
    e = cat("(", e, ") * ", lit(window[d]), " + ", prefix, d);
  return e;
}

// Window sizes or strides as text: "3x3".
std::string times(const std::vector<std::int64_t>& v) {
  std::string s;
  for (std::int64_t x : v) s += cat(s.empty() ? "" : "x", x);
  return s;
}

// A kernel over `work` elements whose last parameter is the one it writes.
GeneratedKernel make(const Graph& g, const std::string& name, std::vector<ValueId> params,
                     std::int64_t work, const std::string& body, std::string what) {
  std::vector<bool> written(params.size(), false);
  written.back() = true;  // the output comes last
  return grid_kernel(g, name, std::move(params), std::move(written), work, body, std::move(what));
}

// One thread per output element folds its window: output (N, C, O...) = max over the
// window's elements of input (N, C, S...).
GeneratedKernel max_pool(const Graph& g, const PoolSpec& s, const std::string& stem) {
  const DType t = s.dtype;
  const std::string ct(ew_c_type(t));
  const StridedView &in = s.input, &out = s.output;
  const std::size_t r = s.window.size();
  std::int64_t numel = 1;
  for (std::int64_t d : out.dims) numel *= d;
  std::string body = cat(coordinates("e", out), "const long long base = ", at(in, {"c0", "c1"}),
                         ";\n", compute_type(t), " best = glia_max_identity_", ct, "();\n");
  for (std::size_t d = 0; d < r; ++d)
    body += cat("for (long long k", d, " = 0; k", d, " < ", lit(s.window[d]), "; ++k", d,
                ") {\nconst long long p", d, " = c", d + 2, " * ", lit(s.strides[d]), " + k", d,
                " * ", lit(s.dilations[d]), " - ", lit(s.padding_low[d]), ";\nif (p", d,
                " < 0 || p", d, " >= ", lit(in.dims[d + 2]), ") continue;\n");
  body += cat("best = glia_max_", ct, "(best, ",
              read_element(v(in.value), t, cat("base + ", at(in, view_names("p", r), 2))), ");\n",
              std::string(r, '}'), "\n",
              write_element(v(out.value), t, at(out, coordinate_names(r + 2)), "best"), "\n");
  return make(
      g, stem, {in.value, out.value}, numel, grid_loop("e", numel, body),
      cat("max pool ", times(s.window), " stride ", times(s.strides), ": ", numel, " windows"));
}

// One thread per input element gathers its gradient: for each window that holds it (in
// window order: the window index o ascending is the element's position k in it
// descending), the window's source value when it is that window's first maximum.
GeneratedKernel max_pool_backward(const Graph& g, const PoolSpec& s, const std::string& stem) {
  const DType t = s.dtype;
  const std::string ct(ew_c_type(t));
  const StridedView &in = s.input, &src = s.source, &out = s.output;
  const std::size_t r = s.window.size();
  std::int64_t numel = 1;
  for (std::int64_t d : out.dims) numel *= d;
  // A NaN beats numbers, and nothing beats a NaN.
  const bool floating = is_float(t);
  const std::string self_beats_x = floating ? "(self != self ? x == x : self > x)" : "(self > x)";
  const std::string x_beats_self = floating ? "(x != x ? self == self : x > self)" : "(x > self)";
  std::string body = cat(
      coordinates("e", out), "const long long base = ", at(in, {"c0", "c1"}),
      ", source_base = ", at(src, {"c0", "c1"}), ";\nconst ", compute_type(t),
      " self = ", read_element(v(in.value), t, cat("base + ", at(in, coordinate_names(r + 2), 2))),
      ";\n", "glia_sum_acc_", ct, " acc = glia_sum_identity_", ct, "();\n");
  for (std::size_t d = 0; d < r; ++d) {
    const std::int64_t stride = s.strides[d];
    body += cat("for (long long k", d, " = ", lit(s.window[d] - 1), "; k", d, " >= 0; --k", d,
                ") {\nconst long long u", d, " = c", d + 2, " + ", lit(s.padding_low[d]), " - k", d,
                " * ", lit(s.dilations[d]), ";\nif (u", d, " < 0",
                stride == 1 ? "" : cat(" || u", d, " % ", lit(stride), " != 0"),
                ") continue;\nconst long long o", d, " = u", d,
                stride == 1 ? "" : cat(" / ", lit(stride)), ";\nif (o", d,
                " >= ", lit(src.dims[d + 2]), ") break;\n");
  }
  // Window o holds the element at position k: scan its other elements j in window order.
  body +=
      cat("const long long self_at = ", window_position("k", s.window), ";\nbool first = true;\n");
  for (std::size_t d = 0; d < r; ++d)
    body += cat("for (long long j", d, " = 0; first && j", d, " < ", lit(s.window[d]), "; ++j", d,
                ") {\nconst long long q", d, " = o", d, " * ", lit(s.strides[d]), " + j", d, " * ",
                lit(s.dilations[d]), " - ", lit(s.padding_low[d]), ";\nif (q", d, " < 0 || q", d,
                " >= ", lit(in.dims[d + 2]), ") continue;\n");
  body += cat("const long long j = ", window_position("j", s.window),
              ";\nif (j == self_at) continue;\nconst ", compute_type(t),
              " x = ", read_element(v(in.value), t, cat("base + ", at(in, view_names("q", r), 2))),
              ";\nfirst = j < self_at ? ", self_beats_x, " : !", x_beats_self, ";\n",
              std::string(r, '}'), "\nif (first) acc = glia_sum_combine_", ct,
              "(acc, glia_sum_widen_", ct, "(",
              read_element(v(src.value), t, cat("source_base + ", at(src, view_names("o", r), 2))),
              "));\n", std::string(r, '}'), "\n",
              write_element(v(out.value), t, at(out, coordinate_names(r + 2)),
                            cat("glia_sum_narrow_", ct, "(acc)")),
              "\n");
  return make(g, stem, {in.value, src.value, out.value}, numel, grid_loop("e", numel, body),
              cat("max pool adjoint ", times(s.window), " stride ", times(s.strides),
                  ": gathered into ", numel, " elements"));
}

}  // namespace

std::vector<GeneratedKernel> pool_kernels(const Graph& graph, const PoolSpec& spec,
                                          const std::string& stem) {
  if (graph.type(spec.output.value).shape.numel() == 0) return {};
  if (spec.kind == PoolSpec::Kind::max) return {max_pool(graph, spec, stem)};
  return {max_pool_backward(graph, spec, stem)};
}

// Every PoolSpec the lowering makes is generated (any numeric dtype, any number of
// spatial dims) but the adjoint that folds in relu's mask: the lowering then offers the
// plain adjoint, and the mask's select runs in a fused kernel.
std::string pool_declines(const Graph&, const PoolSpec& spec) {
  return spec.positive_input_only ? "relu's mask folded into max pooling's adjoint" : "";
}

// What the lowering leaves (lowering/pool.cpp makes no PoolSpec of it).
std::string pool_fallback(const Graph& graph, ValueId node) {
  const Node& n = graph.node(node);
  if (n.type.shape.numel() == 0 || graph.type(n.inputs.back()).shape.numel() == 0)
    return "a zero-size pooling";
  const auto& a = std::get<WindowAttrs>(n.attrs);
  int trivial = 0;
  for (std::size_t i = 0; i < a.window.size(); ++i) {
    if (a.base_dilation[i] != 1) return "base dilation";
    trivial +=
        a.window[i] == 1 && a.strides[i] == 1 && a.padding_low[i] == 0 && a.padding_high[i] == 0;
  }
  const int pooled = int(a.window.size()) - std::min(trivial, 2);
  if (pooled == 0) return "a window of one element (a copy)";
  if (pooled > 3) return "windows over more than three axes besides batch and channels";
  return "";
}

}  // namespace glia::detail::cuda
