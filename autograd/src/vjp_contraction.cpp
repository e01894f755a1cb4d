// Gradient rules of dot_general and convolution. The convolution rules follow the
// transposition identities XLA and JAX use: the input's cotangent is a convolution of
// the output's cotangent with the flipped kernel; the kernel's cotangent a convolution
// of the input with the output's cotangent, with batch and feature axes swapped.
#include <algorithm>
#include <numeric>

#include "glia/core/attrs.hpp"
#include "vjp_rules.hpp"

namespace glia::detail {

namespace {

using Cts = std::vector<Expr>;

Ints range(std::int64_t from, std::int64_t to) {
  Ints r(static_cast<std::size_t>(to - from));
  std::iota(r.begin(), r.end(), from);
  return r;
}

Ints free_axes(int rank, const Ints& batch, const Ints& contract) {
  Ints out;
  for (std::int64_t i = 0; i < rank; ++i)
    if (std::find(batch.begin(), batch.end(), i) == batch.end() &&
        std::find(contract.begin(), contract.end(), i) == contract.end())
      out.push_back(i);
  return out;
}

// `labels[k]` names the axis of the target that axis k of `v` is; returns v permuted
// into the target's axis order.
Expr arrange(const Expr& v, const Ints& labels) {
  Ints perm(labels.size());
  for (std::size_t k = 0; k < labels.size(); ++k)
    perm[static_cast<std::size_t>(labels[k])] = static_cast<std::int64_t>(k);
  return transpose(v, perm);
}

// Contracting axes of `self`, in the order dot_general leaves the other operand's
// matching axes: sorted by the other operand's axis.
Ints contract_in_other_order(const Ints& self, const Ints& other) {
  std::vector<std::size_t> order(self.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(),
            [&](std::size_t i, std::size_t j) { return other[i] < other[j]; });
  Ints out;
  for (std::size_t i : order) out.push_back(self[i]);
  return out;
}

Cts dot_general_vjp(const VjpArgs& a) {
  const auto& d = std::get<DotAttrs>(a.node.attrs);
  const Expr &x = a.inputs[0], &y = a.inputs[1], &ct = a.cotangent;
  Ints x_free = free_axes(x.rank(), d.lhs_batch, d.lhs_contract);
  Ints y_free = free_axes(y.rank(), d.rhs_batch, d.rhs_contract);
  auto nb = static_cast<std::int64_t>(d.lhs_batch.size());
  auto nx = static_cast<std::int64_t>(x_free.size()), ny = static_cast<std::int64_t>(y_free.size());
  Ints ct_batch = range(0, nb), ct_x = range(nb, nb + nx), ct_y = range(nb + nx, nb + nx + ny);

  // ct (B, Fx, Fy) . y (B, C, Fy) over Fy -> (B, Fx, C in y's order) -> x's layout.
  Expr gx = dot_general(ct, y, ct_y, y_free, ct_batch, d.rhs_batch);
  Ints x_labels = d.lhs_batch;
  x_labels.insert(x_labels.end(), x_free.begin(), x_free.end());
  Ints xc = contract_in_other_order(d.lhs_contract, d.rhs_contract);
  x_labels.insert(x_labels.end(), xc.begin(), xc.end());

  // x (B, Fx, C) . ct (B, Fx, Fy) over Fx -> (B, C in x's order, Fy) -> y's layout.
  Expr gy = dot_general(x, ct, x_free, ct_x, d.lhs_batch, ct_batch);
  Ints y_labels = d.rhs_batch;
  Ints yc = contract_in_other_order(d.rhs_contract, d.lhs_contract);
  y_labels.insert(y_labels.end(), yc.begin(), yc.end());
  y_labels.insert(y_labels.end(), y_free.begin(), y_free.end());
  return {arrange(gx, x_labels), arrange(gy, y_labels)};
}

// Splits axis `axis` into (parts, size / parts).
Expr split_axis(const Expr& v, int axis, std::int64_t parts) {
  Ints dims = v.shape().dims();
  std::int64_t size = dims[static_cast<std::size_t>(axis)];
  dims[static_cast<std::size_t>(axis)] = size / parts;
  dims.insert(dims.begin() + axis, parts);
  return reshape(v, dims);
}

// Moves axis `src` next to (before) axis `dst` of the array without it, and merges the two.
Expr merge_axis_into(const Expr& v, int src, int dst) {
  Ints perm;
  for (std::int64_t i = 0; i < v.rank(); ++i)
    if (i != src) perm.push_back(i);
  perm.insert(perm.begin() + dst, src);
  Expr moved = transpose(v, perm);
  Ints dims = moved.shape().dims();
  dims[static_cast<std::size_t>(dst)] *= dims[static_cast<std::size_t>(dst) + 1];
  dims.erase(dims.begin() + dst + 1);
  return reshape(moved, dims);
}

Ints swap01(int rank) {
  Ints p = range(0, rank);
  std::swap(p[0], p[1]);
  return p;
}

Cts convolution_vjp(const VjpArgs& a) {
  const auto& c = std::get<ConvAttrs>(a.node.attrs);
  const Expr &x = a.inputs[0], &k = a.inputs[1], &ct = a.cotangent;
  int rank = x.rank();
  auto spatial = static_cast<std::size_t>(rank - 2);
  Ints spatial_axes = range(2, rank);

  // Input cotangent (x: [N, C, S...]).
  Expr kernel = k;  // [O, I, K...]
  std::int64_t groups = c.feature_groups;
  if (c.feature_groups > 1 || c.batch_groups > 1) {
    std::int64_t g = std::max(c.feature_groups, c.batch_groups);
    kernel = merge_axis_into(split_axis(kernel, 0, g), 0, 1);  // [O/g, g*I, K...]
    groups = g;
  }
  kernel = reverse(transpose(kernel, swap01(rank)), spatial_axes);  // [g*I, O/g, K...] flipped
  ConvOptions gx_opts;
  gx_opts.strides = c.input_dilation;
  gx_opts.input_dilation = c.strides;
  gx_opts.kernel_dilation = c.kernel_dilation;
  gx_opts.feature_groups = groups;
  for (std::size_t i = 0; i < spatial; ++i) {
    int axis = static_cast<int>(i) + 2;
    std::int64_t in = dilated(x.shape()[axis], c.input_dilation[i]);
    std::int64_t win = dilated(k.shape()[axis], c.kernel_dilation[i]);
    std::int64_t out = dilated(ct.shape()[axis], c.strides[i]);
    std::int64_t before = win - c.padding_low[i] - 1;
    gx_opts.padding_low.push_back(before);
    gx_opts.padding_high.push_back(in + win - 1 - out - before);
  }
  Expr gx = conv(ct, kernel, gx_opts);
  if (c.batch_groups > 1) gx = merge_axis_into(split_axis(gx, 1, c.batch_groups), 1, 0);

  // Kernel cotangent: batch and feature axes swap roles.
  ConvOptions gk_opts;
  gk_opts.strides = c.kernel_dilation;
  gk_opts.input_dilation = c.input_dilation;
  gk_opts.kernel_dilation = c.strides;
  gk_opts.feature_groups = c.batch_groups;
  gk_opts.batch_groups = c.feature_groups;
  for (std::size_t i = 0; i < spatial; ++i) {
    int axis = static_cast<int>(i) + 2;
    std::int64_t in = dilated(x.shape()[axis], c.input_dilation[i]);
    std::int64_t win = dilated(k.shape()[axis], c.kernel_dilation[i]);
    std::int64_t out = dilated(ct.shape()[axis], c.strides[i]);
    gk_opts.padding_low.push_back(c.padding_low[i]);
    gk_opts.padding_high.push_back(out - in + win - c.padding_low[i] - 1);
  }
  Expr gk = conv(transpose(x, swap01(rank)), transpose(ct, swap01(rank)), gk_opts);
  return {gx, transpose(gk, swap01(rank))};
}

}  // namespace

void add_contraction_vjps(VjpTable& t) {
  set_vjp(t, Op::dot_general, &dot_general_vjp);
  set_vjp(t, Op::convolution, &convolution_vjp);
}

}  // namespace glia::detail
