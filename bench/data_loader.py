"""Throughput of megengine.data.DataLoader on Fashion-MNIST.

Measures batches per second for:

* a plain NumPy loop over the arrays (index, normalize, transpose: the floor of what loading
  costs),
* DataLoader with Normalize + ToMode and 0, 1 and 2 worker processes,
* the same loaders feeding a simulated training step that costs as much as loading a batch
  serially: with workers the loader should keep up, i.e. an epoch should take about as long
  as the training steps alone.

Usage: PYTHONPATH=python python3 bench/data_loader.py [--batch-size 64] [--batches 400]
"""

import argparse
import os
import sys
import time

import numpy as np

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


def best_of(repeat, fn):
    # The fastest of several runs: the one least disturbed by other processes.
    return max((fn() for _ in range(repeat)), key=lambda r: r[0])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--root", default=None, help="Fashion-MNIST folder (Debian's by default)")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--batches", type=int, default=400, help="batches per run")
    parser.add_argument("--repeat", type=int, default=3, help="runs per measurement, best kept")
    parser.add_argument(
        "--spin",
        action="store_true",
        help="simulate the training step by spinning the CPU (default: sleeping, as while a GPU "
        "computes)",
    )
    args = parser.parse_args()

    ds = FashionMNIST(args.root, train=True)
    transform = T.Compose([T.Normalize(mean=MEAN, std=STD), T.ToMode("CHW")])

    def sampler():
        return RandomSampler(ds, batch_size=args.batch_size, drop_last=True, seed=0)

    def loader(workers):
        return DataLoader(ds, sampler(), transform=transform, num_workers=workers)

    print(
        f"Fashion-MNIST train, batch {args.batch_size}, {args.batches} batches per run, best of "
        f"{args.repeat}; {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}"
    )
    row = "{:<36}{:>12}{:>20}"
    print(row.format("loader", "batches/s", ""))
    plain = best_of(args.repeat, lambda: (plain_loop(ds.arrays[0], sampler(), args.batches),))
    print(row.format("plain NumPy loop over the arrays", f"{plain[0]:.0f}", ""))
    rates = {}
    for workers in (0, 1, 2):
        rates[workers] = best_of(args.repeat, lambda w=workers: run_loader(loader(w), args.batches))
        print(row.format(f"DataLoader, {workers} workers", f"{rates[workers][0]:.0f}", ""))

    step_s = 1.0 / rates[0][0]
    kind = "spinning" if args.spin else "sleeping"
    print(
        f"\nwith a {kind} training step of {step_s * 1e3:.2f} ms (the serial load time per batch)"
    )
    steps = best_of(args.repeat, lambda: run_loader(None, args.batches, step_s, args.spin))
    print(row.format("loader", "batches/s", "time / steps alone"))
    print(row.format("training steps alone (no loading)", f"{steps[0]:.0f}", "1.00"))
    for workers in (0, 1, 2):
        rate, elapsed = best_of(
            args.repeat, lambda w=workers: run_loader(loader(w), args.batches, step_s, args.spin)
        )
        print(
            row.format(f"DataLoader, {workers} workers", f"{rate:.0f}", f"{elapsed / steps[1]:.2f}")
        )


if __name__ == "__main__":
    main()
