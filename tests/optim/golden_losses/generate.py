#!/usr/bin/python3
"""Golden values for glia's losses, from PyTorch (torch.nn.functional).

Run from anywhere (needs Debian's python3-torch and python3-numpy, hence /usr/bin/python3):

    /usr/bin/python3 tests/optim/golden_losses/generate.py

It (re)writes one fixture file per case, <case>.txt, beside this script. The fixtures are
COMMITTED: tests/optim/losses_test.cpp and ctc_test.cpp read them (with
tests/golden_fixture.hpp) and never need Python. Every case draws from its own generator
seeded with crc32(case name). Format: one tensor a line, `name dtype dims... : values...`
(see tests/layers/golden/generate.py); everything here is f64 (or i64 for labels).

Tensor names: input.y_true, input.y_pred (and input.input_lengths, input.label_lengths for
CTC), output.none, output.mean, output.sum.

REDUCTIONS: glia's losses (like Axon's) reduce each example to one value first, the mean over
its non-batch axes (after the sum over the class axis for the class-axis losses), then
reduction none keeps those [batch] values, mean averages and sum adds them. So:
  output.none = PyTorch's reduction='none', averaged here over the non-batch axes;
  output.mean = PyTorch's reduction='mean' (or 'batchmean' for kl_div), which is the same;
  output.sum  = output.none summed (PyTorch's 'sum' adds every element instead).
"""

import os
import zlib

import numpy as np
import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
_written = []

_DTYPES = {np.dtype(np.float64): "f64", np.dtype(np.int64): "i64"}


def _fmt(a):
    if a.dtype == np.float64:
        return lambda v: repr(float(v))
    return lambda v: str(int(v))


def write(case, comment, tensors):
    lines = ["# glia golden fixture '%s', written by generate.py; do not edit." % case]
    lines += ["# " + c for c in comment.strip().splitlines()]
    for name, a in tensors:
        a = np.asarray(a.detach().numpy() if torch.is_tensor(a) else a)
        f = _fmt(a)
        head = " ".join([name, _DTYPES[a.dtype]] + [str(d) for d in a.shape])
        lines.append(head + " : " + " ".join(f(v) for v in a.reshape(-1)))
    path = os.path.join(HERE, case + ".txt")
    with open(path, "w") as out:
        out.write("\n".join(lines) + "\n")
    _written.append((case, os.path.getsize(path)))


def rng(case):
    return np.random.default_rng(zlib.crc32(case.encode()))


def t(a):
    return torch.tensor(np.asarray(a), dtype=torch.float64)


def per_example(v):
    """PyTorch's 'none' output -> [batch]: the mean over every axis but the first."""
    v = v.detach()
    return v.reshape(v.shape[0], -1).mean(dim=1) if v.dim() > 1 else v


def outputs(none, mean):
    none = per_example(none)
    return [("output.none", none), ("output.mean", mean), ("output.sum", none.sum())]


def elementwise(case, comment, y_true, y_pred, fn, pred_name="y_pred"):
    """A loss PyTorch computes element-wise: fn(y_true, y_pred, reduction)."""
    yt, yp = t(y_true), t(y_pred)
    write(case, comment, [("input.y_true", yt), ("input.y_pred", yp)]
          + outputs(fn(yt, yp, "none"), fn(yt, yp, "mean")))


# ---- Cross-entropy ------------------------------------------------------------------------

def cross_entropy_cases():
    for case, weighted, smoothing in [("cce_logits", False, 0.0),
                                      ("cce_logits_weighted", True, 0.0),
                                      ("cce_logits_smoothing", False, 0.2),
                                      ("cce_logits_weighted_smoothing", True, 0.2)]:
        g = rng(case)
        x = t(g.normal(0, 2, (6, 4)))
        labels = torch.tensor(g.integers(0, 4, 6), dtype=torch.int64)
        w = t(g.uniform(0.2, 2.0, 4)) if weighted else None
        tensors = [("input.y_pred", x), ("input.labels", labels)]
        if weighted:
            tensors.append(("input.class_weights", w))

        def ce(r):
            return F.cross_entropy(x, labels, weight=w, reduction=r, label_smoothing=smoothing)
        write(case, """F.cross_entropy(logits, class indices, weight=%s, label_smoothing=%g).
With weights, mean is PyTorch's weighted mean sum(l_i) / sum(w[y_i]).""" % (
            "class_weights" if weighted else "None", smoothing),
            tensors + [("output.none", ce("none")), ("output.mean", ce("mean")),
                       ("output.sum", ce("sum"))])

    case = "cce_probabilities"
    g = rng(case)
    p = torch.softmax(t(g.normal(0, 1.5, (5, 3))), dim=-1)
    labels = torch.tensor(g.integers(0, 3, 5), dtype=torch.int64)
    write(case, "F.nll_loss(log(probabilities), class indices): from_logits = false.",
          [("input.y_pred", p), ("input.labels", labels)]
          + [("output." + r, F.nll_loss(torch.log(p), labels, reduction=r))
             for r in ("none", "mean", "sum")])


def binary_cross_entropy_cases():
    w0, w1 = 0.3, 2.0
    for case, logits, weighted, smoothing in [("bce_probabilities", False, False, 0.0),
                                              ("bce_probabilities_weighted", False, True, 0.0),
                                              ("bce_logits", True, False, 0.0),
                                              ("bce_logits_weighted", True, True, 0.0),
                                              ("bce_logits_smoothing", True, False, 0.1)]:
        g = rng(case)
        y = t(g.integers(0, 2, (4, 3)))
        x = t(g.normal(0, 3, (4, 3))) if logits else t(g.uniform(0.02, 0.98, (4, 3)))
        target = y * (1 - smoothing) + smoothing / 2
        weight = y * w1 + (1 - y) * w0 if weighted else None
        fn = F.binary_cross_entropy_with_logits if logits else F.binary_cross_entropy
        write(case, """%s(y_pred, y_true * (1 - s) + s / 2, weight) with s = %g; class_weights
{%g, %g} (negative, positive) when weighted: the per-element weight y w1 + (1 - y) w0.""" % (
            fn.__name__, smoothing, w0, w1),
            [("input.y_true", y), ("input.y_pred", x)]
            + outputs(fn(x, target, weight=weight, reduction="none"),
                      fn(x, target, weight=weight, reduction="mean")))


def kl_divergence_case():
    case = "kl_divergence"
    g = rng(case)
    y_true = torch.softmax(t(g.normal(0, 1, (4, 5))), dim=-1)
    y_true[1, 2] = 0.0  # 0 log 0 = 0
    y_true[3, 0] = 0.0
    y_true = y_true / y_true.sum(dim=-1, keepdim=True)
    y_pred = torch.softmax(t(g.normal(0, 1, (4, 5))), dim=-1)
    none = F.kl_div(torch.log(y_pred), y_true, reduction="none").sum(dim=-1)
    write(case, """F.kl_div(log(y_pred), y_true): the per-example value sums over the class
axis (reduction='none' summed over the last axis; mean is 'batchmean').""",
          [("input.y_true", y_true), ("input.y_pred", y_pred)]
          + [("output.none", none),
             ("output.mean", F.kl_div(torch.log(y_pred), y_true, reduction="batchmean")),
             ("output.sum", F.kl_div(torch.log(y_pred), y_true, reduction="sum"))])


# ---- Margins --------------------------------------------------------------------------------

def margin_cases():
    case = "hinge"
    g = rng(case)
    y = g.choice([-1.0, 1.0], (5, 3))
    x = g.normal(0, 1.5, (5, 3))
    elementwise(case, """max(0, 1 - y x) as F.hinge_embedding_loss(y x, -1, margin=1), which
is max(0, margin - input) for target -1.""", y, x,
                lambda yt, yp, r: F.hinge_embedding_loss(yt * yp, -torch.ones_like(yp),
                                                         margin=1.0, reduction=r))

    case = "margin_ranking"
    g = rng(case)
    y = t(g.choice([-1.0, 1.0], (5, 2)))
    x1, x2 = t(g.normal(0, 1, (5, 2))), t(g.normal(0, 1, (5, 2)))

    def mr(r):
        return F.margin_ranking_loss(x1, x2, y, margin=0.3, reduction=r)
    write(case, """F.margin_ranking_loss(x1, x2, y, margin=0.3); y_pred stacks x1 and x2 on a
leading axis: [2, batch, ...].""",
          [("input.y_true", y), ("input.y_pred", torch.stack([x1, x2]))]
          + outputs(mr("none"), mr("mean")))

    case = "soft_margin"
    g = rng(case)
    elementwise(case, "F.soft_margin_loss: log(1 + exp(-y x)).",
                g.choice([-1.0, 1.0], (4, 3)), g.normal(0, 2, (4, 3)),
                lambda yt, yp, r: F.soft_margin_loss(yp, yt, reduction=r))


# ---- Regression -----------------------------------------------------------------------------

def regression_cases():
    case = "mean_absolute_error"
    g = rng(case)
    elementwise(case, "F.l1_loss.", g.normal(0, 1, (4, 3)), g.normal(0, 1, (4, 3)),
                lambda yt, yp, r: F.l1_loss(yp, yt, reduction=r))

    case = "mean_squared_error"
    g = rng(case)
    elementwise(case, "F.mse_loss.", g.normal(0, 1, (4, 3)), g.normal(0, 1, (4, 3)),
                lambda yt, yp, r: F.mse_loss(yp, yt, reduction=r))

    case = "mean_squared_error_rank3"
    g = rng(case)
    elementwise(case, """F.mse_loss on [batch, 2, 3]: the per-example value averages both
non-batch axes.""", g.normal(0, 1, (3, 2, 3)), g.normal(0, 1, (3, 2, 3)),
                lambda yt, yp, r: F.mse_loss(yp, yt, reduction=r))

    case = "huber"
    g = rng(case)
    elementwise(case, "F.huber_loss(delta=0.7): differences on both sides of delta.",
                g.normal(0, 1, (5, 3)), g.normal(0, 1, (5, 3)),
                lambda yt, yp, r: F.huber_loss(yp, yt, delta=0.7, reduction=r))

    case = "poisson"
    g = rng(case)
    rate = g.uniform(0.1, 4.0, (4, 3))
    elementwise(case, """F.poisson_nll_loss(rate, y, log_input=False, full=False, eps=1e-7):
rate - y log(rate + 1e-7).""", g.poisson(rate).astype(np.float64), g.uniform(0.1, 4.0, (4, 3)),
                lambda yt, yp, r: F.poisson_nll_loss(yp, yt, log_input=False, full=False,
                                                     eps=1e-7, reduction=r))

    case = "poisson_logits"
    g = rng(case)
    elementwise(case, """F.poisson_nll_loss(log_rate, y, log_input=True, full=False):
exp(x) - y x.""", g.poisson(1.5, (4, 3)).astype(np.float64), g.normal(0, 1, (4, 3)),
                lambda yt, yp, r: F.poisson_nll_loss(yp, yt, log_input=True, full=False,
                                                     reduction=r))


# ---- CTC ------------------------------------------------------------------------------------

def ctc_case(case, comment, batch, time, classes, labels, label_lengths, input_lengths, blank):
    g = rng(case)
    log_probs = torch.log_softmax(t(g.normal(0, 1.5, (batch, time, classes))), dim=-1)
    labels = torch.tensor(labels, dtype=torch.int64)
    ll = torch.tensor(label_lengths, dtype=torch.int64)
    il = torch.tensor(input_lengths, dtype=torch.int64)

    def ctc(r):
        return F.ctc_loss(log_probs.transpose(0, 1), labels, il, ll, blank=blank, reduction=r)
    write(case, comment + """
F.ctc_loss(log_probs [time, batch, classes], labels [batch, L], input_lengths, label_lengths,
blank=%d); glia takes log_probs [batch, time, classes]. mean is PyTorch's: each loss divided
by its label length, then averaged.""" % blank,
          [("input.y_pred", log_probs), ("input.y_true", labels), ("input.input_lengths", il),
           ("input.label_lengths", ll)]
          + [("output." + r, ctc(r)) for r in ("none", "mean", "sum")])


def ctc_cases():
    ctc_case("ctc", "Labels with a repeat (1 1), padded; full and shorter inputs.",
             3, 8, 5, [[1, 1, 2, 3], [4, 2, 0, 0], [3, 0, 0, 0]], [4, 2, 1], [8, 6, 7], 0)
    ctc_case("ctc_blank_last", """The blank is the last class; an empty label sequence (length
0); padding with arbitrary values past the label lengths.""",
             3, 6, 4, [[0, 1, 1], [2, 2, 3], [1, 0, 2]], [3, 0, 2], [6, 5, 4], 3)


def main():
    cross_entropy_cases()
    binary_cross_entropy_cases()
    kl_divergence_case()
    margin_cases()
    regression_cases()
    ctc_cases()
    for case, size in _written:
        print("%-32s %6d bytes" % (case, size))


if __name__ == "__main__":
    main()
