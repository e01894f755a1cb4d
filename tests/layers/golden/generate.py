#!/usr/bin/python3
"""Golden values for glia's layers, from PyTorch (or a closed form written in numpy).

Run from anywhere (needs Debian's python3-torch and python3-numpy, hence /usr/bin/python3):

    /usr/bin/python3 tests/layers/golden/generate.py

It (re)writes one fixture file per case, <case>.txt, beside this script. The fixtures are
COMMITTED: tests/layers/golden_test.cpp, attention_golden_test.cpp and
recurrent_golden_test.cpp read them and never need Python. Rerun this script only when a
case is added or changed, and commit the script and the fixtures together
(attention_cases.py and recurrent_cases.py beside it write the attention and the lstm / gru
cases).
Every case draws from its own generator seeded with crc32(case name), so adding a case does
not change the others.

Fixture format (text, one tensor per line, '#' lines are comments):

    name dtype dim0 dim1 ... : v0 v1 v2 ...

dtype is glia's name (f32, f64, i64, bool written 0 and 1); no dims means a scalar; values
are row-major, f32 printed with 9 significant digits, f64 with repr (shortest round trip),
both exact; inf and nan as "inf", "-inf", "nan". Tensor names:
    input.<n>          a model input named <n> ("x" for single-input layers; "a", "b", ...)
    param.<p>          the layer's trained parameter <p> (glia's name, glia's layout); the
                       layer is the model's last one that declares parameters
    param.<l>.<p>      parameter <p> of the layer named <l> (a model of several layers;
                       state.<l>.<p> and train.state.<l>.<p> likewise)
    state.<p>          the layer's state (running statistics) before the call
    output             predict(...) in inference mode
    output.<variant>   several outputs of one input (the activations, final states)
    train.output       predict.train(...) output (batch_norm, instance_norm)
    train.state.<p>    the state after that train step

LAYOUTS: everything in a fixture is already in glia's layout, the transposes are done here:
inputs are channels-last ([N, spatial..., C]; PyTorch takes [N, C, spatial...]); conv
kernels are [spatial..., in / groups, out] (PyTorch Conv weight is [out, in / groups,
spatial...], ConvTranspose weight [in, out / groups, spatial...]); the dense kernel is
Linear's weight transposed ([in, out]); multi_head_attention's q/k/v/out kernels are
nn.MultiheadAttention's in_proj_weight split into its three [E, in] blocks and out_proj.weight,
each transposed (attention_cases.py, which writes the attention cases, spells it out).

PRECISION: inputs and parameters are drawn as float32; PyTorch then computes in float64
on those exact values and the result is rounded to the fixture's dtype, so an f32 fixture
holds the correctly rounded answer (not PyTorch's f32 rounding errors).
"""

import os
import sys
import warnings
import zlib

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from attention_cases import attention_cases
from recurrent_cases import recurrent_cases

HERE = os.path.dirname(os.path.abspath(__file__))
_written = []


# ---- Writing -------------------------------------------------------------------------------

def _fmt(a):
    if a.dtype == np.float32:
        return lambda v: "%.9g" % v
    if a.dtype == np.float64:
        return lambda v: repr(float(v))
    return lambda v: str(int(v))


_DTYPES = {np.dtype(np.float32): "f32", np.dtype(np.float64): "f64",
           np.dtype(np.int64): "i64", np.dtype(np.int32): "i32", np.dtype(np.bool_): "bool"}


def write(case, comment, tensors):
    """tensors: list of (name, numpy array) in the order they are written."""
    lines = ["# glia golden fixture '%s', written by generate.py; do not edit." % case]
    lines += ["# " + c for c in comment.strip().splitlines()]
    for name, a in tensors:
        a = np.asarray(a)
        dt = _DTYPES[a.dtype]
        f = _fmt(a)
        head = " ".join([name, dt] + [str(d) for d in a.shape])
        lines.append(head + " : " + " ".join(f(v) for v in a.reshape(-1)))
    path = os.path.join(HERE, case + ".txt")
    with open(path, "w") as out:
        out.write("\n".join(lines) + "\n")
    _written.append((case, os.path.getsize(path)))


# ---- Helpers -------------------------------------------------------------------------------

def rng_for(case):
    return np.random.default_rng(zlib.crc32(case.encode()))


def randn(rng, *shape, scale=1.0, shift=0.0):
    return (rng.standard_normal(shape) * scale + shift).astype(np.float32)


def uniform(rng, lo, hi, *shape):
    return rng.uniform(lo, hi, shape).astype(np.float32)


def t64(a):
    return torch.from_numpy(np.asarray(a, dtype=np.float64))


def out32(t):
    return t.detach().numpy().astype(np.float32)


def to_first(x):  # [N, spatial..., C] -> [N, C, spatial...]
    return np.moveaxis(x, -1, 1)


def to_last(x):  # [N, C, spatial...] -> [N, spatial..., C]
    return np.moveaxis(x, 1, -1)


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


def set_params(module, **params):
    """Copies float32 numpy values into a float64 module's parameters and buffers."""
    module.double()
    with torch.no_grad():
        for name, value in params.items():
            getattr(module, name).copy_(t64(value))
    return module


# ---- Linear --------------------------------------------------------------------------------

def linear_cases():
    for case, shape in [("dense", (3, 5)), ("dense_rank3", (2, 3, 5))]:
        rng = rng_for(case)
        x = randn(rng, *shape)
        w, b = randn(rng, 4, 5, scale=0.5), randn(rng, 4, scale=0.1)
        m = set_params(nn.Linear(5, 4), weight=w, bias=b)
        write(case, "torch: nn.Linear(5, 4); glia: dense(x, 4), kernel = weight^T",
              [("input.x", x), ("param.kernel", w.T.copy()), ("param.bias", b),
               ("output", out32(m(t64(x))))])

    case = "bilinear"
    rng = rng_for(case)
    a, b = randn(rng, 3, 4), randn(rng, 3, 5)
    w, bias = randn(rng, 2, 4, 5, scale=0.5), randn(rng, 2, scale=0.1)
    m = set_params(nn.Bilinear(4, 5, 2), weight=w, bias=bias)
    write(case, "torch: nn.Bilinear(4, 5, 2); glia: bilinear(a, b, 2), kernel = weight",
          [("input.a", a), ("input.b", b), ("param.kernel", w), ("param.bias", bias),
           ("output", out32(m(t64(a), t64(b))))])

    case = "embedding"
    rng = rng_for(case)
    ids = rng.integers(0, 7, size=(2, 5)).astype(np.int64)
    ids[0, 0], ids[1, 4] = 0, 6  # both ends of the vocabulary
    w = randn(rng, 7, 3)
    m = set_params(nn.Embedding(7, 3), weight=w)
    write(case, "torch: nn.Embedding(7, 3); glia: embedding(ids, 7, 3), kernel = weight",
          [("input.x", ids), ("param.kernel", w), ("output", out32(m(torch.from_numpy(ids))))])


# ---- Convolution ---------------------------------------------------------------------------

def conv_case(case, comment, x, module, w, b):
    """x channels-last; module a torch ConvNd; w, b its weight and bias (float32)."""
    set_params(module, weight=w, bias=b)
    y = to_last(module(t64(to_first(x))).detach().numpy())
    write(case, comment, [("input.x", x), ("param.kernel", conv_kernel_to_glia(w)),
                          ("param.bias", b), ("output", y.astype(np.float32))])


def conv_cases():
    case = "conv1d"
    rng = rng_for(case)
    conv_case(case, """torch: nn.Conv1d(3, 4, 3, stride=2, padding=1)
glia: conv(x, 4, {kernel_size {3}, strides {2}, padding {(1, 1)}})""",
              randn(rng, 2, 9, 3), nn.Conv1d(3, 4, 3, stride=2, padding=1),
              randn(rng, 4, 3, 3, scale=0.5), randn(rng, 4, scale=0.1))

    case = "conv1d_dilated_same"
    rng = rng_for(case)
    conv_case(case, """torch: nn.Conv1d(3, 2, 3, dilation=2, padding='same')
glia: conv(x, 2, {kernel_size {3}, padding "same", kernel_dilation {2}})""",
              randn(rng, 2, 8, 3), nn.Conv1d(3, 2, 3, dilation=2, padding="same"),
              randn(rng, 2, 3, 3, scale=0.5), randn(rng, 2, scale=0.1))

    case = "conv2d"
    rng = rng_for(case)
    conv_case(case, """torch: nn.Conv2d(4, 6, (3, 2), stride=(2, 1), padding=(1, 0), dilation=(1, 2), groups=2)
glia: conv(x, 6, {kernel_size {3, 2}, strides {2, 1}, padding {(1, 1), (0, 0)},
                  kernel_dilation {1, 2}, feature_groups 2})""",
              randn(rng, 2, 6, 7, 4),
              nn.Conv2d(4, 6, (3, 2), stride=(2, 1), padding=(1, 0), dilation=(1, 2), groups=2),
              randn(rng, 6, 2, 3, 2, scale=0.5), randn(rng, 6, scale=0.1))

    case = "conv2d_same"
    rng = rng_for(case)
    conv_case(case, """torch: nn.Conv2d(3, 2, (4, 3), padding='same') (even kernel: 1 before, 2 after)
glia: conv(x, 2, {kernel_size {4, 3}, padding "same"})""",
              randn(rng, 1, 5, 6, 3), nn.Conv2d(3, 2, (4, 3), padding="same"),
              randn(rng, 2, 3, 4, 3, scale=0.5), randn(rng, 2, scale=0.1))

    case = "conv3d"
    rng = rng_for(case)
    conv_case(case, """torch: nn.Conv3d(2, 4, (2, 3, 2), stride=(1, 2, 1), padding=(1, 1, 0), groups=2)
glia: conv(x, 4, {kernel_size {2, 3, 2}, strides {1, 2, 1}, padding {(1, 1), (1, 1), (0, 0)},
                  feature_groups 2})""",
              randn(rng, 1, 4, 5, 4, 2),
              nn.Conv3d(2, 4, (2, 3, 2), stride=(1, 2, 1), padding=(1, 1, 0), groups=2),
              randn(rng, 4, 1, 2, 3, 2, scale=0.5), randn(rng, 4, scale=0.1))

    case = "depthwise_conv2d"
    rng = rng_for(case)
    conv_case(case, """torch: nn.Conv2d(3, 6, 3, padding=1, groups=3)
glia: depthwise_conv(x, 2, {kernel_size {3, 3}, padding {(1, 1), (1, 1)}}), kernel [3, 3, 1, 6]""",
              randn(rng, 2, 5, 5, 3), nn.Conv2d(3, 6, 3, padding=1, groups=3),
              randn(rng, 6, 1, 3, 3, scale=0.5), randn(rng, 6, scale=0.1))

    for case, spatial, filters, mult in [("separable_conv2d", (5, 6), 4, 2),
                                         ("separable_conv3d", (3, 4, 4), 3, 1)]:
        rng = rng_for(case)
        d = len(spatial)
        c = 3 if d == 2 else 2
        conv = nn.Conv2d if d == 2 else nn.Conv3d
        x = randn(rng, 2 if d == 2 else 1, *spatial, c)
        k = (3,) * d if d == 2 else (2,) * d
        dw, db = randn(rng, c * mult, 1, *k, scale=0.5), randn(rng, c * mult, scale=0.1)
        pw, pb = randn(rng, filters, c * mult, *(1,) * d, scale=0.5), randn(rng, filters, scale=0.1)
        depthwise = set_params(conv(c, c * mult, k, groups=c), weight=dw, bias=db)
        pointwise = set_params(conv(c * mult, filters, 1), weight=pw, bias=pb)
        y = to_last(pointwise(depthwise(t64(to_first(x)))).detach().numpy())
        write(case, """torch: nn.Conv%dd(%d, %d, %s, groups=%d) then nn.Conv%dd(%d, %d, 1)
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
        rng = rng_for(case)
        x = randn(rng, *x_shape)
        m = nn.ConvTranspose2d(**args)
        w = randn(rng, *m.weight.shape, scale=0.5)
        b = randn(rng, args["out_channels"], scale=0.1)
        set_params(m, weight=w, bias=b)
        y = to_last(m(t64(to_first(x))).detach().numpy())
        write(case, comment, [("input.x", x),
                              ("param.kernel", conv_transpose_kernel_to_glia(w, groups)),
                              ("param.bias", b), ("output", y.astype(np.float32))])


# ---- Activations ---------------------------------------------------------------------------

ACTIVATIONS = {
    "celu": lambda x: F.celu(x, alpha=1.0),
    "elu": lambda x: F.elu(x, alpha=1.0),
    "exp": torch.exp,
    "gelu": lambda x: F.gelu(x),
    "hard_sigmoid": F.hardsigmoid,  # relu6(x + 3) / 6
    "hard_silu": F.hardswish,
    "hard_tanh": F.hardtanh,
    "leaky_relu": lambda x: F.leaky_relu(x, 0.01),
    "linear": lambda x: x,
    "log_sumexp": lambda x: torch.logsumexp(x, dim=-1, keepdim=True),
    "log_sigmoid": F.logsigmoid,
    "log_softmax": lambda x: F.log_softmax(x, dim=-1),
    "mish": F.mish,
    "relu": F.relu,
    "relu6": F.relu6,
    "sigmoid": torch.sigmoid,
    "silu": F.silu,
    "selu": F.selu,
    "softmax": lambda x: F.softmax(x, dim=-1),
    "softplus": F.softplus,
    "softsign": F.softsign,
    "tanh": torch.tanh,
    # Not a layer name: activations::gelu(x, /*approximate=*/true).
    "gelu_tanh": lambda x: F.gelu(x, approximate="tanh"),
}


def activation_cases():
    rng = rng_for("activations")
    x = np.stack([
        randn(rng, 8, scale=3.0),
        np.array([-6, -3, -1, -0.5, 0, 0.5, 3, 6]),  # the kinks of relu6, hard_*
        np.array([-100, -50, -20, -10, 10, 20, 50, 100]),  # overflow / stability
        np.array([-1e-3, 1e-3, -1e-6, 2.5, -2.5, 1.5, -7, 7]),
    ]).astype(np.float32)
    for dtype, cast in [("f32", np.float32), ("f64", np.float64)]:
        xs = x.astype(cast)
        tensors = [("input.x", xs)]
        for name, fn in ACTIVATIONS.items():
            tensors.append(("output." + name, fn(t64(xs)).numpy().astype(cast)))
        write("activations_" + dtype, """torch.nn.functional equivalents of the 22 activations (defaults:
celu/elu alpha 1, leaky_relu 0.01, softplus beta 1, log_sumexp/log_softmax/softmax over the
last axis, log_sumexp keeping it); glia: activation(x, name); gelu_tanh: activations::gelu(x, true).
Rows: random, the kinks, large magnitudes (exp(100) overflows f32 to inf), small values.""",
              tensors)


# ---- Pooling -------------------------------------------------------------------------------

def pool_case(case, comment, x, fn):
    """x channels-last; fn maps a float64 NC... tensor to the pooled NC... tensor."""
    y = to_last(fn(t64(to_first(x))).numpy())
    write(case, comment, [("input.x", x), ("output", y.astype(np.float32))])


def adaptive_lp_numpy(x, out, p):
    """x [N, H, W, C]; PyTorch's bins start floor(i*in/out), end ceil((i+1)*in/out)."""
    x = x.astype(np.float64)
    bins = [[(i * n // o, -(-(i + 1) * n // o)) for i in range(o)] for n, o in zip(x.shape[1:3], out)]
    y = np.zeros((x.shape[0], out[0], out[1], x.shape[3]))
    for i, (h0, h1) in enumerate(bins[0]):
        for j, (w0, w1) in enumerate(bins[1]):
            y[:, i, j] = (x[:, h0:h1, w0:w1] ** p).sum(axis=(1, 2)) ** (1.0 / p)
    return y


def pooling_cases():
    x1 = lambda case: randn(rng_for(case), 2, 9, 3)
    x2 = lambda case: randn(rng_for(case), 2, 7, 6, 3)
    pool_case("max_pool1d", """torch: F.max_pool1d(x, 3, stride=2, padding=1)
glia: max_pool(x, {kernel_size {3}, strides {2}, padding {(1, 1)}})""",
              x1("max_pool1d"), lambda t: F.max_pool1d(t, 3, stride=2, padding=1))
    pool_case("avg_pool1d", """torch: F.avg_pool1d(x, 3, stride=2, padding=1, count_include_pad=True)
glia: avg_pool(x, {kernel_size {3}, strides {2}, padding {(1, 1)}}) (padding counts)""",
              x1("avg_pool1d"),
              lambda t: F.avg_pool1d(t, 3, stride=2, padding=1, count_include_pad=True))
    pool_case("lp_pool1d", """torch: F.lp_pool1d(x, 2, 3, stride=2) (PyTorch's LPPool has no padding)
glia: lp_pool(x, {kernel_size {3}, strides {2}, norm 2})""",
              x1("lp_pool1d"), lambda t: F.lp_pool1d(t, 2, 3, stride=2))
    pool_case("max_pool2d", """torch: F.max_pool2d(x, (3, 2), stride=2, padding=1)
glia: max_pool(x, {kernel_size {3, 2}, strides {2, 2}, padding {(1, 1), (1, 1)}})""",
              x2("max_pool2d"), lambda t: F.max_pool2d(t, (3, 2), stride=2, padding=1))
    pool_case("max_pool2d_dilated", """torch: F.max_pool2d(x, 2, stride=1, dilation=2)
glia: max_pool(x, {kernel_size {2, 2}, strides {1, 1}, window_dilation {2, 2}})""",
              x2("max_pool2d_dilated"), lambda t: F.max_pool2d(t, 2, stride=1, dilation=2))
    pool_case("avg_pool2d", """torch: F.avg_pool2d(x, (3, 2), stride=2, padding=1, count_include_pad=True)
glia: avg_pool(x, {kernel_size {3, 2}, strides {2, 2}, padding {(1, 1), (1, 1)}})""",
              x2("avg_pool2d"),
              lambda t: F.avg_pool2d(t, (3, 2), stride=2, padding=1, count_include_pad=True))
    # p = 3 on positive values: a negative window sum would make both sides NaN.
    pool_case("lp_pool2d", """torch: F.lp_pool2d(x, 3, 2, stride=(2, 1)) on positive x
glia: lp_pool(x, {kernel_size {2, 2}, strides {2, 1}, norm 3})""",
              np.abs(x2("lp_pool2d")) + np.float32(0.1),
              lambda t: F.lp_pool2d(t, 3, 2, stride=(2, 1)))

    xa = lambda case: randn(rng_for(case), 2, 5, 7, 3)
    pool_case("adaptive_avg_pool2d", """torch: F.adaptive_avg_pool2d(x, (3, 2)) from 5x7 (overlapping bins)
glia: adaptive_avg_pool(x, {output_size {3, 2}})""",
              xa("adaptive_avg_pool2d"), lambda t: F.adaptive_avg_pool2d(t, (3, 2)))
    pool_case("adaptive_max_pool2d", """torch: F.adaptive_max_pool2d(x, (3, 2)) from 5x7
glia: adaptive_max_pool(x, {output_size {3, 2}})""",
              xa("adaptive_max_pool2d"), lambda t: F.adaptive_max_pool2d(t, (3, 2)))
    case = "adaptive_lp_pool2d"
    x = xa(case)
    write(case, """closed form (PyTorch has no adaptive LP pool): (sum over PyTorch's bins of x^2)^(1/2), 5x7 -> 3x2
glia: adaptive_lp_pool(x, {output_size {3, 2}, norm 2})""",
          [("input.x", x), ("output", adaptive_lp_numpy(x, (3, 2), 2).astype(np.float32))])

    xg = lambda case: randn(rng_for(case), 2, 4, 5, 3)
    pool_case("global_avg_pool2d", """torch: x.mean(dim=(2, 3)); glia: global_avg_pool(x)""",
              xg("global_avg_pool2d"), lambda t: t.mean(dim=(2, 3)))
    pool_case("global_max_pool2d", """torch: x.amax(dim=(2, 3)); glia: global_max_pool(x)""",
              xg("global_max_pool2d"), lambda t: t.amax(dim=(2, 3)))
    pool_case("global_lp_pool2d", """torch: F.lp_pool2d(x, 2, (4, 5)) over the whole image
glia: global_lp_pool(x, {norm 2}) -> [N, C]""",
              xg("global_lp_pool2d"), lambda t: F.lp_pool2d(t, 2, (4, 5)).flatten(1))


# ---- Normalization -------------------------------------------------------------------------

def running_norm_case(case, comment, module, x):
    """batch_norm / instance_norm: inference with the given running statistics, then one
    train step (momentum 0.1) from the same statistics."""
    rng = rng_for(case + "/params")
    c = x.shape[-1]
    gamma, beta = randn(rng, c, scale=0.2, shift=1.0), randn(rng, c, scale=0.1)
    mean, var = randn(rng, c, scale=0.5), uniform(rng, 0.5, 2.0, c)
    set_params(module, weight=gamma, bias=beta, running_mean=mean, running_var=var)
    xt = t64(to_first(x))
    module.eval()
    y = to_last(module(xt).detach().numpy())
    module.train()
    yt = to_last(module(xt).detach().numpy())
    write(case, comment, [
        ("input.x", x), ("param.gamma", gamma), ("param.beta", beta),
        ("state.running_mean", mean), ("state.running_var", var),
        ("output", y.astype(np.float32)), ("train.output", yt.astype(np.float32)),
        ("train.state.running_mean", out32(module.running_mean)),
        ("train.state.running_var", out32(module.running_var))])


def normalization_cases():
    running_norm_case("batch_norm", """torch: nn.BatchNorm2d(3, eps=1e-5, momentum=0.1); eval, then one train step
glia: batch_norm(x); predict and predict.train""",
                      nn.BatchNorm2d(3), randn(rng_for("batch_norm"), 4, 3, 2, 3, shift=0.5))
    running_norm_case("batch_norm_1d", """torch: nn.BatchNorm1d(4) on [N, C]; eval, then one train step
glia: batch_norm(x)""", nn.BatchNorm1d(4), randn(rng_for("batch_norm_1d"), 6, 4, scale=2.0))
    running_norm_case("instance_norm", """torch: nn.InstanceNorm2d(3, affine=True, track_running_stats=True); eval, then one train step
glia: instance_norm(x)""", nn.InstanceNorm2d(3, affine=True, track_running_stats=True),
                      randn(rng_for("instance_norm"), 2, 4, 5, 3, shift=-0.3))

    case = "layer_norm"
    rng = rng_for(case)
    x, g, b = randn(rng, 3, 4, 6, scale=2.0), randn(rng, 6, scale=0.2, shift=1.0), randn(rng, 6)
    m = set_params(nn.LayerNorm(6), weight=g, bias=b)
    write(case, "torch: nn.LayerNorm(6) over the last axis; glia: layer_norm(x)",
          [("input.x", x), ("param.gamma", g), ("param.beta", b), ("output", out32(m(t64(x))))])

    case = "group_norm"
    rng = rng_for(case)
    x, g, b = randn(rng, 2, 3, 4, 6, shift=1.0), randn(rng, 6, scale=0.2, shift=1.0), randn(rng, 6)
    m = set_params(nn.GroupNorm(2, 6), weight=g, bias=b)
    y = to_last(m(t64(to_first(x))).detach().numpy())
    write(case, "torch: nn.GroupNorm(2, 6) (channels 0-2 and 3-5); glia: group_norm(x, 2)",
          [("input.x", x), ("param.gamma", g), ("param.beta", b),
           ("output", y.astype(np.float32))])

    case = "rms_norm"
    rng = rng_for(case)
    x, g = randn(rng, 3, 5, 8, scale=2.0), randn(rng, 8, scale=0.2, shift=1.0)
    xd = x.astype(np.float64)
    y = xd / np.sqrt((xd * xd).mean(axis=-1, keepdims=True) + 1e-5) * g
    write(case, "closed form (torch 1.13 has no RMSNorm): x / sqrt(mean(x^2, -1) + 1e-5) * gamma\n"
          "glia: rms_norm(x)",
          [("input.x", x), ("param.gamma", g), ("output", y.astype(np.float32))])


# ---- Shaping -------------------------------------------------------------------------------

def shaping_cases():
    case = "flatten"
    x = randn(rng_for(case), 2, 3, 4, 2)
    write(case, "numpy: x.reshape(2, 24); glia: flatten(x)",
          [("input.x", x), ("output", x.reshape(2, 24))])
    case = "reshape"
    x = randn(rng_for(case), 2, 3, 4)
    write(case, "numpy: x.reshape(2, 4, 3); glia: reshape(x, {4, -1})",
          [("input.x", x), ("output", x.reshape(2, 4, 3))])
    case = "transpose"
    x = randn(rng_for(case), 2, 3, 4, 5)
    write(case, "numpy: x.transpose(0, 3, 1, 2); glia: transpose(x, {2, 0, 1}) (batch axis kept)",
          [("input.x", x), ("output", np.ascontiguousarray(x.transpose(0, 3, 1, 2)))])
    case = "pad"
    x = randn(rng_for(case), 2, 3, 4)
    write(case, "numpy: np.pad(x, ((0, 0), (1, 2), (0, 1)), constant_values=0.5)\n"
          "glia: pad(x, {(1, 2), (0, 1)}, 0.5)",
          [("input.x", x), ("output", np.pad(x, ((0, 0), (1, 2), (0, 1)), constant_values=0.5))])

    # glia's "nearest" takes source index floor((i + 0.5) * in / out) (half-pixel centres,
    # as Axon, JAX and TensorFlow 2): PyTorch's mode 'nearest-exact'. PyTorch's legacy
    # 'nearest' (floor(i * in / out)) agrees only for integer upsampling factors.
    for case, mode, shape, size in [
            ("resize_nearest_up2", "nearest", (2, 3, 4, 2), (6, 8)),
            ("resize_nearest_up", "nearest-exact", (1, 3, 4, 2), (5, 7)),
            ("resize_nearest_down", "nearest-exact", (1, 6, 7, 2), (4, 3)),
            ("resize_bilinear_up", "bilinear", (1, 3, 4, 2), (5, 7)),
            ("resize_bilinear_down", "bilinear", (1, 6, 7, 2), (4, 3))]:
        x = randn(rng_for(case), *shape)
        kw = {"align_corners": False, "antialias": False} if mode == "bilinear" else {}
        y = to_last(F.interpolate(t64(to_first(x)), size=size, mode=mode, **kw).numpy())
        write(case, "torch: F.interpolate(x, size=%s, mode='%s'%s)\nglia: resize(x, {%d, %d}, "
              "{method \"%s\"})" % (size, mode, ", align_corners=False" if kw else "", size[0],
                                    size[1], mode.split("-")[0]),
              [("input.x", x), ("output", y.astype(np.float32))])


# ---- Combining -----------------------------------------------------------------------------

def combine_cases():
    case = "concatenate"
    rng = rng_for(case)
    a, b = randn(rng, 2, 3, 2), randn(rng, 2, 3, 4)
    write(case, "numpy: np.concatenate([a, b], -1); glia: concatenate({a, b})",
          [("input.a", a), ("input.b", b), ("output", np.concatenate([a, b], -1))])
    case = "concatenate_axis1"
    rng = rng_for(case)
    a, b, c = randn(rng, 2, 1, 3), randn(rng, 2, 2, 3), randn(rng, 2, 3, 3)
    write(case, "numpy: np.concatenate([a, b, c], 1); glia: concatenate({a, b, c}, 1)",
          [("input.a", a), ("input.b", b), ("input.c", c),
           ("output", np.concatenate([a, b, c], 1))])
    case = "add"
    rng = rng_for(case)
    a, b, c = randn(rng, 2, 3, 4), randn(rng, 2, 1, 4), randn(rng, 2, 3, 4)
    write(case, "numpy: a + b + c (b broadcasts over axis 1); glia: add({a, b, c})",
          [("input.a", a), ("input.b", b), ("input.c", c),
           ("output", (a.astype(np.float64) + b + c).astype(np.float32))])
    case = "subtract"
    rng = rng_for(case)
    a, b = randn(rng, 2, 3), randn(rng, 2, 3)
    write(case, "numpy: a - b; glia: subtract(a, b)",
          [("input.a", a), ("input.b", b), ("output", a - b)])
    case = "multiply"
    rng = rng_for(case)
    a, b = randn(rng, 2, 3, 4), randn(rng, 2, 3, 4)
    write(case, "numpy: a * b; glia: multiply({a, b})",
          [("input.a", a), ("input.b", b), ("output", a * b)])


def main():
    torch.set_num_threads(1)
    warnings.filterwarnings("ignore")  # PyTorch's note on even 'same' kernels
    np.seterr(over="ignore")  # exp(100) overflowing f32 to inf is intended
    linear_cases()
    conv_cases()
    activation_cases()
    pooling_cases()
    normalization_cases()
    shaping_cases()
    combine_cases()
    attention_cases(sys.modules[__name__])
    recurrent_cases(sys.modules[__name__])
    total = sum(size for _, size in _written)
    print("wrote %d fixtures, %d bytes, to %s" % (len(_written), total, HERE))


if __name__ == "__main__":
    main()
