"""Throughput of megengine.data.DataLoader on Fashion-MNIST.

Measures batches per second for:

* a plain NumPy loop over the arrays (index, normalize, transpose: the floor of what loading
  costs),
* DataLoader with Normalize + ToMode and 0, 1 and 2 worker processes, both as the loader runs
  it (the whole batch through NumPy at once) and applied sample by sample (as for a transform
  the loader cannot vectorise, e.g. a user-defined one; this is what loading cost before the
  loader learned to vectorise),
* the same loaders (and 0 workers with preload=True, a background thread) feeding a simulated
  training step that costs as much as loading a batch serially: with workers the loader
  should keep up, i.e. an epoch should take about as long as the training steps alone.

Each figure is the median of --repeat runs; a run is --batches batches (an epoch by default),
worker start-up included; each run with a training step is compared with the steps alone
measured just before it. The load average is printed before and after: on a busy machine the
worker figures drop first.

Usage: PYTHONPATH=python python3 bench/data_loader.py [--batch-size 64] [--batches N]
"""

import argparse
import os
import sys
import time

import numpy as np
from machine import describe

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))

import megengine.data.transform as T
from megengine.data import DataLoader, RandomSampler
from megengine.data.dataset import FashionMNIST

MEAN, STD = 0.2860 * 255, 0.3530 * 255


def plain_loop(images, sampler, limit):
    mean, std = np.float32(MEAN), np.float32(STD)
    n = 0
    start = time.perf_counter()
    for indices in sampler:
        x = (images[indices].astype(np.float32) - mean) / std
        np.ascontiguousarray(x.transpose(0, 3, 1, 2))
        n += 1
        if n == limit:
            break
    return n / (time.perf_counter() - start)


def train_step(step_s, spin):
    if spin:
        end = time.perf_counter() + step_s
        while time.perf_counter() < end:
            pass
    else:
        time.sleep(step_s)


def run_loader(loader, limit, step_s=0.0, spin=False):
    """Iterates over ``limit`` batches of ``loader`` (or none, when it is None), running a
    training step after each; returns (batches/s, seconds)."""
    batches = iter(loader) if loader is not None else iter(int, 1)
    n = 0
    start = time.perf_counter()
    for _ in batches:
        if step_s:
            train_step(step_s, spin)
        n += 1
        if n == limit:
            break
    elapsed = time.perf_counter() - start
    del batches
    return n / elapsed, elapsed


def _serial_worker(make_loader, limit, results):
    results.put(run_loader(make_loader(), limit)[0])


def parallel_capacity(make_loader, limit):
    """How many times the batches of one serial loader 2 processes make in the same time: the
    most that 2 workers can gain on this machine right now (2.0 on 2 idle cores)."""
    import multiprocessing

    ctx = multiprocessing.get_context("fork")
    rates = []
    for n in (1, 2):
        results = ctx.Queue()
        procs = [
            ctx.Process(target=_serial_worker, args=(make_loader, limit, results)) for _ in range(n)
        ]
        for p in procs:
            p.start()
        rates.append(sum(results.get() for _ in procs))
        for p in procs:
            p.join()
    return rates[1] / rates[0]


def median_of(repeat, fn):
    # The run of median rate (runs return (rate, ...)).
    runs = sorted((fn() for _ in range(repeat)), key=lambda r: r[0])
    return runs[len(runs) // 2]


class PerSample(T.Compose):
    """A user-defined Compose: the DataLoader does not vectorise it and transforms the samples
    one by one."""


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--root", default=None, help="Fashion-MNIST folder (Debian's by default)")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument(
        "--batches", type=int, default=0, help="batches per run (default: a whole epoch)"
    )
    parser.add_argument("--repeat", type=int, default=5, help="runs per measurement, median kept")
    parser.add_argument(
        "--spin",
        action="store_true",
        help="simulate the training step by spinning the CPU (default: sleeping, as while a GPU "
        "computes)",
    )
    args = parser.parse_args()
    print(describe())

    ds = FashionMNIST(args.root, train=True)
    limit = args.batches or len(ds) // args.batch_size
    steps = [T.Normalize(mean=MEAN, std=STD), T.ToMode("CHW")]
    pipelines = {
        "vectorised": T.Compose(steps),
        "per sample": PerSample(steps),
    }

    def sampler():
        return RandomSampler(ds, batch_size=args.batch_size, drop_last=True, seed=0)

    def loader(transform, workers, preload=False):
        return DataLoader(ds, sampler(), transform=transform, num_workers=workers, preload=preload)

    print(
        f"Fashion-MNIST train, Normalize + ToMode, batch {args.batch_size}, {limit} batches per "
        f"run, median of {args.repeat}; {os.cpu_count()} CPUs, load average "
        f"{os.getloadavg()[0]:.1f}"
    )
    capacity = sorted(
        parallel_capacity(lambda: loader(pipelines["per sample"], 0), limit // 2) for _ in range(3)
    )[1]
    print(
        f"2 processes loading serially make {capacity:.2f}x the batches of one (the most 2 "
        "workers can gain here now; 2.00 on 2 idle cores)"
    )
    row = "{:<48}{:>12}{:>20}"
    print(row.format("loader", "batches/s", "x plain loop"))
    plain = median_of(args.repeat, lambda: (plain_loop(ds.arrays[0], sampler(), limit),))
    print(row.format("plain NumPy loop over the arrays", f"{plain[0]:.0f}", "1.00"))
    rates = {}
    for name, transform in pipelines.items():
        for workers in (0, 1, 2):
            rate = median_of(
                args.repeat, lambda w=workers, t=transform: run_loader(loader(t, w), limit)
            )
            rates[name, workers] = rate
            print(
                row.format(
                    f"DataLoader, {workers} workers, {name}",
                    f"{rate[0]:.0f}",
                    f"{rate[0] / plain[0]:.2f}",
                )
            )

    kind = "spinning" if args.spin else "sleeping"
    configs = [(0, False), (0, True), (1, False), (2, False)]
    for name, transform in pipelines.items():
        step_s = 1.0 / rates[name, 0][0]
        print(
            f"\n{name}: with a {kind} training step of {step_s * 1e3:.3f} ms (the serial load "
            "time per batch); each run against the steps alone measured just before it"
        )
        alone, runs = [], {c: [] for c in configs}
        for _ in range(args.repeat):
            alone.append(run_loader(None, limit, step_s, args.spin))
            for workers, preload in configs:
                rate, elapsed = run_loader(
                    loader(transform, workers, preload), limit, step_s, args.spin
                )
                runs[workers, preload].append((elapsed / alone[-1][1], rate))
        print(row.format("loader", "batches/s", "time / steps alone"))
        steps_rate = sorted(r for r, _ in alone)[len(alone) // 2]
        print(row.format("training steps alone (no loading)", f"{steps_rate:.0f}", "1.00"))
        for (workers, preload), results in runs.items():
            ratio = sorted(r for r, _ in results)[len(results) // 2]
            rate = sorted(r for _, r in results)[len(results) // 2]
            label = f"DataLoader, {workers} workers{' + preload' if preload else ''}, {name}"
            print(row.format(label, f"{rate:.0f}", f"{ratio:.2f}"))
    print(f"\nload average at the end {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
