"""Golden cases for glia's lstm and gru (tests/layers/recurrent_golden_test.cpp), written by
generate.py, which passes itself in as `g` (write, rng_for, randn, t64, out32).

The reference is torch's nn.LSTM / nn.GRU(F, H, batch_first=True), one layer, in float64.
PARAMETERS, PyTorch -> glia (glia's kernels are [in, out], the gates side by side along
the last axis in PyTorch's order: lstm i, f, g, o; gru r, z, n):
    kernel = weight_ih_l0^T [F, G * H], recurrent_kernel = weight_hh_l0^T [H, G * H]
    lstm: bias = bias_ih_l0 + bias_hh_l0 (the two only ever appear summed)
    gru:  bias = bias_ih_l0, recurrent_bias = bias_hh_l0 (bias_hh's n part sits inside
          r * (h W_hn + b_hn), so the two cannot be merged)
    use_bias = false: PyTorch's bias=False.
INITIAL STATES: glia's RecurrentState{hidden, cell} are model inputs [N, H]; PyTorch's
h_0 / c_0 are [num_layers = 1, N, H].
LAST STEP: glia's return_sequences = false is PyTorch's h_n[0] (the final hidden state).
REVERSE: glia's reverse reads the sequence from t = T - 1 down to 0 and writes each step's
output at its own position t (outputs keep their place; the last step's output is then
the one at t = 0). PyTorch has no one-direction reverse, so the reference runs the module
on x.flip(1) and flips the outputs back: output = y.flip(1), last = h_n[0].
F64: the *_f64 cases hold float64 inputs, parameters and outputs (the test declares the
layer's parameters f64) and are compared at glia::golden::kF64.
"""

import numpy as np
import torch
import torch.nn as nn

_GATES = {"lstm": 4, "gru": 3}


def _module(g, kind, F, H, bias, rng, f64):
    """A float64 nn.LSTM / nn.GRU with drawn parameters, and glia's (name, array) list."""
    G = _GATES[kind]
    m = (nn.LSTM if kind == "lstm" else nn.GRU)(F, H, bias=bias, batch_first=True).double()
    w_ih, w_hh = g.randn(rng, G * H, F, scale=0.5), g.randn(rng, G * H, H, scale=0.5)
    params = [("param.kernel", np.ascontiguousarray(w_ih.T)),
              ("param.recurrent_kernel", np.ascontiguousarray(w_hh.T))]
    with torch.no_grad():
        m.weight_ih_l0.copy_(g.t64(w_ih))
        m.weight_hh_l0.copy_(g.t64(w_hh))
        if bias:
            b_ih, b_hh = g.randn(rng, G * H, scale=0.3), g.randn(rng, G * H, scale=0.3)
            m.bias_ih_l0.copy_(g.t64(b_ih))
            m.bias_hh_l0.copy_(g.t64(b_hh))
            if kind == "gru":
                params += [("param.bias", b_ih), ("param.recurrent_bias", b_hh)]
            elif f64:
                params.append(("param.bias", b_ih.astype(np.float64) + b_hh))
            else:
                # glia's one f32 bias is the sum rounded; PyTorch is given bias_hh = that
                # rounded sum - bias_ih (exact in float64), so both use the same values.
                b = (b_ih.astype(np.float64) + b_hh).astype(np.float32)
                m.bias_hh_l0.copy_(g.t64(b) - g.t64(b_ih))
                params.append(("param.bias", b))
    return m, params


def recurrent_case(g, kind, case, comment, N, T, F, H, bias=True, last=False, reverse=False,
                   initial=False, f64=False):
    rng = g.rng_for(case)
    x = g.randn(rng, N, T, F)
    m, params = _module(g, kind, F, H, bias, rng, f64)
    states = []
    if initial:
        states.append(("input.h", g.randn(rng, N, H, scale=0.5)))
        if kind == "lstm":
            states.append(("input.c", g.randn(rng, N, H, scale=0.5)))
    hx = tuple(g.t64(s)[None] for _, s in states)
    xt = g.t64(x).flip(1) if reverse else g.t64(x)
    y, h_n = m(xt, (hx if kind == "lstm" else hx[0]) if hx else None)
    if kind == "lstm":
        h_n = h_n[0]
    y = h_n[0] if last else (y.flip(1) if reverse else y)
    cast = (lambda a: np.asarray(a, dtype=np.float64)) if f64 else (lambda a: a)
    out = y.detach().numpy() if f64 else g.out32(y)
    tensors = [("input.x", x)] + states + params
    g.write(case, comment, [(n, cast(a)) for n, a in tensors] + [("output", out)])


def recurrent_cases(g):
    for kind in ("lstm", "gru"):
        K = "LSTM" if kind == "lstm" else "GRU"
        torch_call = "torch: nn.%s(%%d, %%d, batch_first=True%%s)" % K
        recurrent_case(g, kind, kind + "_sequences",
                       torch_call % (3, 4, "") + "(x) outputs\nglia: %s(x, 4)" % kind,
                       2, 4, 3, 4)
        recurrent_case(g, kind, kind + "_last",
                       torch_call % (4, 5, "") + "(x) h_n[0]\nglia: %s(x, 5, "
                       "{.return_sequences = false})" % kind, 3, 5, 4, 5, last=True)
        recurrent_case(g, kind, kind + "_initial_state",
                       torch_call % (3, 4, "") + "(x, %s) outputs\nglia: %s(x, 4, {}, %s)"
                       % ("(h0, c0)" if kind == "lstm" else "h0", kind,
                          "{h, c}" if kind == "lstm" else "{h}"),
                       3, 3, 3, 4, initial=True)
        recurrent_case(g, kind, kind + "_reverse",
                       torch_call % (4, 4, "") + "(x.flip(1)) outputs .flip(1)\nglia: %s(x, 4, "
                       "{.reverse = true}) (outputs keep their place)" % kind,
                       2, 5, 4, 4, reverse=True)
        recurrent_case(g, kind, kind + "_reverse_last",
                       torch_call % (3, 5, "") + "(x.flip(1)) h_n[0]\nglia: %s(x, 5, "
                       "{.return_sequences = false, .reverse = true}) (the output at t = 0)"
                       % kind, 2, 4, 3, 5, last=True, reverse=True)
        recurrent_case(g, kind, kind + "_no_bias",
                       torch_call % (3, 5, ", bias=False") + "(x) outputs\nglia: %s(x, 5, "
                       "{.use_bias = false})" % kind, 2, 4, 3, 5, bias=False)
        recurrent_case(g, kind, kind + "_f64",
                       torch_call % (3, 4, "") + "(x.flip(1), %s) outputs .flip(1), float64 "
                       "throughout\nglia: %s(x, 4, {.reverse = true}, %s), f64 parameters"
                       % ("(h0, c0)" if kind == "lstm" else "h0", kind,
                          "{h, c}" if kind == "lstm" else "{h}"),
                       2, 4, 3, 4, reverse=True, initial=True, f64=True)
