#!/usr/bin/python3
"""Golden values for glia's layers, from PyTorch (or a closed form written in numpy).

Run from anywhere (needs Debian's python3-torch and python3-numpy, hence /usr/bin/python3):

    /usr/bin/python3 tests/layers/golden/generate.py

It (re)writes one fixture file per case, <case>.txt, beside this script. The fixtures are
COMMITTED: tests/layers/golden_test.cpp, attention_golden_test.cpp and
recurrent_golden_test.cpp read them and never need Python. Rerun this script only when a
case is added or changed, and commit the script and the fixtures together. This file writes
the linear, activation, shaping and combining cases; the modules beside it the rest:
conv_cases.py, pooling_cases.py, normalization_cases.py, attention_cases.py and
recurrent_cases.py (lstm / gru), each given this module as `g` for its helpers.
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
spatial...], ConvTranspose weight [in, out / groups, spatial...]; conv_cases.py converts);
the dense kernel is Linear's weight transposed ([in, out]); multi_head_attention's q/k/v/out
kernels are nn.MultiheadAttention's in_proj_weight split into its three [E, in] blocks and
out_proj.weight, each transposed (attention_cases.py spells it out).

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
from conv_cases import conv_cases
from normalization_cases import normalization_cases
from pooling_cases import pooling_cases
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
    g = sys.modules[__name__]  # the case modules' helpers (write, rng_for, randn, ...)
    torch.set_num_threads(1)
    warnings.filterwarnings("ignore")  # PyTorch's note on even 'same' kernels
    np.seterr(over="ignore")  # exp(100) overflowing f32 to inf is intended
    linear_cases()
    conv_cases(g)
    activation_cases()
    pooling_cases(g)
    normalization_cases(g)
    shaping_cases()
    combine_cases()
    attention_cases(g)
    recurrent_cases(g)
    total = sum(size for _, size in _written)
    print("wrote %d fixtures, %d bytes, to %s" % (len(_written), total, HERE))


if __name__ == "__main__":
    main()
