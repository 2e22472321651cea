"""Elementwise and reduce bandwidth on the x86 handle, as a ratio of a STREAM triad's.

One command builds bench/stream_bench.cpp (the CMake target neomeg_stream_bench, in an already
configured build directory) and runs it: add, mul, relu and exp on 16M float32 and the sum of
all 16M, float32 <-> float16 and float32 <-> bfloat16 (TypeCvt), a 4096 x 4096 float32
transpose and NCHW <-> NHWC permutations of 64-channel 64 x 64 images (Relayout: batched
transposes), F.pad of 64-channel 28 x 28 images by one pixel (Padding, CONSTANT) and F.embedding
of a 2048 x 32 table (IndexingMultiAxisVec on axis 0), each timed through the x86 handle's
operators, against a STREAM triad (a = b + s * c, an OpenMP parallel-for over the same threads)
and a STREAM copy (a = b, the bound of the padding and the embedding, which only move bytes)
measured in the same process. Bytes are counted as STREAM counts them, so a kernel that streams memory as well as the triad scores 1.0; the target
is 0.8. The cases run interleaved (one call of each per repetition), so that a change in the
machine's load reaches all of them alike.

On a machine shared with other work, timings swing from run to run: the program runs --rounds
times and each case keeps its best time over all rounds.

    python3 bench/stream.py [--build-dir build] [--threads 1 2] [--elements 16777216]
                            [--repeat 10] [--rounds 3]

One table per thread count (the issue's figures are for 1 and 2 threads, the default).
"""

import argparse
import json
import os
import subprocess
import sys

from machine import describe

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TARGET = 0.8


def build(build_dir):
    subprocess.run(
        ["cmake", "--build", build_dir, "--target", "neomeg_stream_bench", "-j", "2"],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    return os.path.join(build_dir, "dnn", "neomeg_stream_bench")


def run_round(binary, threads, elements, repeat):
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), OMP_PROC_BIND="false")
    out = subprocess.run(
        [binary, str(elements), str(repeat)], env=env, check=True, capture_output=True, text=True
    ).stdout
    cases = {}
    for line in out.splitlines():
        rec = json.loads(line)
        if "case" in rec:
            cases[rec["case"]] = rec
    return cases


def print_table(binary, threads, args):
    best = {}
    for _ in range(args.rounds):
        for name, rec in run_round(binary, threads, args.elements, args.repeat).items():
            if name not in best or rec["best_gbs"] > best[name]["best_gbs"]:
                best[name] = rec
    triad = best.pop("triad")["best_gbs"]
    print(f"{args.elements} float32, {threads} threads, best of {args.rounds} x {args.repeat}")
    print(f"{'case':<14}{'GB/s':>8}{'/ triad':>9}")
    print(f"{'triad':<14}{triad:>8.2f}{1.0:>9.2f}")
    for name, rec in best.items():
        ratio = rec["best_gbs"] / triad
        flag = "" if ratio >= TARGET else f"  (below {TARGET})"
        print(f"{name:<14}{rec['best_gbs']:>8.2f}{ratio:>9.2f}{flag}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--build-dir", default=os.path.join(ROOT, "build"))
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--elements", type=int, default=1 << 24)
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    print(describe())
    if min(args.threads) < 1 or args.elements < 1 or args.repeat < 1 or args.rounds < 1:
        parser.error("--threads, --elements, --repeat and --rounds must be positive")

    binary = build(args.build_dir)
    for threads in args.threads:
        print_table(binary, threads, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
