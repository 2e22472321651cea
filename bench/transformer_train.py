"""One training step of a BERT-mini style encoder on the CPU: NeoMeg eager and traced against
PyTorch eager, in one command.

The model (bench/bench_models.py's TRANSFORMER): token and position embeddings (vocabulary
30522, hidden 256), LayerNorm, dropout 0.1, four post-LayerNorm encoder layers (4 heads, FFN
1024, GELU), a linear head on the first token and cross-entropy over 2 classes; batch 16 of
sequences of 128 tokens; SGD with momentum. Both frameworks start from the same weights (drawn
from one NumPy generator by parameter name), which the ``loss0`` column shows: the loss of a
forward without dropout before the first step.

Each of the three runs (NeoMeg eager, NeoMeg ``jit.trace(symbolic=True)``, PyTorch 2.x eager,
the reference from bench/torch_reference.py) is a process of its own on the same number of
threads (``OMP_NUM_THREADS`` for NeoMeg, ``torch.set_num_threads`` for PyTorch), so its peak
resident memory is its own. The runs take turns ``--rounds`` times, so that load from other work
on a shared machine falls on all of them alike; samples/s come from the fastest and from the
median of all timed steps, the ratios from each against PyTorch's. ``CPU ms/step`` is the median
process CPU time of a step (all threads together): at one thread it moves much less with the
load than the wall clock does.

    PYTHONPATH=python python3 bench/transformer_train.py [--threads 1 2] [--steps 4]
        [--rounds 3] [--runs eager traced torch]
"""

import argparse
import os
import statistics
import sys

from bench_models import TRANSFORMER
from machine import describe
from torch_reference import torch_python
from x86_ops import run_worker  # the worker runner, shared

BATCH, SEQ, VOCAB, CLASSES = 16, 128, 30522, 2

WORKER = (
    r"""
import json, resource, sys, time
import numpy as np

run, steps, batch, seq, vocab, classes = (
    sys.argv[1], int(sys.argv[2]), int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6]),
    int(sys.argv[7]))
rng = np.random.default_rng(0)
ids_np = rng.integers(0, vocab, (batch, seq)).astype(np.int32)
y_np = rng.integers(0, classes, batch).astype(np.int32)

if run == "torch":
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    torch.set_num_threads(int(sys.argv[3]))
    Module, gelu = nn.Module, F.gelu
    softmax = lambda t: F.softmax(t, dim=-1)
    permute = lambda t, *axes: t.permute(*axes)
    matmul_nt = lambda a, b: a @ b.transpose(-1, -2)
    arange = lambda n: torch.arange(n)
else:
    import megengine as mge
    import megengine.functional as F
    import megengine.module as nn
    from megengine.autodiff import GradManager
    from megengine.jit import trace
    from megengine.optimizer import SGD

    Module, gelu = nn.Module, F.nn.gelu
    softmax = lambda t: F.softmax(t, axis=-1)
    permute = lambda t, *axes: t.transpose(*axes)
    matmul_nt = lambda a, b: F.matmul(a, b, transpose_b=True)
    arange = lambda n: F.arange(n, dtype="int32")


"""
    + TRANSFORMER
    + r"""
model = Encoder(vocab=vocab, seq=seq, classes=classes)
# The same initial weights in both frameworks: matrices N(0, 0.02), LayerNorm scales 1, biases 0.
init = np.random.default_rng(1)
params = dict(model.named_parameters())
values = {}
for name in sorted(params):
    shape = tuple(params[name].shape)
    if len(shape) == 2:
        values[name] = (init.normal(size=shape) * 0.02).astype(np.float32)
    elif name.startswith("ln") or ".ln" in name:
        values[name] = np.ones(shape, np.float32) if name.endswith("weight") else np.zeros(shape, np.float32)
    else:
        values[name] = np.zeros(shape, np.float32)

if run == "torch":
    with torch.no_grad():
        for name, p in params.items():
            p.copy_(torch.from_numpy(values[name]))
    ids, y = torch.from_numpy(ids_np), torch.from_numpy(y_np).long()
    model.eval()
    with torch.no_grad():
        loss0 = float(F.cross_entropy(model(ids), y))
    model.train()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)

    def step():
        opt.zero_grad()
        loss = F.cross_entropy(model(ids), y)
        loss.backward()
        opt.step()
        return float(loss)
else:
    for name, p in params.items():
        p._reset(mge.Tensor(values[name]))
    ids, y = mge.Tensor(ids_np), mge.Tensor(y_np)
    model.eval()
    loss0 = float(F.nn.cross_entropy(model(ids), y).numpy())
    model.train()
    gm = GradManager().attach(model.parameters())
    opt = SGD(model.parameters(), lr=0.01, momentum=0.9)

    def body(ids, y):
        with gm:
            loss = F.nn.cross_entropy(model(ids), y)
            gm.backward(loss)
        opt.step().clear_grad()
        return loss

    fn = trace(body, symbolic=True) if run == "traced" else body

    def step():
        return float(fn(ids, y).numpy())

for _ in range(2):  # a trace records on its first call
    step()
times, cpu = [], []
for _ in range(steps):
    c0, t0 = time.process_time(), time.perf_counter()
    step()
    times.append(time.perf_counter() - t0)
    cpu.append(time.process_time() - c0)
print(json.dumps({"times": times, "cpu": cpu, "loss0": loss0,
                  "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""
)


def run_once(python, run, steps, threads):
    argv = [run, steps, threads, BATCH, SEQ, VOCAB, CLASSES]
    return run_worker(python, WORKER, [str(a) for a in argv], threads)


def table(args, threads):
    pythons = {"eager": (sys.executable, None), "traced": (sys.executable, None)}
    pythons["torch"] = torch_python()
    results = {
        run: {"times": [], "cpu": [], "rss": 0.0, "loss0": None, "why": None} for run in args.runs
    }
    for _ in range(args.rounds):
        for run in args.runs:
            python, why = pythons[run]
            res = results[run]
            if python is None or res["why"] is not None:
                res["why"] = res["why"] or why
                continue
            out, why = run_once(python, run, args.steps, threads)
            if out is None:
                res["why"] = why
                continue
            res["times"] += out["times"]
            res["cpu"] += out["cpu"]
            res["rss"] = max(res["rss"], out["peak_rss_mib"])
            res["loss0"] = out["loss0"]
    print(f"{threads} thread(s), batch {BATCH}, sequence {SEQ}, {args.rounds} rounds interleaved")
    print(
        f"{'run':<16}{'best s/s':>10}{'median s/s':>12}{'ratio best':>12}{'ratio med':>11}"
        f"{'CPU ms/step':>13}{'peak MiB':>10}{'loss0':>10}"
    )
    ref = results.get("torch")
    ref_ok = ref is not None and ref["times"]
    for run in args.runs:
        res = results[run]
        label = {"eager": "NeoMeg eager", "traced": "NeoMeg traced", "torch": "PyTorch eager"}[run]
        if not res["times"]:
            print(f"{label:<16} failed: {res['why']}")
            continue
        best = BATCH / min(res["times"])
        med = BATCH / statistics.median(res["times"])
        ratios = ("-", "-")
        if ref_ok:
            ratios = (
                f"{best * min(ref['times']) / BATCH:.3f}",
                f"{med * statistics.median(ref['times']) / BATCH:.3f}",
            )
        print(
            f"{label:<16}{best:>10.1f}{med:>12.1f}{ratios[0]:>12}{ratios[1]:>11}"
            f"{1000 * statistics.median(res['cpu']):>13.0f}{res['rss']:>10.0f}{res['loss0']:>10.4f}"
        )


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--steps", type=int, default=4, help="timed steps per run and round")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument(
        "--runs",
        nargs="+",
        default=["eager", "traced", "torch"],
        choices=["eager", "traced", "torch"],
    )
    args = ap.parse_args()
    print(describe())
    if min(args.threads) < 1 or args.steps < 1 or args.rounds < 1:
        ap.error("--threads, --steps and --rounds must be positive")
    for threads in args.threads:
        table(args, threads)
    print("ratio = NeoMeg samples/s / PyTorch eager samples/s (above 1: NeoMeg is faster)")
    print(f"load average at the end: {os.getloadavg()[0]:.1f} (1 min)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
