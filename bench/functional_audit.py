"""Every unary elementwise function and the common reductions, shape and indexing ops of
``megengine.functional`` on about 2M float32 elements, and the nn calls of a CNN, GAN or
transformer step (activations, pooling, padding, resizing, normalisation, softmax, batched
matmul, linear, dropout, embedding, one_hot, zeros/full) at training sizes, forward only, NeoMeg
against PyTorch 2.x in the same command (PyTorch's arguments set to MegEngine's defaults:
average pooling excluding the padding, pixel-centre interpolation), sorted from the slowest
ratio up: a sweep for silent slow paths (an op that falls to a scalar or double formula where
PyTorch has a float vector loop). It found ERFINV at 0.02x, ``x ** 2`` at 0.03x, full and
column reductions at 0.13x, SIGMOID/SILU at 0.29x, group_norm at 0.10x, leaky_relu and prelu at
0.21-0.25x and global average pooling at 0.42x (docs/x86-backend-log.md: "ERFINV and ERFCINV as
polynomials", "POW by a constant exponent", "Reductions over several axes, and across rows",
"SIGMOID and SILU in float", "The audit's nn calls"). A case either framework lacks is left out.

Each framework runs in a process of its own (PyTorch from bench/torch_reference.py's
interpreter, ``torch.set_num_threads`` as ``--threads``); each case is its best call of
``--repeat``. On a loaded machine only large gaps mean anything: rerun a low line alone, in
several processes of each framework (``--only 'concat|stack' --rounds 5``).

    PYTHONPATH=python python3 bench/functional_audit.py [--threads 1] [--repeat 9] [--below 0.8]
        [--only REGEX] [--rounds N]
"""

import argparse
import json
import os
import subprocess
import sys

from machine import describe
from torch_reference import torch_python

# argv: framework, repeat, threads, case regex. Prints {case: seconds}.
WORKER = r"""
import json, re, sys, time
import numpy as np

fw, repeat, only = sys.argv[1], int(sys.argv[2]), re.compile(sys.argv[4])
rng = np.random.default_rng(0)
X = rng.normal(size=(1 << 21,)).astype(np.float32)
U = np.tanh(X)                       # (-1, 1)
P = np.abs(X) + np.float32(1.5)      # > 1
A = rng.normal(size=(1024, 2048)).astype(np.float32)
B = rng.normal(size=(1024, 2048)).astype(np.float32)
I = rng.integers(0, 2048, size=(1024, 64)).astype(np.int32)
X4 = rng.normal(size=(32, 64, 28, 28)).astype(np.float32)
L = rng.integers(0, 1000, size=(4096,)).astype(np.int32)
CH = rng.uniform(0.5, 1.5, size=(64,)).astype(np.float32)    # per channel of X4
ROW = rng.uniform(0.5, 1.5, size=(2048,)).astype(np.float32)  # per column of A
W = rng.normal(size=(256, 2048)).astype(np.float32)           # linear: A @ W.T
BM = rng.normal(size=(64, 128, 128)).astype(np.float32)       # batched matmul
EMB = rng.normal(size=(2048, 32)).astype(np.float32)          # embedding table, rows by I
UNARY = {"abs": X, "neg": X, "exp": X, "expm1": X, "log": P, "log1p": P, "sqrt": P, "sin": X,
         "cos": X, "tan": X, "asin": U, "acos": U, "atan": X, "sinh": X, "cosh": X, "tanh": X,
         "asinh": X, "acosh": P, "atanh": U, "erf": X, "erfc": X, "erfinv": U, "sigmoid": X,
         "relu": X, "gelu": X, "silu": X, "softplus": X, "logsigmoid": X, "floor": X, "ceil": X,
         "round": X, "sign": X, "relu6": X, "hsigmoid": X, "hswish": X, "square": X}
TORCH_NAMES = {"hsigmoid": "hardsigmoid", "hswish": "hardswish", "neg": "neg"}

if fw == "neomeg":
    import megengine as mge
    import megengine.functional as F

    def fn(name):
        return getattr(F, name, None) or getattr(F.nn, name, None)

    T = mge.Tensor
    a, b, i, x4, l = T(A), T(B), T(I), T(X4), T(L)
    cond = a > 0
    cases = {"unary " + k: (lambda f, t: lambda: f(t))(fn(k), T(v)) for k, v in UNARY.items()
             if fn(k) is not None}
    cases.update({
        "sum all": lambda: F.sum(a), "sum axis 0": lambda: F.sum(a, 0),
        "sum axis 1": lambda: F.sum(a, 1), "mean NCHW (2, 3)": lambda: F.mean(x4, (2, 3)),
        "max axis 1": lambda: F.max(a, 1), "min axis 0": lambda: F.min(a, 0),
        "prod axis 1": lambda: F.prod(a, 1), "argmax axis 1": lambda: F.argmax(a, 1),
        "cumsum axis 1": lambda: F.cumsum(a, 1), "norm axis 1": lambda: F.norm(a, 2, 1),
        "var axis 1": lambda: F.var(a, 1), "x ** 2": lambda: a ** 2, "x ** 3": lambda: a ** 3,
        "transpose": lambda: F.transpose(a, (1, 0)) + 0, "concat": lambda: F.concat([a, b], 1),
        "stack": lambda: F.stack([a, b], 0), "where": lambda: F.where(cond, a, b),
        "clip": lambda: F.clip(a, -0.5, 0.5), "gather": lambda: F.gather(a, 1, i),
        "a + row": lambda: a + b[0], "maximum": lambda: F.maximum(a, b),
        "astype int32": lambda: a.astype("int32"), "roll": lambda: F.roll(a, 3, 1),
        "one_hot": lambda: F.one_hot(l, 1000),
        "cross_entropy": lambda: F.nn.cross_entropy(a[:, :1000], l[:1024]),
    })
    ch, row, w, bm, emb = T(CH), T(ROW), T(W), T(BM), T(EMB)
    ch4, rm, rv = ch.reshape(1, 64, 1, 1), T(np.zeros(64, "float32")), T(np.ones(64, "float32"))
    hw1 = ((0, 0), (0, 0), (1, 1), (1, 1))
    cases.update({
        "leaky_relu": lambda: F.leaky_relu(x4, 0.01), "prelu": lambda: F.prelu(x4, ch4),
        "avg_pool2d 2": lambda: F.avg_pool2d(x4, 2),
        "avg_pool2d 2 average": lambda: F.avg_pool2d(x4, 2, mode="average"),
        "avg_pool2d 3 s1 p1": lambda: F.avg_pool2d(x4, 3, 1, 1),
        "max_pool2d 3 s2 p1": lambda: F.max_pool2d(x4, 3, 2, 1),
        "adaptive_avg 1": lambda: F.adaptive_avg_pool2d(x4, 1),
        "adaptive_avg 7": lambda: F.adaptive_avg_pool2d(x4, 7),
        "adaptive_max 7": lambda: F.adaptive_max_pool2d(x4, 7),
        "pad constant": lambda: F.pad(x4, hw1),
        "pad reflect": lambda: F.pad(x4, hw1, mode="reflect"),
        "interp nearest x2": lambda: F.interpolate(x4, scale_factor=2, mode="nearest"),
        "interp bilinear x2": lambda: F.interpolate(x4, scale_factor=2),
        "layer_norm": lambda: F.layer_norm(a, 2048, True, row, row),
        "group_norm 32": lambda: F.nn.group_norm(x4, 32, True, ch, ch),
        "batch_norm train": lambda: F.nn.batch_norm(x4, rm, rv, ch, ch, training=True),
        "softmax NCHW 1": lambda: F.softmax(x4, 1),
        "logsoftmax NCHW 1": lambda: F.logsoftmax(x4, 1),
        "matmul batched": lambda: F.matmul(bm, bm), "linear": lambda: F.linear(a, w, row[:256]),
        "dropout 0.5": lambda: F.dropout(a, 0.5), "embedding": lambda: F.embedding(i, emb),
        "zeros X4": lambda: F.zeros(X4.shape), "full X4": lambda: F.full(X4.shape, 0.5),
    })
    sync = lambda y: None
else:
    import torch
    import torch.nn.functional as TF

    torch.set_num_threads(int(sys.argv[3]))

    def fn(name):
        n = TORCH_NAMES.get(name, name)
        for m in (torch, TF, torch.special):
            if hasattr(m, n):
                return getattr(m, n)

    a, b, i, x4, l = (torch.tensor(z) for z in (A, B, I, X4, L))
    il, ll = i.long(), l.long()
    cond = a > 0
    cases = {"unary " + k: (lambda f, t: lambda: f(t))(fn(k), torch.tensor(v))
             for k, v in UNARY.items() if fn(k) is not None}
    cases.update({
        "sum all": lambda: a.sum(), "sum axis 0": lambda: a.sum(0), "sum axis 1": lambda: a.sum(1),
        "mean NCHW (2, 3)": lambda: x4.mean((2, 3)), "max axis 1": lambda: a.amax(1),
        "min axis 0": lambda: a.amin(0), "prod axis 1": lambda: a.prod(1),
        "argmax axis 1": lambda: a.argmax(1), "cumsum axis 1": lambda: a.cumsum(1),
        "norm axis 1": lambda: a.norm(2, 1), "var axis 1": lambda: a.var(1, unbiased=False),
        "x ** 2": lambda: a ** 2, "x ** 3": lambda: a ** 3,
        "transpose": lambda: a.t().contiguous(), "concat": lambda: torch.cat([a, b], 1),
        "stack": lambda: torch.stack([a, b], 0), "where": lambda: torch.where(cond, a, b),
        "clip": lambda: a.clamp(-0.5, 0.5), "gather": lambda: torch.gather(a, 1, il),
        "a + row": lambda: a + b[0], "maximum": lambda: torch.maximum(a, b),
        "astype int32": lambda: a.int(), "roll": lambda: torch.roll(a, 3, 1),
        "one_hot": lambda: TF.one_hot(ll, 1000),
        "cross_entropy": lambda: TF.cross_entropy(a[:, :1000], ll[:1024]),
    })
    ch, row, w, bm, emb = (torch.tensor(z) for z in (CH, ROW, W, BM, EMB))
    rm, rv = torch.zeros(64), torch.ones(64)
    # MegEngine's defaults as PyTorch arguments: avg_pool2d's default mode excludes the padding,
    # interpolate aligns pixel centres; its batch_norm momentum 0.9 is PyTorch's 0.1.
    cases.update({
        "leaky_relu": lambda: TF.leaky_relu(x4, 0.01), "prelu": lambda: TF.prelu(x4, ch),
        "avg_pool2d 2": lambda: TF.avg_pool2d(x4, 2, count_include_pad=False),
        "avg_pool2d 2 average": lambda: TF.avg_pool2d(x4, 2),
        "avg_pool2d 3 s1 p1": lambda: TF.avg_pool2d(x4, 3, 1, 1, count_include_pad=False),
        "max_pool2d 3 s2 p1": lambda: TF.max_pool2d(x4, 3, 2, 1),
        "adaptive_avg 1": lambda: TF.adaptive_avg_pool2d(x4, 1),
        "adaptive_avg 7": lambda: TF.adaptive_avg_pool2d(x4, 7),
        "adaptive_max 7": lambda: TF.adaptive_max_pool2d(x4, 7),
        "pad constant": lambda: TF.pad(x4, (1, 1, 1, 1)),
        "pad reflect": lambda: TF.pad(x4, (1, 1, 1, 1), mode="reflect"),
        "interp nearest x2": lambda: TF.interpolate(x4, scale_factor=2, mode="nearest"),
        "interp bilinear x2": lambda: TF.interpolate(
            x4, scale_factor=2, mode="bilinear", align_corners=False
        ),
        "layer_norm": lambda: TF.layer_norm(a, (2048,), row, row),
        "group_norm 32": lambda: TF.group_norm(x4, 32, ch, ch),
        "batch_norm train": lambda: TF.batch_norm(x4, rm, rv, ch, ch, True, 0.1),
        "softmax NCHW 1": lambda: torch.softmax(x4, 1),
        "logsoftmax NCHW 1": lambda: torch.log_softmax(x4, 1),
        "matmul batched": lambda: torch.matmul(bm, bm),
        "linear": lambda: TF.linear(a, w, row[:256]), "dropout 0.5": lambda: TF.dropout(a, 0.5),
        "embedding": lambda: TF.embedding(il, emb), "zeros X4": lambda: torch.zeros(X4.shape),
        "full X4": lambda: torch.full(X4.shape, 0.5),
    })
    torch.set_grad_enabled(False)

# A fresh process's first ~30 ms of two-thread work ran up to 1.5x slower here (either framework,
# the second core waking): the first selected case warms for 0.2 s, or an --only run would time
# its first case cold (`x ** 2` 0.17-0.23 ms against 0.125 warm).
chosen = [(name, f) for name, f in cases.items() if only.search(name)]
end = time.perf_counter() + 0.2
while chosen and time.perf_counter() < end:
    chosen[0][1]()
out = {}
for name, f in chosen:
    f()
    best = 1e9
    for _ in range(repeat):
        t0 = time.perf_counter()
        f()
        best = min(best, time.perf_counter() - t0)
    out[name] = best
print(json.dumps(out))
"""


def run(python, fw, repeat, threads, only):
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    proc = subprocess.run(
        [python, "-c", WORKER, fw, str(repeat), str(threads), only],
        check=False,
        capture_output=True,
        text=True,
        env=env,
    )
    if proc.returncode != 0:
        sys.exit(f"{fw} worker failed: {(proc.stderr.strip().splitlines() or ['?'])[-1]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=9)
    ap.add_argument("--below", type=float, default=None, help="print only ratios below this")
    ap.add_argument("--only", default="", help="run only the cases this regular expression finds")
    ap.add_argument(
        "--rounds",
        type=int,
        default=1,
        help="processes of each framework, alternating; prints the best and the worst process",
    )
    args = ap.parse_args()
    print(describe())
    python, why = torch_python()
    if python is None:
        sys.exit(why)
    ours, theirs = {}, {}
    for _ in range(args.rounds):
        for fw, exe, into in (("neomeg", sys.executable, ours), ("torch", python, theirs)):
            for k, t in run(exe, fw, args.repeat, args.threads, args.only).items():
                into.setdefault(k, []).append(t)
    rows = sorted((min(theirs[k]) / min(ours[k]), k) for k in ours if k in theirs)
    print(f"{args.threads} thread(s), best of {args.repeat}, {args.rounds} process(es) each")
    spread = args.rounds > 1
    head = f"{'case':<22}{'NeoMeg ms':>11}{'PyTorch ms':>12}{'ratio':>8}"
    print(head + (f"{'NeoMeg worst':>14}{'PyTorch worst':>15}" if spread else ""))
    for ratio, k in rows:
        if args.below is None or ratio < args.below:
            line = f"{k:<22}{min(ours[k]) * 1e3:>11.3f}{min(theirs[k]) * 1e3:>12.3f}{ratio:>8.2f}"
            if spread:
                line += f"{max(ours[k]) * 1e3:>14.3f}{max(theirs[k]) * 1e3:>15.3f}"
            print(line)
    print("ratio = PyTorch's time / NeoMeg's (above 1.0: NeoMeg is faster)")


if __name__ == "__main__":
    main()
