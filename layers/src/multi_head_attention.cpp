// The multi_head_attention layer: q, k and v projections split into heads, attention per
// head (scaled_dot_product_attention), the heads joined and projected out.
#include <memory>

#include "glia/layers/attention.hpp"
#include "layer_util.hpp"

namespace glia {

namespace {

constexpr const char* kMha = "multi_head_attention";

struct HeadsSpec {
  std::int64_t num_heads;
  bool key_mask, attention_mask;  // whether inputs 3 (and 4) are masks
};

std::string shape_list(const InputShapes& in) {
  std::string s;
  const char* names[] = {"query", "key", "value"};
  for (std::size_t i = 0; i < 3; ++i) s += cat(i ? ", " : "", names[i], " ", in[i].to_string());
  return s;
}

// The checks every input shape must pass; run when the kernels' shapes are taken (before
// the forward pass, so that init reports them too) and by the forward pass.
void check_shapes(const InputShapes& in, const HeadsSpec& h) {
  const Shape &q = in[0], &k = in[1], &v = in[2];
  check(q.rank() == 3 && k.rank() == 3 && v.rank() == 3, kMha,
        ": expected query [N, Lq, E], key [N, Lk, kdim] and value [N, Lk, vdim], got ",
        shape_list(in));
  check(q[0] == k[0] && k[0] == v[0], kMha,
        ": query, key and value must have the same batch size (axis 0), got ", shape_list(in));
  check(k[1] == v[1], kMha, ": key and value must have the same length (axis 1, Lk), got ",
        shape_list(in));
  check(q[2] % h.num_heads == 0, kMha, ": embed dim ", q[2], " (the query's last axis) is not ",
        "divisible by num_heads ", h.num_heads);
  std::size_t next = 3;
  if (h.key_mask) {
    const Shape& m = in[next++];
    check(m == Shape{q[0], k[1]}, kMha,
          ": expected key_mask [N, Lk] = ", Shape{q[0], k[1]}.to_string(), ", got ", m.to_string(),
          " (", shape_list(in), ")");
  }
  if (h.attention_mask) {
    const Shape& m = in[next];
    Shape full{q[0], h.num_heads, q[1], k[1]};
    bool fits = m.rank() >= 2 && m.rank() <= 4;
    for (int i = 1; fits && i <= m.rank(); ++i) fits = m.dim(-i) == 1 || m.dim(-i) == full.dim(-i);
    check(fits, kMha, ": expected attention_mask [Lq, Lk], [N, Lq, Lk] or [N, num_heads, Lq, Lk] ",
          "(or size 1 on an axis) with [N, num_heads, Lq, Lk] = ", full.to_string(), ", got ",
          m.to_string(), " (", shape_list(in), ")");
  }
}

// x [N, L, in] . kernel [in, E] (+ bias) -> [N, H, L, E / H]
Expr project_heads(LayerContext& c, const Expr& x, const std::string& p, bool use_bias,
                   std::int64_t heads) {
  Expr y = dot_general(x, c.param(p + "_kernel"), {2}, {0});
  if (use_bias) y = y + c.param(p + "_bias");
  return transpose(reshape(y, {x.dim(0), x.dim(1), heads, y.dim(2) / heads}), {0, 2, 1, 3});
}

Expr forward(LayerContext& c, const HeadsSpec& h, const MultiHeadAttentionOptions& o) {
  InputShapes shapes;
  for (const Expr& e : c.inputs()) shapes.push_back(e.shape());
  check_shapes(shapes, h);
  const Expr& query = c.input(0);
  AttentionOptions a;
  a.causal = o.causal;
  std::size_t next = 3;
  if (h.key_mask) {
    const Expr& m = c.input(next++);  // [N, Lk] -> [N, 1, 1, Lk]
    check(m.dtype() == DType::boolean, kMha, ": key_mask must be bool (true = attend), got ",
          m.type());
    a.mask = reshape(m, {m.dim(0), 1, 1, m.dim(1)});
  }
  if (h.attention_mask) {
    Expr m = c.input(next);  // to [N or 1, H or 1, Lq, Lk]
    if (m.rank() == 3) m = expand_dims(m, 1);
    if (m.dtype() == DType::boolean)
      a.mask = a.mask.defined() ? logical_and(a.mask, m) : m;
    else if (is_float(m.dtype()))
      a.bias = m;
    else
      throw Error(cat(kMha, ": attention_mask must be bool (true = attend) or floating-point ",
                      "(added to the scores), got ", m.type().to_string()));
  }
  if (c.training() && o.dropout > 0) {
    a.dropout_rate = o.dropout;
    a.key = c.key();
  }
  Expr q = project_heads(c, query, "q", o.use_bias, h.num_heads);
  Expr k = project_heads(c, c.input(1), "k", o.use_bias, h.num_heads);
  Expr v = project_heads(c, c.input(2), "v", o.use_bias, h.num_heads);
  Expr heads = scaled_dot_product_attention(q, k, v, a);  // [N, H, Lq, E / H]
  Expr joined = reshape(transpose(heads, {0, 2, 1, 3}), {query.dim(0), query.dim(1), query.dim(2)});
  Expr y = dot_general(joined, c.param("out_kernel"), {2}, {0});
  return o.use_bias ? y + c.param("out_bias") : y;
}

std::string display(std::int64_t num_heads, const MultiHeadAttentionOptions& o) {
  std::string s = cat("num_heads=", num_heads);
  if (o.causal) s += ", causal";
  if (o.dropout > 0) s += cat(", dropout=", o.dropout);
  if (o.key_mask.defined()) s += ", key_mask";
  if (o.attention_mask.defined()) s += ", attention_mask";
  if (!o.use_bias) s += ", use_bias=false";
  return s;
}

}  // namespace

Model multi_head_attention(const Model& query, const Model& key, const Model& value,
                           std::int64_t num_heads, const MultiHeadAttentionOptions& o) {
  check(query.defined() && key.defined() && value.defined(), kMha,
        ": query, key and value must be defined models");
  check(num_heads > 0, kMha, ": num_heads must be positive, got ", num_heads);
  check(o.dropout >= 0 && o.dropout < 1, kMha, ": dropout must be in [0, 1), got ", o.dropout);
  HeadsSpec h{num_heads, o.key_mask.defined(), o.attention_mask.defined()};
  std::vector<Model> inputs{query, key, value};
  if (h.key_mask) inputs.push_back(o.key_mask);
  if (h.attention_mask) inputs.push_back(o.attention_mask);

  auto embed = [](const InputShapes& in) { return detail::last_dim(in[0], kMha); };
  // A kernel [in, E] whose `in` is input `from`'s last axis. Every shape the layer is traced
  // with passes check_shapes here first, init included.
  auto kernel = [&](const char* name, std::size_t from) {
    return ParamSpec{name,
                     [h, from, embed](const InputShapes& in) {
                       check_shapes(in, h);
                       return Shape{detail::last_dim(in[from], kMha), embed(in)};
                     },
                     o.kernel_initializer};
  };
  std::vector<ParamSpec> params{kernel("q_kernel", 0), kernel("k_kernel", 1), kernel("v_kernel", 2),
                                kernel("out_kernel", 0)};
  if (o.use_bias)
    for (const char* p : {"q_bias", "k_bias", "v_bias", "out_bias"})
      params.push_back(
          {p, [embed](const InputShapes& in) { return Shape{embed(in)}; }, o.bias_initializer});

  MultiHeadAttentionOptions kept = o;
  kept.key_mask = kept.attention_mask = Model();  // inputs of the node, not held twice
  Model m = layer(kMha, inputs, [h, kept](LayerContext& c) { return forward(c, h, kept); },
                  std::move(params), {o.name});
  auto node = std::make_shared<LayerNode>(m.node());
  node->stochastic = o.dropout > 0;  // the tracer gives it a key in train mode
  node->options = display(num_heads, o);
  node->config = detail::ConfigWriter()
                     .integer("num_heads", num_heads)
                     .boolean("use_bias", o.use_bias)
                     .boolean("causal", o.causal)
                     .number("dropout", o.dropout)
                     .boolean("key_mask", h.key_mask)
                     .boolean("attention_mask", h.attention_mask)
                     .initializer("kernel_initializer", o.kernel_initializer)
                     .initializer("bias_initializer", o.bias_initializer)
                     .str();
  return Model(std::move(node));
}

Model multi_head_attention(const Model& x, std::int64_t num_heads,
                           const MultiHeadAttentionOptions& options) {
  return multi_head_attention(x, x, x, num_heads, options);
}

}  // namespace glia
