"""Backward of the indexing reads whose gradient writes into zeros (IndexingOneHot: a
cross-entropy's pick of the label's logit; Gather), on a language model's logits: the median
time of ``gm.backward`` (reading the gradient back included) and the memory it allocates above
what was allocated before it (the gradient itself is batch x vocab float32).

Usage: PYTHONPATH=python python3 bench/index_grads.py [--batch 512] [--vocab 32000] [--reps 15]
"""

import argparse
import os
import sys
import time

import numpy as np
from machine import describe

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))

import megengine as mge
import megengine.functional as F
from megengine.autodiff import GradManager


def measure(name, shape, forward, reps, rng):
    x = mge.Parameter(rng.standard_normal(shape).astype(np.float32))
    gm = GradManager().attach(x)
    times, peaks = [], []
    for _ in range(reps):
        with gm:
            y = forward(x)
            dy = mge.tensor(np.ones(y.shape, np.float32))
            base = mge.get_allocated_memory("cpu0")
            mge.reset_max_memory_stats("cpu0")
            start = time.perf_counter()
            gm.backward(y, dy)
            x.grad.numpy()
            times.append(time.perf_counter() - start)
            peaks.append(mge.get_max_allocated_memory("cpu0") - base)
        x.grad = None
    print(
        f"{name} {shape}: backward median {np.median(times) * 1e3:.2f} ms, "
        f"peak above start {np.median(peaks) / 2**20:.1f} MiB"
    )


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--batch", type=int, default=512)
    ap.add_argument("--vocab", type=int, default=32000)
    ap.add_argument("--reps", type=int, default=15)
    args = ap.parse_args()
    print(describe())
    rng = np.random.default_rng(0)
    b, v = args.batch, args.vocab
    label = mge.tensor(rng.integers(0, v, (b,)).astype(np.int32))
    measure("indexing_one_hot", (b, v), lambda x: F.indexing_one_hot(x, label, 1), args.reps, rng)
    picks = mge.tensor(rng.integers(0, v, (b, 8)).astype(np.int32))
    measure("gather, 8 per row", (b, v), lambda x: F.gather(x, 1, picks), args.reps, rng)


if __name__ == "__main__":
    main()
