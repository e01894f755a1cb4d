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
MASKS: glia's mask [N, T] (input.mask, bool) is true at a sequence's first `length` steps;
the reference is PyTorch's packed sequence of those lengths:
    pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False) -> module ->
    pad_packed_sequence(batch_first=True, total_length=T)   (padded steps output 0)
The steps of x past a sequence's length hold random values, which both sides must ignore.
FINAL STATES: glia's final_state(layer) is PyTorch's h_n / c_n: output.hidden = h_n[d],
output.cell = c_n[d] (d the direction), each sequence's state after its own last real step.
REVERSE WITH A MASK: glia's masked `reverse` layer reads each sequence from its own last real
step down to t = 0, as the backward direction of PyTorch's bidirectional module on the packed
sequence (flipping x, as above, would put the padding first). Those cases run the module
with bidirectional=True and keep its backward half: output = y[..., H:], the *_l0_reverse
parameters as glia's, the initial states h_0[1] (c_0[1]).
BIDIRECTIONAL: glia's bidirectional(x, fn) with fn's layers named "forward" and "backward"
is PyTorch's bidirectional module: the output is [forward, backward] along the last axis,
param.forward.<p> from the *_l0 parameters and param.backward.<p> from *_l0_reverse.
"""

import numpy as np
import torch
import torch.nn as nn

_GATES = {"lstm": 4, "gru": 3}


def recurrent_module(g, kind, F, H, bias, rng, f64, bidirectional=False):
    """A float64 nn.LSTM / nn.GRU with drawn parameters, and glia's (name, array) list of
    each direction: {"_l0": [...], "_l0_reverse": [...]} (PyTorch's suffixes; bare names)."""
    G = _GATES[kind]
    m = (nn.LSTM if kind == "lstm" else nn.GRU)(F, H, bias=bias, batch_first=True,
                                                bidirectional=bidirectional).double()
    directions = {}
    for suffix in ("_l0", "_l0_reverse") if bidirectional else ("_l0",):
        p = lambda name: getattr(m, name + suffix)
        w_ih, w_hh = g.randn(rng, G * H, F, scale=0.5), g.randn(rng, G * H, H, scale=0.5)
        params = [("kernel", np.ascontiguousarray(w_ih.T)),
                  ("recurrent_kernel", np.ascontiguousarray(w_hh.T))]
        with torch.no_grad():
            p("weight_ih").copy_(g.t64(w_ih))
            p("weight_hh").copy_(g.t64(w_hh))
            if bias:
                b_ih, b_hh = g.randn(rng, G * H, scale=0.3), g.randn(rng, G * H, scale=0.3)
                p("bias_ih").copy_(g.t64(b_ih))
                p("bias_hh").copy_(g.t64(b_hh))
                if kind == "gru":
                    params += [("bias", b_ih), ("recurrent_bias", b_hh)]
                elif f64:
                    params.append(("bias", b_ih.astype(np.float64) + b_hh))
                else:
                    # glia's one f32 bias is the sum rounded; PyTorch is given bias_hh = that
                    # rounded sum - bias_ih (exact in float64), so both use the same values.
                    b = (b_ih.astype(np.float64) + b_hh).astype(np.float32)
                    p("bias_hh").copy_(g.t64(b) - g.t64(b_ih))
                    params.append(("bias", b))
        directions[suffix] = params
    return m, directions


def recurrent_case(g, kind, case, comment, N, T, F, H, bias=True, last=False, reverse=False,
                   initial=False, f64=False):
    rng = g.rng_for(case)
    x = g.randn(rng, N, T, F)
    m, directions = recurrent_module(g, kind, F, H, bias, rng, f64)
    params = [("param." + n, a) for n, a in directions["_l0"]]
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


def sequence_case(g, kind, case, comment, N, T, F, H, lengths=None, direction="forward",
                  initial=False):
    """direction: "forward" (a one-direction module), "backward" (the backward half of a
    bidirectional one) or "both" (the bidirectional output, without final states)."""
    rng = g.rng_for(case)
    x = g.randn(rng, N, T, F)
    m, directions = recurrent_module(g, kind, F, H, True, rng, False, direction != "forward")
    inputs = [("input.x", x)]
    if lengths is not None:
        inputs.append(("input.mask", np.arange(T)[None, :] < np.array(lengths)[:, None]))
    hx = None
    if initial:
        states = [g.randn(rng, N, H, scale=0.5) for _ in range(2 if kind == "lstm" else 1)]
        inputs += list(zip(("input.h", "input.c"), states))
        # The backward direction's initial states are h_0[1], c_0[1]; the forward's zeros.
        hx = tuple(torch.stack([torch.zeros(N, H, dtype=torch.float64), g.t64(s)])
                   if direction == "backward" else g.t64(s)[None] for s in states)
        hx = hx if kind == "lstm" else hx[0]
    xt = g.t64(x)
    if lengths is not None:
        xt = nn.utils.rnn.pack_padded_sequence(xt, torch.tensor(lengths), batch_first=True,
                                               enforce_sorted=False)
    y, h_n = m(xt, hx)
    if lengths is not None:
        y, _ = nn.utils.rnn.pad_packed_sequence(y, batch_first=True, total_length=T)
    finals = list(h_n) if kind == "lstm" else [h_n]  # each [directions, N, H]
    if direction == "both":
        params = [("param.%s.%s" % (layer, n), a)
                  for layer, suffix in (("forward", "_l0"), ("backward", "_l0_reverse"))
                  for n, a in directions[suffix]]
        outputs = [("output", g.out32(y))]
    else:
        d = 0 if direction == "forward" else 1
        params = [("param." + n, a) for n, a in directions["_l0" if d == 0 else "_l0_reverse"]]
        outputs = [("output", g.out32(y[..., d * H:(d + 1) * H]))]
        outputs += [("output." + n, g.out32(s[d])) for n, s in zip(("hidden", "cell"), finals)]
    g.write(case, comment, inputs + params + outputs)


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
        states = lambda d: "(h_n[%d], c_n[%d])" % (d, d) if kind == "lstm" else "h_n[%d]" % d
        glia_states = "final_state(y).{hidden, cell}" if kind == "lstm" else \
            "final_state(y).hidden"
        packed = "pack_padded_sequence(x, lengths %s, batch_first=True, enforce_sorted=False)"
        sequence_case(g, kind, kind + "_final_state",
                      "torch: nn.%s(3, 4, batch_first=True)(x) outputs, %s\n"
                      "glia: y = %s(x, 4); %s" % (K, states(0), kind, glia_states),
                      2, 4, 3, 4)
        sequence_case(g, kind, kind + "_masked",
                      ("torch: nn.%s(3, 4, batch_first=True)(%s) outputs padded with 0, %s\n"
                       "glia: y = %s(x, 4, {.mask = mask}); %s; mask[n, t] = t < lengths[n]")
                      % (K, packed % "[5, 1, 3]", states(0), kind, glia_states),
                      3, 5, 3, 4, lengths=[5, 1, 3])
        sequence_case(g, kind, kind + "_masked_reverse",
                      ("torch: nn.%s(4, 3, batch_first=True, bidirectional=True)(%s, h_0) "
                       "outputs[..., 3:] padded with 0, %s\nglia: y = %s(x, 3, {.reverse = true, "
                       ".mask = mask}, {h_0[1]%s}); %s")
                      % (K, packed % "[2, 4, 1, 3]", states(1), kind,
                         ", c_0[1]" if kind == "lstm" else "", glia_states),
                      4, 4, 4, 3, lengths=[2, 4, 1, 3], direction="backward", initial=True)
        bidirectional = ("torch: nn.%s(3, 4, batch_first=True, bidirectional=True)(%%s) "
                         "outputs\nglia: bidirectional(x, [](x, reverse) { return %s(x, 4, "
                         "{.reverse = reverse, %%s.name = reverse ? \"backward\" : "
                         "\"forward\"}); })" % (K, kind))
        sequence_case(g, kind, kind + "_bidirectional", bidirectional % ("x", ""),
                      2, 4, 3, 4, direction="both")
        sequence_case(g, kind, kind + "_bidirectional_masked",
                      bidirectional % (packed % "[3, 5, 2]" + " padded with 0", ".mask = mask, "),
                      3, 5, 3, 4, lengths=[3, 5, 2], direction="both")
