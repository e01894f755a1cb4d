#!/usr/bin/python3
"""Golden parameter trajectories of PyTorch's optimizers, for glia's optimizers.

Run from anywhere (needs Debian's python3-torch and python3-numpy, hence /usr/bin/python3):

    /usr/bin/python3 tests/optim/golden/generate.py

It (re)writes problem.txt and one fixture per case, <case>.txt, beside this script. The
fixtures are COMMITTED: tests/optim/optimizers_test.cpp reads them and never needs Python.
Rerun this script only when a case is added or changed, and commit it with the fixtures.

The problem (problem.txt): parameters w [3, 2] and b [2] (glia layer "dense", parameters
"kernel" and "bias") and STEPS gradient maps grad.<k>.w, grad.<k>.b (k = 0 .. STEPS-1),
drawn as float32 from a generator seeded with crc32("problem") and stored as f64 (exact).
Each case sets p.grad to grad.<k> by hand before the k-th optimizer.step(), in float64,
and records the parameters after it: <case>.txt holds w.<k>, b.<k> (k = 1 .. STEPS), f64.

Fixture format (the one of tests/layers/golden): one tensor per line,
    name dtype dim0 dim1 ... : v0 v1 v2 ...
with '#' comment lines; f64 values printed with repr (exact).

Where Optax and PyTorch place eps differently (Adagrad and RMSProp: PyTorch divides by
sqrt(v) + eps, Optax by sqrt(v + eps); RAdam: PyTorch's eps is scaled by sqrt(1 - b2^t))
the cases use small eps and the test compares within a tolerance that covers it.
"""

import os
import zlib

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
STEPS = 10


def write(case, comment, tensors):
    lines = ["# glia golden fixture '%s', written by generate.py; do not edit." % case]
    lines += ["# " + c for c in comment.strip().splitlines()]
    for name, a in tensors:
        a = np.asarray(a, dtype=np.float64)
        head = " ".join([name, "f64"] + [str(d) for d in a.shape])
        lines.append(head + " : " + " ".join(repr(float(v)) for v in a.reshape(-1)))
    with open(os.path.join(HERE, case + ".txt"), "w") as out:
        out.write("\n".join(lines) + "\n")


def problem():
    rng = np.random.default_rng(zlib.crc32(b"problem"))
    f32 = lambda *shape: rng.standard_normal(shape).astype(np.float32).astype(np.float64)
    w0, b0 = f32(3, 2), f32(2)
    grads = [(f32(3, 2), f32(2)) for _ in range(STEPS)]
    return w0, b0, grads


def trajectory(w0, b0, grads, make_optimizer):
    w = torch.tensor(w0, dtype=torch.float64, requires_grad=True)
    b = torch.tensor(b0, dtype=torch.float64, requires_grad=True)
    opt = make_optimizer([w, b])
    out = []
    for k, (gw, gb) in enumerate(grads):
        w.grad = torch.tensor(gw, dtype=torch.float64)
        b.grad = torch.tensor(gb, dtype=torch.float64)
        opt.step()
        out.append(("w.%d" % (k + 1), w.detach().numpy().copy()))
        out.append(("b.%d" % (k + 1), b.detach().numpy().copy()))
    return out


O = torch.optim
CASES = {
    # case: (comment, optimizer factory)
    "sgd": ("SGD(lr=0.1)", lambda p: O.SGD(p, lr=0.1)),
    "sgd_momentum": ("SGD(lr=0.1, momentum=0.9)", lambda p: O.SGD(p, lr=0.1, momentum=0.9)),
    "sgd_nesterov": ("SGD(lr=0.1, momentum=0.9, nesterov=True)",
                     lambda p: O.SGD(p, lr=0.1, momentum=0.9, nesterov=True)),
    "adam": ("Adam(lr=0.01)", lambda p: O.Adam(p, lr=0.01)),
    "adam_betas": ("Adam(lr=0.05, betas=(0.8, 0.99), eps=1e-6)",
                   lambda p: O.Adam(p, lr=0.05, betas=(0.8, 0.99), eps=1e-6)),
    "adamw": ("AdamW(lr=0.01, weight_decay=0.1)",
              lambda p: O.AdamW(p, lr=0.01, weight_decay=0.1)),
    "adagrad": ("Adagrad(lr=0.1, initial_accumulator_value=0.1, eps=1e-10)",
                lambda p: O.Adagrad(p, lr=0.1, initial_accumulator_value=0.1, eps=1e-10)),
    "rmsprop": ("RMSprop(lr=0.01, alpha=0.9, eps=1e-8)",
                lambda p: O.RMSprop(p, lr=0.01, alpha=0.9, eps=1e-8)),
    "rmsprop_centered": ("RMSprop(lr=0.01, alpha=0.9, eps=1e-8, centered=True)",
                         lambda p: O.RMSprop(p, lr=0.01, alpha=0.9, eps=1e-8, centered=True)),
    "rmsprop_momentum": ("RMSprop(lr=0.01, alpha=0.9, eps=1e-8, momentum=0.5)",
                         lambda p: O.RMSprop(p, lr=0.01, alpha=0.9, eps=1e-8, momentum=0.5)),
    "rmsprop_centered_momentum": (
        "RMSprop(lr=0.01, alpha=0.9, eps=1e-8, centered=True, momentum=0.5)",
        lambda p: O.RMSprop(p, lr=0.01, alpha=0.9, eps=1e-8, centered=True, momentum=0.5)),
    # rho_t passes 5 at step 6 (b2 = 0.999: 5.99, b2 = 0.9: 5.39): both branches are covered.
    "radam": ("RAdam(lr=0.01, eps=1e-8)", lambda p: O.RAdam(p, lr=0.01, eps=1e-8)),
    "radam_b2": ("RAdam(lr=0.01, betas=(0.9, 0.9), eps=1e-8)",
                 lambda p: O.RAdam(p, lr=0.01, betas=(0.9, 0.9), eps=1e-8)),
}


def main():
    w0, b0, grads = problem()
    tensors = [("w.0", w0), ("b.0", b0)]
    for k, (gw, gb) in enumerate(grads):
        tensors += [("grad.%d.w" % k, gw), ("grad.%d.b" % k, gb)]
    write("problem", "Initial parameters and %d gradient maps (float32 values, stored as f64)."
          % STEPS, tensors)
    for case, (comment, make) in CASES.items():
        write(case, "torch.optim." + comment + ", %d steps on problem.txt, float64." % STEPS,
              trajectory(w0, b0, grads, make))
    print("wrote problem.txt and %d cases to %s (torch %s)" % (len(CASES), HERE, torch.__version__))


if __name__ == "__main__":
    main()
