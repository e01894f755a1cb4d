// Shape layers: flatten, reshape, transpose, pad and resize. Every one keeps the batch
// axis (axis 0) and takes shapes and axes that leave it out. resize computes its source
// indices and weights on the host the way PyTorch does, then gathers with take.
#include "glia/layers/shaping.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "layer_util.hpp"

namespace glia {

namespace {

std::string ints_text(const std::vector<std::int64_t>& v) {
  std::string s = "[";
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

// The shape without its batch axis, e.g. "[4][5]"; glia::Error for a scalar input.
Shape example_shape(const Expr& x, std::string_view layer) {
  check(x.rank() >= 1, layer, ": expected an input with a batch axis, got a scalar");
  return Shape(std::vector<std::int64_t>(x.shape().begin() + 1, x.shape().end()));
}

}  // namespace

Model flatten(const Model& x, const ShapeOptions& o) {
  Model m = layer("flatten", {x},
                  [](LayerContext& c) {
                    const Expr& in = c.input();
                    Shape rest = example_shape(in, "flatten");
                    return glia::reshape(in, {in.dim(0), rest.numel()});
                  },
                  {}, {o.name});
  return detail::with_config(m, "{}");
}

Model reshape(const Model& x, std::vector<std::int64_t> shape, const ShapeOptions& o) {
  check(std::count(shape.begin(), shape.end(), -1) <= 1, "reshape: at most one -1 is allowed in ",
        ints_text(shape));
  for (std::int64_t d : shape)
    check(d >= -1, "reshape: dimension ", d, " in ", ints_text(shape), " is invalid");
  std::string options = cat("shape=", ints_text(shape));
  Model m = layer("reshape", {x},
                  [shape](LayerContext& c) {
                    const Expr& in = c.input();
                    Shape rest = example_shape(in, "reshape");
                    std::int64_t known = 1;
                    for (std::int64_t d : shape)
                      if (d != -1) known *= d;
                    std::vector<std::int64_t> dims{in.dim(0)};
                    for (std::int64_t d : shape) {
                      if (d != -1) {
                        dims.push_back(d);
                        continue;
                      }
                      check(known != 0 && rest.numel() % known == 0, "reshape: cannot reshape ",
                            rest.to_string(), " (", rest.numel(), " elements per example) to ",
                            ints_text(shape));
                      dims.push_back(rest.numel() / known);
                    }
                    check(Shape(std::vector<std::int64_t>(dims.begin() + 1, dims.end())).numel() ==
                              rest.numel(),
                          "reshape: cannot reshape ", rest.to_string(), " (", rest.numel(),
                          " elements per example) to ", ints_text(shape));
                    return glia::reshape(in, dims);
                  },
                  {}, {o.name});
  return detail::with_options(m, options, detail::ConfigWriter().integers("shape", shape).str());
}

Model transpose(const Model& x, std::vector<std::int64_t> perm, const ShapeOptions& o) {
  std::vector<std::int64_t> sorted = perm;
  std::sort(sorted.begin(), sorted.end());
  std::vector<std::int64_t> want(perm.size());
  std::iota(want.begin(), want.end(), 0);
  check(sorted == want, "transpose: ", ints_text(perm),
        " is not a permutation of the non-batch axes 0..", perm.size() - 1);
  std::string options = perm.empty() ? "perm=reversed" : cat("perm=", ints_text(perm));
  Model m = layer("transpose", {x},
                  [perm](LayerContext& c) {
                    const Expr& in = c.input();
                    int rank = example_shape(in, "transpose").rank();
                    std::vector<std::int64_t> p = perm;
                    if (p.empty())  // reverse the non-batch axes
                      for (int i = rank - 1; i >= 0; --i) p.push_back(i);
                    check(static_cast<int>(p.size()) == rank, "transpose: the permutation ",
                          ints_text(perm), " has ", p.size(), " axes, the input has ", rank,
                          " non-batch axes");
                    std::vector<std::int64_t> full{0};
                    for (std::int64_t a : p) full.push_back(a + 1);
                    return glia::transpose(in, full);
                  },
                  {}, {o.name});
  return detail::with_options(m, options, detail::ConfigWriter().integers("perm", perm).str());
}

Model pad(const Model& x, std::vector<std::pair<std::int64_t, std::int64_t>> padding, double value,
          const ShapeOptions& o) {
  std::string text;
  for (const auto& [lo, hi] : padding) {
    check(lo >= 0 && hi >= 0, "pad: padding must be non-negative, got (", lo, ", ", hi, ")");
    text += cat(text.empty() ? "" : ", ", "(", lo, ", ", hi, ")");
  }
  Model m = layer("pad", {x},
                  [padding, value](LayerContext& c) {
                    const Expr& in = c.input();
                    int rank = example_shape(in, "pad").rank();
                    check(static_cast<int>(padding.size()) == rank, "pad: expected ", rank,
                          " (low, high) pairs, one per non-batch axis, got ", padding.size());
                    Ints low{0}, high{0};
                    for (const auto& [lo, hi] : padding) {
                      low.push_back(lo);
                      high.push_back(hi);
                    }
                    return glia::pad(in, value, low, high);
                  },
                  {}, {o.name});
  return detail::with_options(
      m, cat("padding=[", text, "], value=", value),
      detail::ConfigWriter().pairs("padding", padding).number("value", value).str());
}

namespace {

// "nearest" samples at half-pixel centres, as Axon and JAX do (PyTorch's
// "nearest-exact"): source floor((dst + 0.5) * in / out), clamped to the input.
std::vector<std::int64_t> nearest_indices(std::int64_t in, std::int64_t out) {
  std::vector<std::int64_t> idx(static_cast<std::size_t>(out));
  float scale = static_cast<float>(in) / static_cast<float>(out);
  for (std::int64_t i = 0; i < out; ++i) {
    auto s = static_cast<std::int64_t>(std::floor((static_cast<float>(i) + 0.5f) * scale));
    idx[static_cast<std::size_t>(i)] = std::min(s, in - 1);
  }
  return idx;
}

// PyTorch's linear interpolation with align_corners=false: the source coordinate
// (dst + 0.5) * in / out - 0.5, clamped at 0; the upper neighbour clamped to the edge.
struct LinearTaps {
  std::vector<std::int64_t> lo, hi;
  std::vector<float> w_lo, w_hi;
};
LinearTaps linear_taps(std::int64_t in, std::int64_t out) {
  LinearTaps t;
  float scale = static_cast<float>(in) / static_cast<float>(out);
  for (std::int64_t i = 0; i < out; ++i) {
    float src = std::max(scale * (static_cast<float>(i) + 0.5f) - 0.5f, 0.0f);
    std::int64_t lo = std::min(static_cast<std::int64_t>(src), in - 1);
    std::int64_t hi = lo + (lo < in - 1 ? 1 : 0);
    float lambda = std::clamp(src - static_cast<float>(lo), 0.0f, 1.0f);
    t.lo.push_back(lo);
    t.hi.push_back(hi);
    t.w_lo.push_back(1.0f - lambda);
    t.w_hi.push_back(lambda);
  }
  return t;
}

// `w` ([out]) shaped to broadcast along `axis` of a rank-`rank` value, in `dtype`.
Expr along_axis(const std::vector<float>& w, int axis, int rank, DType dtype) {
  Ints dims(static_cast<std::size_t>(rank), 1);
  dims[static_cast<std::size_t>(axis)] = static_cast<std::int64_t>(w.size());
  return cast(glia::reshape(Expr(Tensor::from<float>(w)), dims), dtype);
}

}  // namespace

Model resize(const Model& x, std::vector<std::int64_t> size, const ResizeOptions& o) {
  check(o.method == "nearest" || o.method == "bilinear", "resize: unknown method '", o.method,
        "' (known: nearest, bilinear)");
  check(!size.empty(), "resize: the output size must name at least one spatial axis");
  for (std::int64_t d : size)
    check(d > 0, "resize: output sizes must be positive, got ", ints_text(size));
  bool last = o.channels == Channels::last;
  std::string method = o.method;
  Model m =
      layer("resize", {x},
            [size, last, method](LayerContext& c) {
              Expr y = c.input();
              int rank = y.rank();
              auto spatial = static_cast<int>(size.size());
              check(rank == spatial + 2, "resize: expected an input of rank ", spatial + 2,
                    " ([N, ", last ? "spatial..., C" : "C, spatial...", "]) for ", spatial,
                    " output size(s), got rank ", rank);
              check(method == "nearest" || is_float(y.dtype()),
                    "resize: bilinear needs a floating-point input, got ", dtype_name(y.dtype()));
              for (int k = 0; k < spatial; ++k) {
                int axis = last ? 1 + k : 2 + k;
                std::int64_t in = y.dim(axis), out = size[static_cast<std::size_t>(k)];
                check(in > 0, "resize: spatial axis ", axis, " is empty");
                if (method == "nearest") {
                  y = take(y, Expr(Tensor::from<std::int64_t>(nearest_indices(in, out))), axis);
                  continue;
                }
                LinearTaps t = linear_taps(in, out);
                Expr lo = take(y, Expr(Tensor::from<std::int64_t>(t.lo)), axis);
                Expr hi = take(y, Expr(Tensor::from<std::int64_t>(t.hi)), axis);
                y = lo * along_axis(t.w_lo, axis, rank, y.dtype()) +
                    hi * along_axis(t.w_hi, axis, rank, y.dtype());
              }
              return y;
            },
            {}, {o.name});
  return detail::with_options(
      m, cat("size=", ints_text(size), ", method=", method, last ? "" : ", channels=first"),
      detail::ConfigWriter()
          .integers("size", size)
          .string("method", method)
          .channels("channels", o.channels)
          .str());
}

}  // namespace glia
