// Contractions as C: a matmul calls the runtime's glia_gemm_f32 (runtime.h) per batch index,
// then runs its epilogue over the result; convolutions (forward with epilogue, the input
// gradient a transposed convolution computes, and XLA's general dilated form where no
// ConvSpec took a node) and dot_generals that fold into no strided matmul are loop nests
// with the program's shapes, strides and paddings as constants.
#include <algorithm>

#include "aot/emitter.hpp"
#include "glia/core/attrs.hpp"
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

}  // namespace

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

std::string emit_conv(Emitter& e, const ConvSpec& s) {
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

}  // namespace glia::aot::detail
