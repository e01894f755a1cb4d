"""Golden cases for glia's convolutions (conv, depthwise_conv, separable_conv,
conv_transpose; tests/layers/golden_test.cpp), written by generate.py, which passes itself
in as `g` (write, rng_for, randn, t64, set_params, to_first, to_last).

PyTorch's ConvNd takes [N, C, spatial...] and its weight is [out, in / groups, k...]
(ConvTranspose: [in, out / groups, k...]); glia's inputs are channels-last and its kernels
[k..., in / groups, out]: conv_kernel_to_glia and conv_transpose_kernel_to_glia convert.
"""

import numpy as np
import torch.nn as nn


def conv_kernel_to_glia(w):  # [O, I/g, k...] -> [k..., I/g, O]
    return np.ascontiguousarray(np.transpose(w, tuple(range(2, w.ndim)) + (1, 0)))


def conv_transpose_kernel_to_glia(w, groups):
    """[I, O/g, k...] (PyTorch ConvTranspose) -> [k..., I/g, O] (glia): output channel o of
    group gi = o // (O/g) reads input channels gi*(I/g) + il, il < I/g."""
    i, og = w.shape[0], w.shape[1]
    ig = i // groups
    k = w.shape[2:]
    out = np.zeros(k + (ig, og * groups), dtype=w.dtype)
    for gi in range(groups):
        for il in range(ig):
            for ol in range(og):
                out[..., il, gi * og + ol] = w[gi * ig + il, ol]
    return out


def conv_case(g, case, comment, x, module, w, b):
    """x channels-last; module a torch ConvNd; w, b its weight and bias (float32)."""
    g.set_params(module, weight=w, bias=b)
    y = g.to_last(module(g.t64(g.to_first(x))).detach().numpy())
    g.write(case, comment, [("input.x", x), ("param.kernel", conv_kernel_to_glia(w)),
                            ("param.bias", b), ("output", y.astype(np.float32))])


def conv_cases(g):
    case = "conv1d"
    rng = g.rng_for(case)
    conv_case(g, case, """torch: nn.Conv1d(3, 4, 3, stride=2, padding=1)
glia: conv(x, 4, {kernel_size {3}, strides {2}, padding {(1, 1)}})""",
              g.randn(rng, 2, 9, 3), nn.Conv1d(3, 4, 3, stride=2, padding=1),
              g.randn(rng, 4, 3, 3, scale=0.5), g.randn(rng, 4, scale=0.1))

    case = "conv1d_dilated_same"
    rng = g.rng_for(case)
    conv_case(g, case, """torch: nn.Conv1d(3, 2, 3, dilation=2, padding='same')
glia: conv(x, 2, {kernel_size {3}, padding "same", kernel_dilation {2}})""",
              g.randn(rng, 2, 8, 3), nn.Conv1d(3, 2, 3, dilation=2, padding="same"),
              g.randn(rng, 2, 3, 3, scale=0.5), g.randn(rng, 2, scale=0.1))

    case = "conv2d"
    rng = g.rng_for(case)
    conv_case(g, case, """torch: nn.Conv2d(4, 6, (3, 2), stride=(2, 1), padding=(1, 0), dilation=(1, 2), groups=2)
glia: conv(x, 6, {kernel_size {3, 2}, strides {2, 1}, padding {(1, 1), (0, 0)},
                  kernel_dilation {1, 2}, feature_groups 2})""",
              g.randn(rng, 2, 6, 7, 4),
              nn.Conv2d(4, 6, (3, 2), stride=(2, 1), padding=(1, 0), dilation=(1, 2), groups=2),
              g.randn(rng, 6, 2, 3, 2, scale=0.5), g.randn(rng, 6, scale=0.1))

    case = "conv2d_same"
    rng = g.rng_for(case)
    conv_case(g, case, """torch: nn.Conv2d(3, 2, (4, 3), padding='same') (even kernel: 1 before, 2 after)
glia: conv(x, 2, {kernel_size {4, 3}, padding "same"})""",
              g.randn(rng, 1, 5, 6, 3), nn.Conv2d(3, 2, (4, 3), padding="same"),
              g.randn(rng, 2, 3, 4, 3, scale=0.5), g.randn(rng, 2, scale=0.1))

    case = "conv3d"
    rng = g.rng_for(case)
    conv_case(g, case, """torch: nn.Conv3d(2, 4, (2, 3, 2), stride=(1, 2, 1), padding=(1, 1, 0), groups=2)
glia: conv(x, 4, {kernel_size {2, 3, 2}, strides {1, 2, 1}, padding {(1, 1), (1, 1), (0, 0)},
                  feature_groups 2})""",
              g.randn(rng, 1, 4, 5, 4, 2),
              nn.Conv3d(2, 4, (2, 3, 2), stride=(1, 2, 1), padding=(1, 1, 0), groups=2),
              g.randn(rng, 4, 1, 2, 3, 2, scale=0.5), g.randn(rng, 4, scale=0.1))

    case = "depthwise_conv2d"
    rng = g.rng_for(case)
    conv_case(g, case, """torch: nn.Conv2d(3, 6, 3, padding=1, groups=3)
glia: depthwise_conv(x, 2, {kernel_size {3, 3}, padding {(1, 1), (1, 1)}}), kernel [3, 3, 1, 6]""",
              g.randn(rng, 2, 5, 5, 3), nn.Conv2d(3, 6, 3, padding=1, groups=3),
              g.randn(rng, 6, 1, 3, 3, scale=0.5), g.randn(rng, 6, scale=0.1))

    for case, spatial, filters, mult in [("separable_conv2d", (5, 6), 4, 2),
                                         ("separable_conv3d", (3, 4, 4), 3, 1)]:
        rng = g.rng_for(case)
        d = len(spatial)
        c = 3 if d == 2 else 2
        conv = nn.Conv2d if d == 2 else nn.Conv3d
        x = g.randn(rng, 2 if d == 2 else 1, *spatial, c)
        k = (3,) * d if d == 2 else (2,) * d
        dw, db = g.randn(rng, c * mult, 1, *k, scale=0.5), g.randn(rng, c * mult, scale=0.1)
        pw = g.randn(rng, filters, c * mult, *(1,) * d, scale=0.5)
        pb = g.randn(rng, filters, scale=0.1)
        depthwise = g.set_params(conv(c, c * mult, k, groups=c), weight=dw, bias=db)
        pointwise = g.set_params(conv(c * mult, filters, 1), weight=pw, bias=pb)
        y = g.to_last(pointwise(depthwise(g.t64(g.to_first(x)))).detach().numpy())
        g.write(case, """torch: nn.Conv%dd(%d, %d, %s, groups=%d) then nn.Conv%dd(%d, %d, 1)
glia: %s(x, %d, %d, {kernel_size %s})""" % (d, c, c * mult, k, c, d, c * mult, filters, case,
                                            filters, mult, list(k)),
                [("input.x", x), ("param.depthwise_kernel", conv_kernel_to_glia(dw)),
                 ("param.depthwise_bias", db), ("param.pointwise_kernel", conv_kernel_to_glia(pw)),
                 ("param.pointwise_bias", pb), ("output", y.astype(np.float32))])

    # conv_transpose: glia's explicit padding (lo, hi) gives (in - 1) * s + k - lo - hi, so
    # PyTorch's padding p with output_padding op is (p, p - op); "valid" is p = op = 0.
    for case, comment, x_shape, args, groups in [
        ("conv_transpose2d", """torch: nn.ConvTranspose2d(3, 2, 3, stride=2)
glia: conv_transpose(x, 2, {kernel_size {3, 3}, strides {2, 2}}) (padding "valid")""",
         (2, 3, 4, 3), dict(in_channels=3, out_channels=2, kernel_size=3, stride=2), 1),
        ("conv_transpose2d_padded", """torch: nn.ConvTranspose2d(4, 4, (3, 4), stride=2, padding=1, output_padding=(1, 0), groups=2)
glia: conv_transpose(x, 4, {kernel_size {3, 4}, strides {2, 2}, padding {(1, 0), (1, 1)},
                            feature_groups 2})""",
         (1, 3, 4, 4), dict(in_channels=4, out_channels=4, kernel_size=(3, 4), stride=2,
                            padding=1, output_padding=(1, 0), groups=2), 2)]:
        rng = g.rng_for(case)
        x = g.randn(rng, *x_shape)
        m = nn.ConvTranspose2d(**args)
        w = g.randn(rng, *m.weight.shape, scale=0.5)
        b = g.randn(rng, args["out_channels"], scale=0.1)
        g.set_params(m, weight=w, bias=b)
        y = g.to_last(m(g.t64(g.to_first(x))).detach().numpy())
        g.write(case, comment, [("input.x", x),
                                ("param.kernel", conv_transpose_kernel_to_glia(w, groups)),
                                ("param.bias", b), ("output", y.astype(np.float32))])
