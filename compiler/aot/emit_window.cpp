// Max pooling and the direct kernels (window_sum, pad, concatenate, gather, argmax,
// argmin) as C loop nests over their shapes, with the node's attributes as constants.
#include <algorithm>
#include <numeric>

#include "aot/emitter.hpp"
#include "glia/core/attrs.hpp"
#include "glia/core/elementwise.hpp"
#include "glia/core/error.hpp"

namespace glia::aot::detail {

std::string emit_pool(Emitter& e, const PoolSpec& s) {
  check(s.kind == PoolSpec::Kind::max, "export: a max pool's adjoint");
  const std::size_t rank = s.output.dims.size(), r = rank - 2;
  // Loops over the output in its storage order (largest stride outermost).
  std::vector<std::size_t> order(rank);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return s.output.strides[a] > s.output.strides[b];
  });
  std::vector<std::string> names(rank);
  for (std::size_t d = 0; d < rank; ++d) names[d] = cat("o", d);
  std::string t = "{\n", close;
  for (std::size_t d : order) {
    t += loop(names[d], s.output.dims[d]);
    close += "}\n";
  }
  t += "float m = glia_max_identity_f32();\n";
  std::string xi = index_expr({names[0], names[1]}, {s.input.strides[0], s.input.strides[1]});
  for (std::size_t d = 0; d < r; ++d) {
    const std::string kd = cat("k", d), pd = cat("p", d);
    t += loop(kd, s.window[d]);
    t += cat("const int64_t ", pd, " = ", names[2 + d], " * ", lit(s.strides[d]), " + ", kd, " * ",
             lit(s.dilations[d]), " - ", lit(s.padding_low[d]), ";\n");
    t += cat("if (", pd, " < 0 || ", pd, " >= ", lit(s.input.dims[2 + d]), ") continue;\n");
    xi += cat(" + ", pd, " * ", lit(s.input.strides[2 + d]));
  }
  t += cat("m = glia_max_combine_f32(m, ", e.ptr(s.input.value), "[", xi, "]);\n");
  for (std::size_t d = 0; d < r; ++d) t += "}\n";
  t += cat(e.ptr(s.output.value), "[", index_expr(names, s.output.strides), "] = m;\n");
  return t + close + "}\n";
}

namespace {

// Loops over a dense shape: names o0.., and the row-major flat index expression.
std::string dense_loops(const Shape& shape, std::vector<std::string>& names, std::string& close,
                        std::string& flat) {
  std::string t;
  std::vector<std::int64_t> st = shape.strides();
  names.clear();
  for (int d = 0; d < shape.rank(); ++d) {
    names.push_back(cat("o", d));
    t += loop(names.back(), shape[d]);
    close += "}\n";
  }
  flat = index_expr(names, st);
  return t;
}

std::string emit_window_sum(Emitter& e, const Graph& g, const DirectSpec& s) {
  const Node& n = g.node(s.node);
  const auto& a = std::get<WindowAttrs>(n.attrs);
  const Shape& x = g.type(n.inputs[0]).shape;
  const std::string t = std::string(ew_c_type(n.type.dtype));
  std::vector<std::string> names;
  std::string close, flat;
  std::string text = "{\n" + dense_loops(n.type.shape, names, close, flat);
  text += cat("glia_sum_acc_", t, " acc = glia_sum_identity_", t, "();\n");
  std::vector<std::int64_t> xs = x.strides();
  std::string xi = "0";
  for (int d = 0; d < x.rank(); ++d) {
    auto u = std::size_t(d);
    const std::int64_t b = a.base_dilation[u], extent = x[d] == 0 ? 0 : (x[d] - 1) * b + 1;
    const std::string wd = cat("w", d), pd = cat("p", d);
    text += loop(wd, a.window[u]);
    text += cat("const int64_t ", pd, " = ", names[u], " * ", lit(a.strides[u]), " + ", wd, " * ",
                lit(a.window_dilation[u]), " - ", lit(a.padding_low[u]), ";\n");
    text += cat("if (", pd, " < 0 || ", pd, " >= ", lit(extent));
    if (b != 1) text += cat(" || ", pd, " % ", lit(b), " != 0");
    text += ") continue;\n";
    xi += cat(" + (", pd, b != 1 ? " / " + lit(b) : "", ") * ", lit(xs[u]));
  }
  text += cat("acc = glia_sum_combine_", t, "(acc, glia_sum_widen_", t, "(", e.ptr(n.inputs[0]),
              "[", xi, "]));\n");
  for (int d = 0; d < x.rank(); ++d) text += "}\n";
  text += cat(e.ptr(s.node), "[", flat, "] = (", c_type(n.type.dtype), ")glia_sum_narrow_", t,
              "(acc);\n");
  return text + close + "}\n";
}

std::string emit_pad(Emitter& e, const Graph& g, const DirectSpec& s) {
  const Node& n = g.node(s.node);
  const auto& a = std::get<PadAttrs>(n.attrs);
  const Shape& x = g.type(n.inputs[0]).shape;
  std::vector<std::string> names;
  std::string close, flat;
  std::string text = "{\n" + dense_loops(n.type.shape, names, close, flat);
  std::vector<std::int64_t> xs = x.strides();
  text += "int inside = 1;\nint64_t at = 0;\n";
  for (int d = 0; d < x.rank(); ++d) {
    auto u = std::size_t(d);
    const std::int64_t step = a.interior[u] + 1;
    const std::string q = cat("q", d);
    text += cat("const int64_t ", q, " = ", names[u], " - ", lit(a.low[u]), ";\n");
    text += cat("inside = inside && ", q, " >= 0");
    if (step != 1) text += cat(" && ", q, " % ", lit(step), " == 0");
    text += cat(" && ", q, step != 1 ? " / " + lit(step) : "", " < ", lit(x[d]), ";\n");
    text += cat("at += (", q, step != 1 ? " / " + lit(step) : "", ") * ", lit(xs[u]), ";\n");
  }
  text += cat(e.ptr(s.node), "[", flat, "] = inside ? ", e.ptr(n.inputs[0]),
              "[at] : ", e.ptr(n.inputs[1]), "[0];\n");
  return text + close + "}\n";
}

std::string emit_concatenate(Emitter& e, const Graph& g, const DirectSpec& s) {
  const Node& n = g.node(s.node);
  const auto axis = static_cast<int>(std::get<AxisAttrs>(n.attrs).axis);
  std::int64_t outer = 1;
  for (int i = 0; i < axis; ++i) outer *= n.type.shape[i];
  const auto size = static_cast<std::int64_t>(dtype_size(n.type.dtype));
  std::int64_t row = 0;
  std::vector<std::int64_t> blocks;
  for (ValueId in : n.inputs) {
    blocks.push_back(outer ? g.type(in).shape.numel() / outer * size : 0);
    row += blocks.back();
  }
  std::string text = "{\nunsigned char* dst = (unsigned char*)" + e.ptr(s.node) + ";\n";
  text += loop("o", outer);
  std::int64_t at = 0;
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    if (blocks[i] == 0) continue;
    text += cat("memcpy(dst + o * ", lit(row), " + ", lit(at), ", (const unsigned char*)",
                e.ptr(n.inputs[i]), " + o * ", lit(blocks[i]), ", ", lit(blocks[i]), ");\n");
    at += blocks[i];
  }
  return text + "}\n}\n";
}

std::string emit_gather(Emitter& e, const Graph& g, const DirectSpec& s) {
  const Node& n = g.node(s.node);
  const std::int64_t count = g.type(n.inputs[1]).shape.numel(), inner = s.split.inner;
  const std::int64_t bytes = inner * static_cast<std::int64_t>(dtype_size(n.type.dtype));
  std::string text = "{\n" + loop("o", s.split.outer) + loop("j", count);
  text += cat("const int64_t q = (int64_t)", e.ptr(n.inputs[1]), "[j];\n");
  text += cat("if (q < 0 || q >= ", lit(s.split.size), ") return 2;\n");
  text += cat("memcpy(", e.ptr(s.node), " + (o * ", lit(count), " + j) * ", lit(inner), ", ",
              e.ptr(n.inputs[0]), " + (o * ", lit(s.split.size), " + q) * ", lit(inner), ", ",
              lit(bytes), ");\n");
  return text + "}\n}\n}\n";
}

std::string emit_arg_reduce(Emitter& e, const Graph& g, const DirectSpec& s, bool max) {
  const Node& n = g.node(s.node);
  const std::string ct = c_type(g.type(n.inputs[0]).dtype);
  const std::int64_t size = s.split.size, inner = s.split.inner;
  const std::string x = e.ptr(n.inputs[0]), y = e.ptr(s.node);
  std::string text = "{\n" + loop("o", s.split.outer) + loop("i", inner);
  text += cat(ct, " best = ", x, "[o * ", lit(size * inner), " + i];\nint64_t at = 0;\n");
  text += cat("for (int64_t k = 1; k < ", lit(size), "; ++k) {\n");
  text += "if (best != best) break; /* a NaN stays the extreme */\n";
  text +=
      cat("const ", ct, " v = ", x, "[o * ", lit(size * inner), " + k * ", lit(inner), " + i];\n");
  text += cat("if (v != v || v ", max ? ">" : "<", " best) { best = v; at = k; }\n}\n");
  text += cat(y, "[o * ", lit(inner), " + i] = at;\n");
  return text + "}\n}\n}\n";
}

}  // namespace

std::string emit_direct(Emitter& e, const DirectSpec& s) {
  const Graph& g = e.graph();
  switch (s.op) {
    case Op::window_sum:
      return emit_window_sum(e, g, s);
    case Op::pad:
      return emit_pad(e, g, s);
    case Op::concatenate:
      return emit_concatenate(e, g, s);
    case Op::gather:
      return emit_gather(e, g, s);
    case Op::argmax:
    case Op::argmin:
      return emit_arg_reduce(e, g, s, s.op == Op::argmax);
    default:
      throw Error(cat("export: no C kernel for ", op_name(s.op)));
  }
}

}  // namespace glia::aot::detail
