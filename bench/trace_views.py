"""A traced graph reading slices of a large tensor: time per call and the compiled graph's arena.

``f`` (trace, symbolic=True) slices a 1536x1536 float32 input at non-zero offsets, with steps,
and an intermediate reversed, and feeds the slices to elementwise ops, a matmul (one operand
transposed) and row and column sums; it returns only small results, so the time is the graph's
and not the outputs'. ``nhwc_conv`` transposes 8x56x56x32 images into a 3x3 convolution. Before
graph view forwarding each slice or transpose was a Relayout step into an arena buffer; after,
kernels read the input in place. Prints the best, median and worst of --rounds rounds of
--repeat calls (ms) and ``planned_peak_bytes`` (the arena); run it with each build on the same
machine and the same OMP_NUM_THREADS to compare.

    OMP_NUM_THREADS=1 PYTHONPATH=python python3 bench/trace_views.py [--repeat 20] [--rounds 7]
"""

import argparse
import statistics
import time

import numpy as np

import megengine as mge
import megengine.functional as F
import megengine.module as M
from megengine.jit import trace

N = 1536
CONV = M.Conv2d(32, 64, 3, padding=1)


@trace(symbolic=True)
def f(x):
    p = F.sum(x[1:, 1:] * x[:-1, :-1], axis=0)  # offset slices of the input, elementwise
    e = F.exp(x[::2, 1::2] * 0.001)  # a strided slice of the input
    r = F.sum(e[::-1] - e, axis=1)  # an intermediate and its reversal
    m = F.matmul(x[3:515, 7:519], x[9:521, 1:513].T)  # matmul of offset slices, one transposed
    return p[:4], r[:4], m[0, :4]


@trace(symbolic=True)
def nhwc_conv(x):
    return F.sum(CONV(x.transpose(0, 3, 1, 2)), axis=(0, 2, 3))  # channels-last images, transposed


def timed(fn, x, repeat, rounds):
    for _ in range(3):  # record, then compile and warm
        out = fn(x)
    [o.numpy() for o in (out if isinstance(out, tuple) else (out,))]
    times = []
    for _ in range(rounds):
        t = time.perf_counter()
        for _ in range(repeat):
            out = fn(x)
        [o.numpy() for o in (out if isinstance(out, tuple) else (out,))]
        times.append((time.perf_counter() - t) / repeat * 1e3)
    return (
        f"best {min(times):.2f} ms, median {statistics.median(times):.2f} ms, worst "
        f"{max(times):.2f} ms per call; arena {fn._session.planned_peak_bytes / 2**20:.1f} MiB"
    )


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeat", type=int, default=20)
    p.add_argument("--rounds", type=int, default=7)
    a = p.parse_args()
    rng = np.random.default_rng(0)
    x = mge.Tensor(rng.standard_normal((N, N)).astype("float32"))
    print("slices:", timed(f, x, a.repeat, a.rounds))
    images = mge.Tensor(rng.standard_normal((8, 56, 56, 32)).astype("float32"))
    print("nhwc_conv:", timed(nhwc_conv, images, max(1, a.repeat // 4), a.rounds))


if __name__ == "__main__":
    main()
