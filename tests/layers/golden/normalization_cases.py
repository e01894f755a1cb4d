"""Golden cases for glia's normalization layers (batch_norm, instance_norm, layer_norm,
group_norm, rms_norm; tests/layers/golden_test.cpp), written by generate.py, which passes
itself in as `g` (write, rng_for, randn, uniform, t64, out32, set_params, to_first, to_last).
"""

import numpy as np
import torch.nn as nn


def running_norm_case(g, case, comment, module, x):
    """batch_norm / instance_norm: inference with the given running statistics, then one
    train step (momentum 0.1) from the same statistics."""
    rng = g.rng_for(case + "/params")
    c = x.shape[-1]
    gamma, beta = g.randn(rng, c, scale=0.2, shift=1.0), g.randn(rng, c, scale=0.1)
    mean, var = g.randn(rng, c, scale=0.5), g.uniform(rng, 0.5, 2.0, c)
    g.set_params(module, weight=gamma, bias=beta, running_mean=mean, running_var=var)
    xt = g.t64(g.to_first(x))
    module.eval()
    y = g.to_last(module(xt).detach().numpy())
    module.train()
    yt = g.to_last(module(xt).detach().numpy())
    g.write(case, comment, [
        ("input.x", x), ("param.gamma", gamma), ("param.beta", beta),
        ("state.running_mean", mean), ("state.running_var", var),
        ("output", y.astype(np.float32)), ("train.output", yt.astype(np.float32)),
        ("train.state.running_mean", g.out32(module.running_mean)),
        ("train.state.running_var", g.out32(module.running_var))])


def normalization_cases(g):
    running_norm_case(g, "batch_norm", """torch: nn.BatchNorm2d(3, eps=1e-5, momentum=0.1); eval, then one train step
glia: batch_norm(x); predict and predict.train""",
                      nn.BatchNorm2d(3), g.randn(g.rng_for("batch_norm"), 4, 3, 2, 3, shift=0.5))
    running_norm_case(g, "batch_norm_1d", """torch: nn.BatchNorm1d(4) on [N, C]; eval, then one train step
glia: batch_norm(x)""", nn.BatchNorm1d(4), g.randn(g.rng_for("batch_norm_1d"), 6, 4, scale=2.0))
    running_norm_case(g, "instance_norm", """torch: nn.InstanceNorm2d(3, affine=True, track_running_stats=True); eval, then one train step
glia: instance_norm(x)""", nn.InstanceNorm2d(3, affine=True, track_running_stats=True),
                      g.randn(g.rng_for("instance_norm"), 2, 4, 5, 3, shift=-0.3))

    case = "layer_norm"
    rng = g.rng_for(case)
    x = g.randn(rng, 3, 4, 6, scale=2.0)
    gamma, beta = g.randn(rng, 6, scale=0.2, shift=1.0), g.randn(rng, 6)
    m = g.set_params(nn.LayerNorm(6), weight=gamma, bias=beta)
    g.write(case, "torch: nn.LayerNorm(6) over the last axis; glia: layer_norm(x)",
            [("input.x", x), ("param.gamma", gamma), ("param.beta", beta),
             ("output", g.out32(m(g.t64(x))))])

    case = "group_norm"
    rng = g.rng_for(case)
    x = g.randn(rng, 2, 3, 4, 6, shift=1.0)
    gamma, beta = g.randn(rng, 6, scale=0.2, shift=1.0), g.randn(rng, 6)
    m = g.set_params(nn.GroupNorm(2, 6), weight=gamma, bias=beta)
    y = g.to_last(m(g.t64(g.to_first(x))).detach().numpy())
    g.write(case, "torch: nn.GroupNorm(2, 6) (channels 0-2 and 3-5); glia: group_norm(x, 2)",
            [("input.x", x), ("param.gamma", gamma), ("param.beta", beta),
             ("output", y.astype(np.float32))])

    case = "rms_norm"
    rng = g.rng_for(case)
    x, gamma = g.randn(rng, 3, 5, 8, scale=2.0), g.randn(rng, 8, scale=0.2, shift=1.0)
    xd = x.astype(np.float64)
    y = xd / np.sqrt((xd * xd).mean(axis=-1, keepdims=True) + 1e-5) * gamma
    g.write(case, "closed form (torch 1.13 has no RMSNorm): x / sqrt(mean(x^2, -1) + 1e-5) * "
            "gamma\nglia: rms_norm(x)",
            [("input.x", x), ("param.gamma", gamma), ("output", y.astype(np.float32))])
