"""Golden cases for glia's attention (tests/layers/attention_golden_test.cpp), written by
generate.py, which passes itself in as `g` (write, rng_for, randn, t64, out32).

multi_head_attention: torch's nn.MultiheadAttention(E, H, batch_first=True) in float64.
WEIGHT LAYOUT, PyTorch -> glia (every glia kernel is [in, out], as dense's):
    in_proj_weight [3E, E] = rows [W_q; W_k; W_v], each [E, E]   (kdim == vdim == E)
    q_proj_weight [E, E], k_proj_weight [E, kdim], v_proj_weight [E, vdim]   (otherwise)
    q_kernel = W_q^T [E, E], k_kernel = W_k^T [kdim, E], v_kernel = W_v^T [vdim, E]
    in_proj_bias [3E] = [q_bias, k_bias, v_bias]
    out_kernel = out_proj.weight^T [E, E], out_bias = out_proj.bias
MASKS: glia's masks say true = attend. PyTorch's key_padding_mask and bool attn_mask say
True = masked out, so glia's key_mask = ~key_padding_mask and bool attention_mask =
~attn_mask. A float attn_mask is added to the scores in both; PyTorch's 3-D one is
[N * H, Lq, Lk] (row n * H + h), glia's [N, H, Lq, Lk]. No case masks a whole row: PyTorch
gives NaN there, glia zeros (attention_test.cpp checks that).

scaled_dot_product_attention: torch 1.13 has no F.scaled_dot_product_attention (2.0 added
it), so the reference is its math written with torch ops in float64:
softmax(q @ k^T * scale + bias, with masked scores at -inf) @ v, causal = ones(Lq, Lk).tril().
"""

import numpy as np
import torch
import torch.nn as nn


def _mha(E, H, kdim, vdim, bias, w):
    m = nn.MultiheadAttention(E, H, bias=bias, batch_first=True, kdim=kdim, vdim=vdim).double()
    with torch.no_grad():
        if m.in_proj_weight is not None:
            m.in_proj_weight.copy_(torch.from_numpy(
                np.concatenate([w["q"], w["k"], w["v"]]).astype(np.float64)))
        else:
            for p in "qkv":
                getattr(m, p + "_proj_weight").copy_(torch.from_numpy(w[p].astype(np.float64)))
        m.out_proj.weight.copy_(torch.from_numpy(w["out"].astype(np.float64)))
        if bias:
            m.in_proj_bias.copy_(torch.from_numpy(
                np.concatenate([w["qb"], w["kb"], w["vb"]]).astype(np.float64)))
            m.out_proj.bias.copy_(torch.from_numpy(w["outb"].astype(np.float64)))
    return m.eval()


def _glia_params(w, bias):
    """The PyTorch [out, in] weights as glia's [in, out] kernels, and the biases."""
    ps = [("param.%s_kernel" % p, np.ascontiguousarray(w[p].T)) for p in ("q", "k", "v", "out")]
    if bias:
        ps += [("param.%s_bias" % p, w[p + "b"]) for p in ("q", "k", "v", "out")]
    return ps


def mha_case(g, case, comment, N, Lq, Lk, E, H, kdim, vdim, bias, masks):
    """masks(rng) -> (torch keyword arguments, [(glia input name, array)])."""
    rng = g.rng_for(case)
    q = g.randn(rng, N, Lq, E)
    self_attention = kdim is None
    k = q if self_attention else g.randn(rng, N, Lk, kdim)
    v = q if self_attention else g.randn(rng, N, Lk, vdim)
    w = {"q": g.randn(rng, E, E, scale=0.4), "k": g.randn(rng, E, kdim or E, scale=0.4),
         "v": g.randn(rng, E, vdim or E, scale=0.4), "out": g.randn(rng, E, E, scale=0.4)}
    for p in ("q", "k", "v", "out"):
        w[p + "b"] = g.randn(rng, E, scale=0.1)
    kwargs, mask_inputs = masks(rng)
    m = _mha(E, H, kdim, vdim, bias, w)
    y, _ = m(g.t64(q), g.t64(k), g.t64(v), need_weights=False, **kwargs)
    inputs = [("input.x", q)] if self_attention else [("input.q", q), ("input.k", k),
                                                      ("input.v", v)]
    g.write(case, comment, inputs + mask_inputs + _glia_params(w, bias) + [("output", g.out32(y))])


def sdpa_reference(q, k, v, scale, mask=None, bias=None, causal=False):
    s = torch.matmul(q, k.transpose(-2, -1)) * scale
    if bias is not None:
        s = s + bias
    if causal:
        s = s.masked_fill(~torch.ones(s.shape[-2], s.shape[-1], dtype=torch.bool).tril(), -np.inf)
    if mask is not None:
        s = s.masked_fill(~mask, -np.inf)
    return torch.matmul(torch.softmax(s, -1), v)


def attention_cases(g):
    def no_masks(rng):
        return {}, []

    mha_case(g, "mha_self", "torch: nn.MultiheadAttention(8, 2, batch_first=True)(x, x, x)\n"
             "glia: multi_head_attention(x, 2)", 2, 5, 5, 8, 2, None, None, True, no_masks)

    def padding(rng):  # example 0 pads its last 2 keys, example 1 its first one
        pad = np.zeros((2, 4), dtype=bool)
        pad[0, 2:], pad[1, 0] = True, True
        return {"key_padding_mask": torch.from_numpy(pad)}, [("input.key_mask", ~pad)]

    mha_case(g, "mha_cross_key_mask",
             "torch: nn.MultiheadAttention(6, 3, batch_first=True, kdim=5, vdim=7)(q, k, v, "
             "key_padding_mask=pad)\nglia: multi_head_attention(q, k, v, 3, {.key_mask = ~pad})",
             2, 3, 4, 6, 3, 5, 7, True, padding)

    def causal(rng):
        return {"attn_mask": torch.ones(4, 4, dtype=torch.bool).triu(1)}, []

    mha_case(g, "mha_causal_no_bias",
             "torch: nn.MultiheadAttention(4, 1, bias=False, batch_first=True)(x, x, x, "
             "attn_mask=ones(4, 4).triu(1))\nglia: multi_head_attention(x, 1, {.use_bias = false, "
             ".causal = true})", 3, 4, 4, 4, 1, None, None, False, causal)

    def float_and_padding(rng):  # -inf at a few scores, never a whole row
        f = (rng.standard_normal((2, 2, 3, 5)) * 0.5).astype(np.float32)
        f[0, 1, 2, 1], f[1, 0, 0, 4], f[1, 1, 1, 0] = -np.inf, -np.inf, -np.inf
        pad = np.zeros((2, 5), dtype=bool)
        pad[1, 3] = True
        return ({"attn_mask": torch.from_numpy(f.reshape(4, 3, 5).astype(np.float64)),
                 "key_padding_mask": torch.from_numpy(pad)},
                [("input.key_mask", ~pad), ("input.mask", f)])

    mha_case(g, "mha_float_mask",
             "torch: nn.MultiheadAttention(8, 2, batch_first=True, kdim=3, vdim=3)(q, k, v, "
             "attn_mask=f.reshape(4, 3, 5), key_padding_mask=pad)\nglia: multi_head_attention(q, "
             "k, v, 2, {.key_mask = ~pad, .attention_mask = f}), f [N, H, Lq, Lk]",
             2, 3, 5, 8, 2, 3, 3, True, float_and_padding)

    def bool_mask(rng):  # [Lq, Lk], shared by the batch
        masked = rng.random((3, 4)) < 0.4
        masked[:, 0] = False
        return {"attn_mask": torch.from_numpy(masked)}, [("input.mask", ~masked)]

    mha_case(g, "mha_bool_mask",
             "torch: nn.MultiheadAttention(4, 2, batch_first=True, kdim=2, vdim=6)(q, k, v, "
             "attn_mask=m)\nglia: multi_head_attention(q, k, v, 2, {.attention_mask = ~m})",
             2, 3, 4, 4, 2, 2, 6, True, bool_mask)

    case = "sdpa_causal"
    rng = g.rng_for(case)
    q, k, v = g.randn(rng, 2, 5, 4), g.randn(rng, 2, 7, 4), g.randn(rng, 2, 7, 3)
    y = sdpa_reference(g.t64(q), g.t64(k), g.t64(v), 0.3, causal=True)
    g.write(case, "torch ops: softmax(q k^T 0.3, causal top-left: key j <= query i) v\n"
            "glia: scaled_dot_product_attention(q, k, v, {.causal = true, .scale = 0.3})",
            [("input.q", q), ("input.k", k), ("input.v", v), ("output", g.out32(y))])

    case = "sdpa_masks"
    rng = g.rng_for(case)
    q, k, v = g.randn(rng, 2, 2, 4, 8), g.randn(rng, 1, 2, 6, 8), g.randn(rng, 1, 2, 6, 5)
    mask = rng.random((2, 1, 4, 6)) < 0.7
    mask[..., 2] = True
    bias = g.randn(rng, 4, 6, scale=0.5)
    y = sdpa_reference(g.t64(q), g.t64(k), g.t64(v), 1 / np.sqrt(8), torch.from_numpy(mask),
                       g.t64(bias))
    g.write(case, "torch ops: softmax(q k^T / sqrt(8) + bias, mask) v; k, v broadcast over axis 0\n"
            "glia: scaled_dot_product_attention(q, k, v, {.mask = mask, .bias = bias})",
            [("input.q", q), ("input.k", k), ("input.v", v), ("input.mask", mask),
             ("input.bias", bias), ("output", g.out32(y))])
