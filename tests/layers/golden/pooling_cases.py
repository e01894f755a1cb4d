"""Golden cases for glia's pooling layers (max, average and LP pooling, their adaptive and
global forms; tests/layers/golden_test.cpp), written by generate.py, which passes itself in
as `g` (write, rng_for, randn, t64, to_first, to_last).
"""

import numpy as np
import torch.nn.functional as F


def pool_case(g, case, comment, x, fn):
    """x channels-last; fn maps a float64 NC... tensor to the pooled NC... tensor."""
    y = g.to_last(fn(g.t64(g.to_first(x))).numpy())
    g.write(case, comment, [("input.x", x), ("output", y.astype(np.float32))])


def adaptive_lp_numpy(x, out, p):
    """x [N, H, W, C]; PyTorch's bins start floor(i*in/out), end ceil((i+1)*in/out)."""
    x = x.astype(np.float64)
    bins = [[(i * n // o, -(-(i + 1) * n // o)) for i in range(o)]
            for n, o in zip(x.shape[1:3], out)]
    y = np.zeros((x.shape[0], out[0], out[1], x.shape[3]))
    for i, (h0, h1) in enumerate(bins[0]):
        for j, (w0, w1) in enumerate(bins[1]):
            y[:, i, j] = (x[:, h0:h1, w0:w1] ** p).sum(axis=(1, 2)) ** (1.0 / p)
    return y


def pooling_cases(g):
    x1 = lambda case: g.randn(g.rng_for(case), 2, 9, 3)
    x2 = lambda case: g.randn(g.rng_for(case), 2, 7, 6, 3)
    pool_case(g, "max_pool1d", """torch: F.max_pool1d(x, 3, stride=2, padding=1)
glia: max_pool(x, {kernel_size {3}, strides {2}, padding {(1, 1)}})""",
              x1("max_pool1d"), lambda t: F.max_pool1d(t, 3, stride=2, padding=1))
    pool_case(g, "avg_pool1d", """torch: F.avg_pool1d(x, 3, stride=2, padding=1, count_include_pad=True)
glia: avg_pool(x, {kernel_size {3}, strides {2}, padding {(1, 1)}}) (padding counts)""",
              x1("avg_pool1d"),
              lambda t: F.avg_pool1d(t, 3, stride=2, padding=1, count_include_pad=True))
    pool_case(g, "lp_pool1d", """torch: F.lp_pool1d(x, 2, 3, stride=2) (PyTorch's LPPool has no padding)
glia: lp_pool(x, {kernel_size {3}, strides {2}, norm 2})""",
              x1("lp_pool1d"), lambda t: F.lp_pool1d(t, 2, 3, stride=2))
    pool_case(g, "max_pool2d", """torch: F.max_pool2d(x, (3, 2), stride=2, padding=1)
glia: max_pool(x, {kernel_size {3, 2}, strides {2, 2}, padding {(1, 1), (1, 1)}})""",
              x2("max_pool2d"), lambda t: F.max_pool2d(t, (3, 2), stride=2, padding=1))
    pool_case(g, "max_pool2d_dilated", """torch: F.max_pool2d(x, 2, stride=1, dilation=2)
glia: max_pool(x, {kernel_size {2, 2}, strides {1, 1}, window_dilation {2, 2}})""",
              x2("max_pool2d_dilated"), lambda t: F.max_pool2d(t, 2, stride=1, dilation=2))
    pool_case(g, "avg_pool2d", """torch: F.avg_pool2d(x, (3, 2), stride=2, padding=1, count_include_pad=True)
glia: avg_pool(x, {kernel_size {3, 2}, strides {2, 2}, padding {(1, 1), (1, 1)}})""",
              x2("avg_pool2d"),
              lambda t: F.avg_pool2d(t, (3, 2), stride=2, padding=1, count_include_pad=True))
    # p = 3 on positive values: a negative window sum would make both sides NaN.
    pool_case(g, "lp_pool2d", """torch: F.lp_pool2d(x, 3, 2, stride=(2, 1)) on positive x
glia: lp_pool(x, {kernel_size {2, 2}, strides {2, 1}, norm 3})""",
              np.abs(x2("lp_pool2d")) + np.float32(0.1),
              lambda t: F.lp_pool2d(t, 3, 2, stride=(2, 1)))

    xa = lambda case: g.randn(g.rng_for(case), 2, 5, 7, 3)
    pool_case(g, "adaptive_avg_pool2d", """torch: F.adaptive_avg_pool2d(x, (3, 2)) from 5x7 (overlapping bins)
glia: adaptive_avg_pool(x, {output_size {3, 2}})""",
              xa("adaptive_avg_pool2d"), lambda t: F.adaptive_avg_pool2d(t, (3, 2)))
    pool_case(g, "adaptive_max_pool2d", """torch: F.adaptive_max_pool2d(x, (3, 2)) from 5x7
glia: adaptive_max_pool(x, {output_size {3, 2}})""",
              xa("adaptive_max_pool2d"), lambda t: F.adaptive_max_pool2d(t, (3, 2)))
    case = "adaptive_lp_pool2d"
    x = xa(case)
    g.write(case, """closed form (PyTorch has no adaptive LP pool): (sum over PyTorch's bins of x^2)^(1/2), 5x7 -> 3x2
glia: adaptive_lp_pool(x, {output_size {3, 2}, norm 2})""",
            [("input.x", x), ("output", adaptive_lp_numpy(x, (3, 2), 2).astype(np.float32))])

    xg = lambda case: g.randn(g.rng_for(case), 2, 4, 5, 3)
    pool_case(g, "global_avg_pool2d", """torch: x.mean(dim=(2, 3)); glia: global_avg_pool(x)""",
              xg("global_avg_pool2d"), lambda t: t.mean(dim=(2, 3)))
    pool_case(g, "global_max_pool2d", """torch: x.amax(dim=(2, 3)); glia: global_max_pool(x)""",
              xg("global_max_pool2d"), lambda t: t.amax(dim=(2, 3)))
    pool_case(g, "global_lp_pool2d", """torch: F.lp_pool2d(x, 2, (4, 5)) over the whole image
glia: global_lp_pool(x, {norm 2}) -> [N, C]""",
              xg("global_lp_pool2d"), lambda t: F.lp_pool2d(t, 2, (4, 5)).flatten(1))
