// Attention: scaled_dot_product_attention over traced Exprs, and the multi_head_attention
// layer (PyTorch's nn.MultiheadAttention with batch_first=True, Keras' MultiHeadAttention).
//   glia::Model x = glia::input("tokens", {-1, 16, 64});   // [N, L, E]
//   glia::Model y = glia::multi_head_attention(x, 8, {.causal = true});
#pragma once

#include <optional>

#include "glia/layers/initializers.hpp"

namespace glia {

struct AttentionOptions {
  // Which scores count: bool, true = attend, broadcastable to [..., Lq, Lk]; undefined: all.
  Expr mask;
  // Added to the scores before the softmax (relative positions, ALiBi, PyTorch's float
  // attn_mask with -inf for "never"): float, broadcastable to [..., Lq, Lk]; undefined: none.
  Expr bias;
  // Query i attends to keys j <= i (PyTorch's is_causal: the top-left corner of [Lq, Lk]);
  // combined with `mask` and `bias` when those are given too.
  bool causal = false;
  std::optional<double> scale;  // the scores' factor; default 1 / sqrt(E)
  // Dropout on the attention weights (kept ones scaled by 1 / (1 - rate)), random from
  // `key` (u32[2], required when rate > 0). The layer passes its own key in train mode.
  double dropout_rate = 0;
  Expr key;
};

// softmax(q . k^T * scale + bias, masked) . v with q [..., Lq, E], k [..., Lk, E] and
// v [..., Lk, Ev] -> [..., Lq, Ev]; the leading axes broadcast (numpy rules). q, k and v share
// one float dtype. A query whose every key is masked out (by `mask`, `causal`, or -inf in
// `bias`) attends to nothing: its output row is 0, and so is its gradient (PyTorch gives
// NaN there). Throws glia::Error naming the operands' shapes when they do not fit.
Expr scaled_dot_product_attention(const Expr& q, const Expr& k, const Expr& v,
                                  const AttentionOptions& options = {});

struct MultiHeadAttentionOptions {
  bool use_bias = true;
  bool causal = false;  // query i attends to keys j <= i
  double dropout = 0;   // on the attention weights, train mode only, in [0, 1)
  // Which keys of each example are real: bool [N, Lk], true = attend, false = padding
  // (PyTorch's key_padding_mask negated). Undefined: every key.
  Model key_mask;
  // Which scores count: bool (true = attend) or float (added to the scores), of shape
  // [Lq, Lk], [N, Lq, Lk] or [N, num_heads, Lq, Lk]. Undefined: none. Any Model gives it: an
  // input, or glia::constant(tensor, {}) for a fixed one.
  Model attention_mask;
  Initializer kernel_initializer = initializers::glorot_uniform();
  Initializer bias_initializer = initializers::zeros();
  std::string name;
};

// Multi-head attention, batch first: query [N, Lq, E], key [N, Lk, kdim], value [N, Lk, vdim]
// -> [N, Lq, E]; E must divide into num_heads heads of E / num_heads. kdim and vdim (PyTorch's
// options) are the key's and value's last axes. Scores are scaled by 1 / sqrt(E / num_heads);
// a query that the masks leave no key gives out_bias, or 0 (PyTorch: NaN). Parameters, in dense's
// [in, out] layout:
//   q_kernel [E, E], k_kernel [kdim, E], v_kernel [vdim, E], out_kernel [E, E], and with
//   use_bias q_bias, k_bias, v_bias, out_bias [E].
// From PyTorch's nn.MultiheadAttention: in_proj_weight [3E, E] splits by rows into the
// q, k and v weights [E, in] (or q/k/v_proj_weight when kdim, vdim != E); each kernel is
// that weight transposed, out_kernel is out_proj.weight transposed; in_proj_bias splits
// into q_bias, k_bias, v_bias; out_bias is out_proj.bias. Not supported: add_bias_kv,
// add_zero_attn, and returning the attention weights.
Model multi_head_attention(const Model& query, const Model& key, const Model& value,
                           std::int64_t num_heads, const MultiHeadAttentionOptions& options = {});
// Self-attention: query, key and value are all `x`.
Model multi_head_attention(const Model& x, std::int64_t num_heads,
                           const MultiHeadAttentionOptions& options = {});

}  // namespace glia
