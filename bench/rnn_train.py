"""Recurrent layers on the CPU: the forward and one training step of an LSTM and an Elman RNN
(tanh) over a sequence, NeoMeg eager against PyTorch eager, in one command.

The case (issue 12's): ``LSTM(64, 128)`` and ``RNN(64, 128)`` on a (35, 16, 64) time-first
input; a step is the forward, ``out.sum()``'s backward and SGD with momentum 0.9; the forward
runs without recording gradients (``torch.no_grad`` in PyTorch). Both frameworks start from the
same weights (drawn from one NumPy generator per parameter, PyTorch's names mapped to our
cells'), which the ``out sum`` column shows: the sum of the first forward's output. MegEngine 1.13
has no GRU module, so neither has this benchmark.

Each run (NeoMeg in this interpreter, PyTorch 2.x from bench/torch_reference.py) is a process of
its own on the same number of threads (``OMP_NUM_THREADS`` for NeoMeg, ``torch.set_num_threads``
for PyTorch); they take turns ``--rounds`` times, so that load from other work on a shared
machine falls on both alike. The figures are ms per call, best and median of all timed calls;
``ratio`` is NeoMeg's best over PyTorch's best (above 1: NeoMeg is slower).

    PYTHONPATH=python python3 bench/rnn_train.py [--threads 1 2] [--repeat 20] [--rounds 3]
        [--layers 1] [--bidirectional]
"""

import argparse
import os
import statistics
import sys

from machine import describe
from torch_reference import torch_python
from x86_ops import run_worker  # the worker runner, shared

SEQ, BATCH, INPUT, HIDDEN = 35, 16, 64, 128

WORKER = r"""
import json, sys, time
import numpy as np

fw, kind, repeat, threads, layers, bidir = (
    sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]),
    sys.argv[6] == "1")
seq, batch, inp, hidden = (int(a) for a in sys.argv[7:11])
x_np = np.random.default_rng(0).normal(size=(seq, batch, inp)).astype(np.float32)
dirs = 2 if bidir else 1


def weights(names):
    # PyTorch's name of every parameter (weight_ih_l0_reverse), drawn in that order
    rng, bound, out = np.random.default_rng(1), 1 / np.sqrt(hidden), {}
    gates = 4 if kind == "lstm" else 1
    for layer in range(layers):
        for d in range(dirs):
            width = inp if layer == 0 else dirs * hidden
            suffix = f"_l{layer}" + ("_reverse" if d else "")
            for w, shape in (("weight_ih", (gates * hidden, width)),
                             ("weight_hh", (gates * hidden, hidden)),
                             ("bias_ih", (gates * hidden,)), ("bias_hh", (gates * hidden,))):
                out[names(w, layer, d, suffix)] = rng.uniform(-bound, bound, shape).astype(
                    np.float32)
    return out


if fw == "torch":
    import torch

    torch.set_num_threads(threads)
    cls = torch.nn.LSTM if kind == "lstm" else torch.nn.RNN
    m = cls(inp, hidden, num_layers=layers, bidirectional=bidir)
    values = weights(lambda w, layer, d, suffix: w + suffix)
    with torch.no_grad():
        for name, p in m.named_parameters():
            p.copy_(torch.from_numpy(values[name]))
    opt = torch.optim.SGD(m.parameters(), lr=0.01, momentum=0.9)
    x = torch.from_numpy(x_np)

    def fwd():
        with torch.no_grad():
            return m(x)[0]

    def step():
        opt.zero_grad()
        m(x)[0].sum().backward()
        opt.step()

    out_sum = float(fwd().sum())
else:
    import megengine as mge
    import megengine.module as M
    from megengine.autodiff import GradManager
    from megengine.optimizer import SGD

    if kind == "lstm":
        m = M.LSTM(inp, hidden, layers, bidirectional=bidir)
    else:
        m = M.RNN(inp, hidden, layers, bidirectional=bidir)
    values = weights(lambda w, layer, d, suffix: f"cells.{layer}.{d}.{w}")
    for name, p in m.named_parameters():
        p._reset(mge.Tensor(values[name]))
    gm = GradManager().attach(m.parameters())
    opt = SGD(m.parameters(), lr=0.01, momentum=0.9)
    x = mge.Tensor(x_np)

    def fwd():
        out = m(x)[0]
        mge._full_sync()
        return out

    def step():
        with gm:
            gm.backward(m(x)[0].sum())
        opt.step().clear_grad()
        mge._full_sync()  # a no-op on the CPU, which runs eagerly; the GPU would queue

    out_sum = float(fwd().sum().numpy())

result = {"out_sum": out_sum}
for name, f in (("fwd", fwd), ("step", step)):
    for _ in range(3):
        f()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        f()
        times.append(time.perf_counter() - t0)
    result[name] = times
print(json.dumps(result))
"""


def table(args, threads):
    runs = {"neomeg": (sys.executable, None), "torch": torch_python()}
    print(
        f"{threads} thread(s), ({SEQ}, {BATCH}, {INPUT}) -> hidden {HIDDEN}, "
        f"{args.layers} layer(s){', bidirectional' if args.bidirectional else ''}, "
        f"{args.rounds} rounds interleaved, ms per call"
    )
    print(
        f"{'case':<12}{'NeoMeg best':>12}{'median':>9}{'PyTorch best':>14}{'median':>9}"
        f"{'ratio':>8}{'out sum':>22}"
    )
    for kind in ("lstm", "rnn"):
        res = {fw: {"fwd": [], "step": [], "sum": None, "why": None} for fw in runs}
        for _ in range(args.rounds):
            for fw, (python, why) in runs.items():
                r = res[fw]
                if python is None or r["why"] is not None:
                    r["why"] = r["why"] or why
                    continue
                wargs = [fw, kind, args.repeat, threads, args.layers, int(args.bidirectional)]
                out, why = run_worker(
                    python, WORKER, [str(a) for a in wargs + [SEQ, BATCH, INPUT, HIDDEN]], threads
                )
                if out is None:
                    r["why"] = why
                    continue
                r["fwd"] += out["fwd"]
                r["step"] += out["step"]
                r["sum"] = out["out_sum"]
        for what in ("fwd", "step"):
            label = f"{kind} {what}"
            ours, ref = res["neomeg"], res["torch"]
            if not ours[what]:
                print(f"{label:<12} failed: {ours['why']}")
                continue
            ob, om = 1e3 * min(ours[what]), 1e3 * statistics.median(ours[what])
            if ref[what]:
                rb, rm = 1e3 * min(ref[what]), 1e3 * statistics.median(ref[what])
                theirs, ratio = f"{rb:>14.2f}{rm:>9.2f}", f"{ob / rb:>8.2f}"
                sums = f"{ours['sum']:>11.4f}{ref['sum']:>11.4f}"
            else:
                theirs, ratio = f"{'-':>14}{'-':>9}", f"{'-':>8}"
                sums = f"{ours['sum']:>11.4f}  torch: {ref['why']}"
            print(f"{label:<12}{ob:>12.2f}{om:>9.2f}{theirs}{ratio}{sums}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--repeat", type=int, default=20, help="timed calls per run and round")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--layers", type=int, default=1)
    ap.add_argument("--bidirectional", action="store_true")
    args = ap.parse_args()
    print(describe())
    if min(args.threads) < 1 or args.repeat < 1 or args.rounds < 1 or args.layers < 1:
        ap.error("--threads, --repeat, --rounds and --layers must be positive")
    for threads in args.threads:
        table(args, threads)
    print("ratio = NeoMeg ms / PyTorch ms, best of each (above 1: NeoMeg is slower)")
    print(f"load average at the end: {os.getloadavg()[0]:.1f} (1 min)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
