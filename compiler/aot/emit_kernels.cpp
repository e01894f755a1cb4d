// Matmul, convolution, pooling and direct kernels as C. The matmul calls the runtime's
// glia_gemm_f32 (runtime.h) per batch index, then runs its epilogue over the result; the
// others are loop nests with the program's shapes, strides and paddings as constants.
#include <algorithm>
#include <numeric>

#include "aot/emitter.hpp"
#include "glia/core/attrs.hpp"
#include "glia/core/elementwise.hpp"
#include "glia/core/error.hpp"

namespace glia::aot::detail {

namespace {

// `v = step(v)` for each epilogue step; `index(op)` is the operand's offset expression.
template <class Index>
std::string epilogue_code(Emitter& e, const EpilogueSpec& ep, const Index& index) {
  std::string s;
  std::size_t next = 0;
  for (EpilogueSpec::Step step : ep.steps) {
    switch (step) {
      case EpilogueSpec::Step::add: {
        const EpilogueSpec::Operand& o = ep.operands[next++];
        s += cat("v += ", e.ptr(o.value), "[", index(o.strides), "];\n");
        break;
      }
      case EpilogueSpec::Step::relu:  // max(v, 0) with NaN kept
        s += "v = v < 0.0f ? 0.0f : v;\n";
        break;
      case EpilogueSpec::Step::tanh:
        s += "v = glia_tanh_f32(v);\n";
        break;
      case EpilogueSpec::Step::logistic:
        s += "v = glia_logistic_f32(v);\n";
        break;
    }
  }
  return s;
}

// sum(names[i] * strides[i]) over the non-zero strides, from `base`.
std::string index_expr(const std::vector<std::string>& names,
                       const std::vector<std::int64_t>& strides, std::string base = "0") {
  for (std::size_t i = 0; i < names.size() && i < strides.size(); ++i)
    if (strides[i] != 0 && !names[i].empty())
      base += cat(" + ", names[i], strides[i] == 1 ? "" : " * " + lit(strides[i]));
  return base;
}

}  // namespace

std::string loop(const std::string& v, std::int64_t n) {
  return cat("for (int64_t ", v, " = 0; ", v, " < ", lit(n), "; ++", v, ") {\n");
}

std::string emit_matmul(Emitter& e, const Kernel& k, const MatmulSpec& s) {
  const std::size_t nb = s.batch.size();
  const ValueId out = k.outputs.front();
  std::string text, close;
  std::vector<std::string> b;
  for (std::size_t d = 0; d < nb; ++d) {
    b.push_back(cat("b", d));
    text += loop(b.back(), s.batch[d]);
    close += "}\n";
  }
  const std::string a0 = index_expr(b, s.lhs_strides), w0 = index_expr(b, s.rhs_strides),
                    c0 = index_expr(b, s.out_strides);
  text +=
      cat("glia_gemm_f32(", lit(s.m), ", ", lit(s.n), ", ", lit(s.k), ", ", e.ptr(s.lhs), " + ", a0,
          ", ", lit(s.lhs_strides[nb]), ", ", lit(s.lhs_strides[nb + 1]), ", ", e.ptr(s.rhs), " + ",
          w0, ", ", lit(s.rhs_strides[nb]), ", ", lit(s.rhs_strides[nb + 1]), ", ", e.ptr(out),
          " + ", c0, ", ", lit(s.out_strides[nb]), ", ", lit(s.out_strides[nb + 1]), ");\n");
  if (!s.epilogue.empty()) {
    std::vector<std::string> names = b;
    names.push_back("i");
    names.push_back("j");
    text += loop("i", s.m) + loop("j", s.n);
    const std::string at = cat(e.ptr(out), "[", index_expr(names, s.out_strides), "]");
    text += cat("float v = ", at, ";\n");
    text += epilogue_code(
        e, s.epilogue, [&](const std::vector<std::int64_t>& st) { return index_expr(names, st); });
    text += cat(at, " = v;\n}\n}\n");
  }
  return "{\n" + text + close + "}\n";
}

namespace {

// The input gradient form (a transposed convolution): each src element sums dst * weights
// over the kernel positions and output channels that the forward pass would have sent it
// to: src[n, c, i] = sum over o, k with i = j * stride + k * dilation - padding_low.
std::string emit_conv_backward_data(Emitter& e, const ConvSpec& s) {
  const std::size_t r = s.src.dims.size() - 2;
  const std::int64_t g = s.groups;
  const std::size_t w0 = g > 1 ? 1 : 0;
  const std::int64_t og = s.weights.dims[w0], cg = s.weights.dims[w0 + 1];
  const std::int64_t wg = g > 1 ? s.weights.strides[0] : 0;
  const std::string x = e.ptr(s.src.value), w = e.ptr(s.weights.value), y = e.ptr(s.dst.value);
  std::string t = "{\n" + loop("n", s.src.dims[0]) + loop("g", g) + loop("c", cg), close;
  close += "}\n}\n}\n";
  std::vector<std::string> is;
  for (std::size_t d = 0; d < r; ++d) {
    is.push_back(cat("i", d));
    t += loop(is.back(), s.src.dims[2 + d]);
    close += "}\n";
  }
  t += "float acc = 0.0f;\n";
  std::string yi = cat("n * ", lit(s.dst.strides[0]));
  std::string wi = cat("g * ", lit(wg), " + c * ", lit(s.weights.strides[w0 + 1]));
  for (std::size_t d = 0; d < r; ++d) {
    const std::string kd = cat("k", d), td = cat("t", d), jd = cat("j", d);
    t += loop(kd, s.weights.dims[w0 + 2 + d]);
    t += cat("const int64_t ", td, " = ", is[d], " + ", lit(s.padding_low[d]), " - ", kd, " * ",
             lit(s.dilations[d]), ";\n");
    t += cat("if (", td, " < 0 || ", td, " % ", lit(s.strides[d]), " != 0) continue;\n");
    t += cat("const int64_t ", jd, " = ", td, " / ", lit(s.strides[d]), ";\n");
    t += cat("if (", jd, " >= ", lit(s.dst.dims[2 + d]), ") continue;\n");
    yi += cat(" + ", jd, " * ", lit(s.dst.strides[2 + d]));
    wi += cat(" + ", kd, " * ", lit(s.weights.strides[w0 + 2 + d]));
  }
  t += loop("o", og);
  t += cat("acc += ", y, "[", yi, " + (g * ", lit(og), " + o) * ", lit(s.dst.strides[1]), "] * ", w,
           "[", wi, " + o * ", lit(s.weights.strides[w0]), "];\n}\n");
  for (std::size_t d = 0; d < r; ++d) t += "}\n";
  std::vector<std::string> names{"n", "ic"};
  names.insert(names.end(), is.begin(), is.end());
  t += cat("const int64_t ic = g * ", lit(cg), " + c;\n");
  t += cat(x, "[", index_expr(names, s.src.strides), "] = acc;\n");
  return t + close + "}\n";
}

}  // namespace

std::string emit_conv(Emitter& e, const Kernel& k, const ConvSpec& s) {
  (void)k;
  if (s.pass == ConvSpec::Pass::backward_data) return emit_conv_backward_data(e, s);
  check(s.pass == ConvSpec::Pass::forward, "export: a convolution's kernel gradient");
  const std::size_t r = s.dst.dims.size() - 2;  // spatial rank
  const std::int64_t g = s.groups;
  const std::size_t w0 = g > 1 ? 1 : 0;  // weights: [(G,) O/G, C/G, K...]
  const std::int64_t og = s.weights.dims[w0], cg = s.weights.dims[w0 + 1];
  const std::int64_t wg = g > 1 ? s.weights.strides[0] : 0, wo = s.weights.strides[w0],
                     wc = s.weights.strides[w0 + 1];
  const std::string x = e.ptr(s.src.value), w = e.ptr(s.weights.value), y = e.ptr(s.dst.value);
  std::string t = "{\n", close;
  t += loop("n", s.dst.dims[0]) + loop("g", g);
  close += "}\n}\n";
  std::vector<std::string> os;
  for (std::size_t d = 0; d < r; ++d) {
    os.push_back(cat("o", d));
    t += loop(os.back(), s.dst.dims[2 + d]);
    close += "}\n";
  }
  t += cat("float acc[", lit(og), "];\n", "for (int64_t o = 0; o < ", lit(og),
           "; ++o) acc[o] = 0.0f;\n");
  std::string xi = cat("n * ", lit(s.src.strides[0]));
  std::string wi = cat("g * ", lit(wg));
  for (std::size_t d = 0; d < r; ++d) {
    const std::string kd = cat("k", d), pd = cat("p", d);
    t += loop(kd, s.weights.dims[w0 + 2 + d]);
    t += cat("const int64_t ", pd, " = ", os[d], " * ", lit(s.strides[d]), " + ", kd, " * ",
             lit(s.dilations[d]), " - ", lit(s.padding_low[d]), ";\n");
    t += cat("if (", pd, " < 0 || ", pd, " >= ", lit(s.src.dims[2 + d]), ") continue;\n");
    xi += cat(" + ", pd, " * ", lit(s.src.strides[2 + d]));
    wi += cat(" + ", kd, " * ", lit(s.weights.strides[w0 + 2 + d]));
  }
  t += loop("c", cg);
  t += cat("const float xv = ", x, "[", xi, " + (g * ", lit(cg), " + c) * ", lit(s.src.strides[1]),
           "];\n");
  t += cat("const float* restrict wr = ", w, " + ", wi, " + c * ", lit(wc), ";\n");
  t += cat("for (int64_t o = 0; o < ", lit(og), "; ++o) acc[o] += xv * wr[o",
           wo == 1 ? "" : " * " + lit(wo), "];\n");
  t += "}\n";
  for (std::size_t d = 0; d < r; ++d) t += "}\n";
  // The epilogue and the store, per output channel of the group.
  std::vector<std::string> names{"n", "oc"};
  names.insert(names.end(), os.begin(), os.end());
  t += loop("o", og);
  t += cat("const int64_t oc = g * ", lit(og), " + o;\n", "float v = acc[o];\n");
  t += epilogue_code(e, s.epilogue,
                     [&](const std::vector<std::int64_t>& st) { return index_expr(names, st); });
  t += cat(y, "[", index_expr(names, s.dst.strides), "] = v;\n}\n");
  return t + close + "}\n";
}

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

std::string emit_general_conv(Emitter& e, ValueId node) {
  const Graph& g = e.graph();
  const Node& n = g.node(node);
  const auto& a = std::get<ConvAttrs>(n.attrs);
  check(a.batch_groups == 1 && n.type.dtype == DType::f32,
        "export: a batch-grouped or non-f32 convolution");
  const Shape& xs = g.type(n.inputs[0]).shape;
  const Shape& ws = g.type(n.inputs[1]).shape;
  const Shape& ys = n.type.shape;
  const std::size_t r = std::size_t(ys.rank() - 2);
  const std::int64_t og = ys[1] / a.feature_groups, cg = ws[1];
  const std::vector<std::int64_t> xst = xs.strides(), wst = ws.strides(), yst = ys.strides();
  const std::string x = e.ptr(n.inputs[0]), w = e.ptr(n.inputs[1]), y = e.ptr(node);
  std::string t = "{\n" + loop("n", ys[0]) + loop("o", ys[1]), close = "}\n}\n";
  std::vector<std::string> os{"n", "o"};
  for (std::size_t d = 0; d < r; ++d) {
    os.push_back(cat("y", d));
    t += loop(os.back(), ys[int(2 + d)]);
    close += "}\n";
  }
  t += cat("const int64_t grp = o / ", lit(og), ";\nfloat acc = 0.0f;\n");
  std::string xi = cat("n * ", lit(xst[0])), wi = cat("o * ", lit(wst[0]));
  for (std::size_t d = 0; d < r; ++d) {
    const std::string kd = cat("k", d), pd = cat("p", d);
    const std::int64_t dil = a.input_dilation[d];
    t += loop(kd, ws[int(2 + d)]);
    t += cat("const int64_t ", pd, " = ", os[2 + d], " * ", lit(a.strides[d]), " + ", kd, " * ",
             lit(a.kernel_dilation[d]), " - ", lit(a.padding_low[d]), ";\n");
    t += cat("if (", pd, " < 0", dil != 1 ? cat(" || ", pd, " % ", lit(dil), " != 0") : "", " || ",
             pd, dil != 1 ? " / " + lit(dil) : "", " >= ", lit(xs[int(2 + d)]), ") continue;\n");
    xi += cat(" + (", pd, dil != 1 ? " / " + lit(dil) : "", ") * ", lit(xst[2 + d]));
    wi += cat(" + ", kd, " * ", lit(wst[2 + d]));
  }
  t += loop("c", cg);
  t += cat("acc += ", x, "[", xi, " + (grp * ", lit(cg), " + c) * ", lit(xst[1]), "] * ", w, "[",
           wi, " + c * ", lit(wst[1]), "];\n}\n");
  for (std::size_t d = 0; d < r; ++d) t += "}\n";
  t += cat(y, "[", index_expr(os, yst), "] = acc;\n");
  return t + close + "}\n";
}

std::string emit_general_dot(Emitter& e, ValueId node) {
  const Graph& g = e.graph();
  const Node& n = g.node(node);
  const auto& a = std::get<DotAttrs>(n.attrs);
  const Shape& ls = g.type(n.inputs[0]).shape;
  const Shape& rs = g.type(n.inputs[1]).shape;
  const Shape& ys = n.type.shape;
  const std::string ct = c_type(n.type.dtype);
  const std::string l = e.ptr(n.inputs[0]), r = e.ptr(n.inputs[1]), y = e.ptr(node);
  std::string t = "{\n", close;
  std::vector<std::string> out;
  for (int d = 0; d < ys.rank(); ++d) {
    out.push_back(cat("o", d));
    t += loop(out.back(), ys[d]);
    close += "}\n";
  }
  t += cat(ct, " acc = 0;\n");
  for (std::size_t q = 0; q < a.lhs_contract.size(); ++q)
    t += loop(cat("k", q), ls[int(a.lhs_contract[q])]);
  // Each operand axis: a batch axis (output axis p), a contracted one (k_q) or a free one
  // (the next output axis after the batch axes and the lhs's free axes).
  auto index = [&](const Shape& shape, const Ints& batch, const Ints& contract,
                   std::size_t free_start) {
    std::vector<std::int64_t> st = shape.strides();
    std::string e2 = "0";
    std::size_t next = free_start;
    for (int d = 0; d < shape.rank(); ++d) {
      std::string v;
      if (auto it = std::find(batch.begin(), batch.end(), d); it != batch.end())
        v = out[std::size_t(it - batch.begin())];
      else if (auto c = std::find(contract.begin(), contract.end(), d); c != contract.end())
        v = cat("k", c - contract.begin());
      else
        v = out[next++];
      e2 += cat(" + ", v, " * ", lit(st[std::size_t(d)]));
    }
    return e2;
  };
  const std::size_t lhs_free = std::size_t(ls.rank()) - a.lhs_batch.size() - a.lhs_contract.size();
  t += cat("acc += ", l, "[", index(ls, a.lhs_batch, a.lhs_contract, a.lhs_batch.size()), "] * ", r,
           "[", index(rs, a.rhs_batch, a.rhs_contract, a.lhs_batch.size() + lhs_free), "];\n");
  for (std::size_t q = 0; q < a.lhs_contract.size(); ++q) t += "}\n";
  t += cat(y, "[", index_expr(out, ys.strides()), "] = acc;\n");
  return t + close + "}\n";
}

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
