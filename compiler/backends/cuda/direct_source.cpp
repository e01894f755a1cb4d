// Direct kernels as CUDA source: one thread per output element (per (outer, inner) pair
// for argmax/argmin), computing exactly what core's reference kernels compute — sums in
// the sum monoid's accumulator, the first extreme index with a NaN winning. scatter_add
// accumulates in scratch (double for floats, u64 for integers, as the monoid does) with
// atomics, then narrows. A gather or scatter index out of range is recorded in the
// status word (the host raises the error after the run) and its element skipped.
#include "backends/cuda/kernel_source.hpp"
#include "glia/core/attrs.hpp"
#include "glia/core/elementwise.hpp"
#include "glia/core/error.hpp"

namespace glia::detail::cuda {

namespace {

std::string lit(std::int64_t v) { return int_literal(v); }
std::string v(ValueId id) { return cat("v", id); }

GeneratedKernel make(const Graph& g, std::string name, std::vector<ValueId> params,
                     std::vector<bool> written, std::int64_t work, const std::string& body,
                     std::string what) {
  return grid_kernel(g, std::move(name), std::move(params), std::move(written), work, body,
                     std::move(what));
}

// The coordinates of flat index `i` over `dims` as locals c0, c1, ...
std::string coordinates(const std::string& i, const std::vector<std::int64_t>& dims) {
  std::string text = cat("long long rest = ", i, ";\n");
  for (std::size_t d = dims.size(); d-- > 0;)
    text +=
        cat("const long long c", d, " = rest % ", lit(dims[d]), "; rest /= ", lit(dims[d]), ";\n");
  return text + "(void)rest;\n";
}

// An index operand's element as a long long (indices may be any integer dtype).
std::string index_at(ValueId id, const std::string& at) {
  return cat("(long long)", v(id), "[", at, "]");
}

std::vector<GeneratedKernel> gather(const Graph& g, const DirectSpec& s, const std::string& stem) {
  const Node& n = g.node(s.node);
  const AxisSplit& x = s.split;  // the table as (outer, size, inner)
  const std::int64_t count = g.type(n.inputs[1]).shape.numel();
  const std::int64_t numel = n.type.shape.numel();
  const DType t = n.type.dtype;
  // Output (o, j, k) = table (o, idx[j], k).
  std::string body =
      cat("const long long k = e % ", lit(x.inner), ", j = e / ", lit(x.inner), " % ", lit(count),
          ", o = e / ", lit(x.inner * count), ";\n",
          "const long long at = ", index_at(n.inputs[1], "j"), ";\n",
          "if (at < 0 || at >= ", lit(x.size), ") { atomicCAS(status, 0, 1); ", v(s.node),
          "[e] = (", storage_type(t), ")0; continue; }\n", v(s.node), "[e] = ", v(n.inputs[0]),
          "[(o * ", lit(x.size), " + at) * ", lit(x.inner), " + k];\n");
  return {make(g, stem, {n.inputs[0], n.inputs[1], s.node, kStatusParam},
               {false, false, true, true}, numel, grid_loop("e", numel, body),
               cat("gather ", numel, " elements"))};
}

std::vector<GeneratedKernel> scatter_add(const Graph& g, const DirectSpec& s,
                                         const std::string& stem) {
  const Node& n = g.node(s.node);
  const AxisSplit& x = s.split;  // the target as (outer, size, inner)
  const std::int64_t count = g.type(n.inputs[1]).shape.numel();
  const std::int64_t numel = n.type.shape.numel(), updates = x.outer * count * x.inner;
  const DType t = n.type.dtype;
  const std::string ct(ew_c_type(t));
  const std::string acc = is_float(t) ? "double" : "unsigned long long";
  const std::string accs = cat("((", acc, "*)scratch)");
  // widen(target) -> scratch; atomically add widen(update) at each index; narrow -> out.
  std::string init = cat(accs, "[e] = (", acc, ")glia_sum_widen_", ct, "(",
                         read_element(v(n.inputs[0]), t, "e"), ");\n");
  std::string add =
      cat("const long long k = e % ", lit(x.inner), ", j = e / ", lit(x.inner), " % ", lit(count),
          ", o = e / ", lit(x.inner * count), ";\n",
          "const long long at = ", index_at(n.inputs[1], "j"), ";\n",
          "if (at < 0 || at >= ", lit(x.size), ") { atomicCAS(status, 0, 1); continue; }\n",
          "atomicAdd(&", accs, "[(o * ", lit(x.size), " + at) * ", lit(x.inner), " + k], (", acc,
          ")glia_sum_widen_", ct, "(", read_element(v(n.inputs[2]), t, "e"), "));\n");
  std::string narrow =
      write_element(v(s.node), t, "e", cat("glia_sum_narrow_", ct, "(", accs, "[e])")) + "\n";
  auto kernels = std::vector<GeneratedKernel>{
      make(g, stem + "_widen", {n.inputs[0], kScratchParam}, {false, true}, numel,
           grid_loop("e", numel, init), "scatter_add: widen the target"),
      make(g, stem + "_add", {n.inputs[1], n.inputs[2], kScratchParam, kStatusParam},
           {false, false, true, true}, updates, grid_loop("e", updates, add),
           cat("scatter_add: ", updates, " atomic adds")),
      make(g, stem + "_narrow", {kScratchParam, s.node}, {false, true}, numel,
           grid_loop("e", numel, narrow), "scatter_add: narrow")};
  kernels[0].scratch_bytes = numel * 8;
  return kernels;
}

std::vector<GeneratedKernel> pad(const Graph& g, const DirectSpec& s, const std::string& stem) {
  const Node& n = g.node(s.node);
  const auto& a = std::get<PadAttrs>(n.attrs);
  const Shape& x = g.type(n.inputs[0]).shape;
  const std::vector<std::int64_t> strides = x.strides();
  const std::int64_t numel = n.type.shape.numel();
  // Output position o on an axis is input element (o - low) / (interior + 1) when that
  // division is exact and in range; anything else is the padding value.
  std::string body =
      coordinates("e", n.type.shape.dims()) + "long long src = 0;\nbool inside = true;\n";
  for (int d = 0; d < x.rank(); ++d) {
    const auto u = std::size_t(d);
    const std::int64_t step = a.interior[u] + 1;
    body += cat("{ const long long p = c", d, " - (", lit(a.low[u]), "); inside = inside && p >= 0",
                step == 1 ? "" : cat(" && p % ", lit(step), " == 0"), " && p / ", lit(step), " < ",
                lit(x[d]), "; src += p / ", lit(step), " * ", lit(strides[u]), "; }\n");
  }
  body += cat(v(s.node), "[e] = inside ? ", v(n.inputs[0]), "[src] : ", v(n.inputs[1]), "[0];\n");
  return {make(g, stem, {n.inputs[0], n.inputs[1], s.node}, {false, false, true}, numel,
               grid_loop("e", numel, body), cat("pad ", numel, " elements"))};
}

std::vector<GeneratedKernel> concatenate(const Graph& g, const DirectSpec& s,
                                         const std::string& stem) {
  const Node& n = g.node(s.node);
  const auto axis = std::size_t(std::get<AxisAttrs>(n.attrs).axis);
  const AxisSplit out = split_at(n.type.shape, std::int64_t(axis));
  const std::int64_t numel = n.type.shape.numel();
  // Output (o, a, k): the input whose slab holds a, at (o, a - start, k).
  std::string body = cat("const long long k = e % ", lit(out.inner), ", a = e / ", lit(out.inner),
                         " % ", lit(out.size), ", o = e / ", lit(out.inner * out.size), ";\n");
  std::vector<ValueId> params;
  std::vector<bool> written;
  std::int64_t start = 0;
  for (ValueId in : n.inputs) {
    const std::int64_t size = g.type(in).shape[int(axis)];
    if (std::find(params.begin(), params.end(), in) == params.end()) {
      params.push_back(in);
      written.push_back(false);
    }
    body += cat(start == 0 ? "" : "else ", "if (a < ", lit(start + size), ") ", v(s.node),
                "[e] = ", v(in), "[(o * ", lit(size), " + a - ", lit(start), ") * ", lit(out.inner),
                " + k];\n");
    start += size;
  }
  params.push_back(s.node);
  written.push_back(true);
  return {make(g, stem, params, written, numel, grid_loop("e", numel, body),
               cat("concatenate ", n.inputs.size(), " inputs"))};
}

std::vector<GeneratedKernel> arg_reduce(const Graph& g, const DirectSpec& s,
                                        const std::string& stem) {
  const Node& n = g.node(s.node);
  const AxisSplit& x = s.split;
  const DType t = g.type(n.inputs[0]).dtype;
  const bool floating = is_float(t);
  const char* beats = n.op == Op::argmax ? ">" : "<";
  const std::int64_t rows = x.outer * x.inner;
  // The first extreme in axis order; a NaN, once met, is the answer.
  std::string body =
      cat("const long long i = e % ", lit(x.inner), ", o = e / ", lit(x.inner), ";\n",
          "const long long base = o * ", lit(x.size * x.inner), " + i;\n", compute_type(t),
          " best = ", read_element(v(n.inputs[0]), t, "base"), ";\n", "long long best_k = 0;\n",
          "for (long long k = 1; k < ", lit(x.size), "; ++k) {\n",
          floating ? "if (best != best) break;\n" : "", "const ", compute_type(t),
          " x = ", read_element(v(n.inputs[0]), t, cat("base + k * ", lit(x.inner))), ";\n", "if (",
          floating ? "x != x || " : "", "x ", beats, " best) { best = x; best_k = k; }\n}\n",
          v(s.node), "[e] = best_k;\n");
  return {make(g, stem, {n.inputs[0], s.node}, {false, true}, rows, grid_loop("e", rows, body),
               cat(op_name(n.op), " over ", x.size))};
}

std::vector<GeneratedKernel> window_sum(const Graph& g, const DirectSpec& s,
                                        const std::string& stem) {
  const Node& n = g.node(s.node);
  const auto& a = std::get<WindowAttrs>(n.attrs);
  const Shape& x = g.type(n.inputs[0]).shape;
  const std::vector<std::int64_t> strides = x.strides();
  const DType t = n.type.dtype;
  const std::string ct(ew_c_type(t));
  const std::int64_t numel = n.type.shape.numel();
  std::int64_t window = 1;
  for (std::int64_t w : a.window) window *= w;
  // Each output element sums its window's operand elements in window order (padding and
  // base-dilation holes skipped), in the sum monoid's accumulator.
  std::string body = coordinates("e", n.type.shape.dims()) +
                     cat("glia_sum_acc_", ct, " acc = glia_sum_identity_", ct, "();\n",
                         "for (long long w = 0; w < ", lit(window), "; ++w) {\n",
                         "long long wrest = w, src = 0;\nbool inside = true;\n");
  for (int d = x.rank(); d-- > 0;) {
    const auto u = std::size_t(d);
    const std::int64_t b = a.base_dilation[u], extent = x[d] == 0 ? 0 : (x[d] - 1) * b + 1;
    body += cat("{ const long long wd = wrest % ", lit(a.window[u]),
                "; wrest /= ", lit(a.window[u]), ";\nconst long long p = c", d, " * ",
                lit(a.strides[u]), " + wd * ", lit(a.window_dilation[u]), " - (",
                lit(a.padding_low[u]), ");\n", "inside = inside && p >= 0 && p < ", lit(extent),
                b == 1 ? "" : cat(" && p % ", lit(b), " == 0"), ";\nsrc += p / ", lit(b), " * ",
                lit(strides[u]), "; }\n");
  }
  body += cat("if (inside) acc = glia_sum_combine_", ct, "(acc, glia_sum_widen_", ct, "(",
              read_element(v(n.inputs[0]), t, "src"), "));\n}\n",
              write_element(v(s.node), t, "e", cat("glia_sum_narrow_", ct, "(acc)")), "\n");
  return {make(g, stem, {n.inputs[0], s.node}, {false, true}, numel, grid_loop("e", numel, body),
               cat("window sum over ", window))};
}

}  // namespace

std::vector<GeneratedKernel> direct_kernels(const Graph& graph, const DirectSpec& spec,
                                            const std::string& stem) {
  if (graph.node(spec.node).type.shape.numel() == 0) return {};
  switch (spec.op) {
    case Op::gather:
      return gather(graph, spec, stem);
    case Op::scatter_add:
      return scatter_add(graph, spec, stem);
    case Op::pad:
      return pad(graph, spec, stem);
    case Op::concatenate:
      return concatenate(graph, spec, stem);
    case Op::argmax:
    case Op::argmin:
      return arg_reduce(graph, spec, stem);
    case Op::window_sum:
      return window_sum(graph, spec, stem);
    default:
      throw Error(cat("cuda: no direct kernel for ", op_name(spec.op)));
  }
}

}  // namespace glia::detail::cuda
