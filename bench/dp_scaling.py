"""Data-parallel scaling of the LeNet training step (batch 64 per process, 1x28x28; forward,
GradManager backward with make_allreduce_cb("mean"), SGD with momentum) on 1, 2, ... processes
of this machine, Gloo over loopback.

Every process count runs under ``megengine.distributed.launcher`` (forked ranks) with --threads
kernel threads per rank (1 by default, through OMP_NUM_THREADS, which the launcher leaves alone),
so the figures compare like with like: n processes on n times the cores with n times the global
batch (weak scaling). Each rank times --steps steps after a barrier, --repeat times; a run's time
is the slowest rank's. The process counts take turns for --rounds rounds (1, 2, 1, 2, ...), so
that a change in the machine's load hits each, and the figure is the median over all runs, as
samples/s of the whole job.
"Speedup" is samples/s against one process; two processes can only beat one where the machine
has a free core for the second (on a shared 2-core machine the figures are noisy). "cpu ms" is a
rank's own CPU time per step (median over ranks and runs), which the machine's load changes
little: "cpu speedup" = n * cpu ms(1) / cpu ms(n) is the speedup that n free cores would give.

Usage: PYTHONPATH=python python3 bench/dp_scaling.py [--procs 1 2] [--steps 30] [--repeat 3]
       [--rounds 3] [--threads 1] [--bucket-kb KB]
"""

import argparse
import os
import sys
import time

import numpy as np
from machine import describe

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))


def _threads_from_argv():
    # Read by OpenMP when megengine loads: set before the import.
    for i, a in enumerate(sys.argv):
        if a == "--threads" and i + 1 < len(sys.argv):
            return sys.argv[i + 1]
        if a.startswith("--threads="):
            return a.split("=", 1)[1]
    return "1"


os.environ["OMP_NUM_THREADS"] = _threads_from_argv()

import megengine as mge
import megengine.distributed as dist
import megengine.functional as F
import megengine.module as M
from megengine.autodiff import GradManager
from megengine.core import _imperative_rt as _rt
from megengine.optimizer import SGD


class LeNet(M.Module):
    def __init__(self):
        super().__init__()
        self.conv1, self.conv2 = M.Conv2d(1, 6, 5), M.Conv2d(6, 16, 5)
        self.fc1, self.fc2, self.fc3 = M.Linear(256, 120), M.Linear(120, 84), M.Linear(84, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return self.fc3(F.relu(self.fc2(F.relu(self.fc1(F.flatten(x, 1))))))


def worker(steps, repeat, batch, bucket_bytes):
    rng = np.random.default_rng(dist.get_rank())
    x = mge.Tensor(rng.normal(size=(batch, 1, 28, 28)).astype("float32"))
    y = mge.Tensor(rng.integers(0, 10, batch).astype("int32"))
    model = LeNet()
    dist.bcast_list_(list(model.parameters()))
    cb = dist.make_allreduce_cb("mean")
    if bucket_bytes is not None:
        cb._param_pack_thd = bucket_bytes
    gm = GradManager().attach(model.parameters(), callbacks=[cb])
    opt = SGD(model.parameters(), lr=0.01, momentum=0.9)

    def step():
        with gm:
            gm.backward(F.nn.cross_entropy(model(x), y))
        opt.step().clear_grad()

    for _ in range(3):  # warm-up: kernel plans, connections
        step()
    times, cpu = [], []
    for _ in range(repeat):
        dist.group_barrier()
        start, cpu_start = time.perf_counter(), time.process_time()
        for _ in range(steps):
            step()
        times.append(time.perf_counter() - start)
        cpu.append(time.process_time() - cpu_start)
    return times, cpu, _rt.x86_threads()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--procs", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1, help="kernel threads per rank")
    ap.add_argument(
        "--bucket-kb",
        type=int,
        default=None,
        help="make_allreduce_cb's bucket size (default: its own, 10 MB: LeNet's 176 KB of "
        "gradients in one bucket, all-reduced when backward ends)",
    )
    args = ap.parse_args()
    print(describe())
    print(f"cores: {os.cpu_count()}, load average before: {os.getloadavg()[0]:.2f}")
    runs = {n: [] for n in args.procs}
    cpus = {n: [] for n in args.procs}
    threads = {n: set() for n in args.procs}
    for _ in range(args.rounds):
        for n in args.procs:
            launch = dist.launcher(n_gpus=n, timeout=600)(worker)
            bucket = None if args.bucket_kb is None else args.bucket_kb * 1024
            per_rank = launch(args.steps, args.repeat, args.batch, bucket)
            walls = np.array([r[0] for r in per_rank])
            runs[n].extend(np.max(walls, axis=0))  # a run ends with its last rank
            cpus[n].extend(np.concatenate([r[1] for r in per_rank]))
            threads[n].update(r[2] for r in per_rank)
    rows = []
    for n in args.procs:
        seconds = float(np.median(runs[n]))
        cpu_step = float(np.median(cpus[n])) / args.steps
        rows.append((n, n * args.batch * args.steps / seconds, seconds / args.steps, cpu_step))
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    header = f"{'procs':>5} {'threads':>7} {'samples/s':>10} {'ms/step':>8} {'speedup':>8}"
    print(header + f" {'cpu ms':>7} {'cpu speedup':>11}")
    base, base_cpu = rows[0][1], rows[0][3]
    for n, rate, step_s, cpu_step in rows:
        ts = ",".join(str(t) for t in sorted(threads[n]))
        print(
            f"{n:>5} {ts:>7} {rate:10.1f} {step_s * 1e3:8.2f} {rate / base:8.2f}"
            f" {cpu_step * 1e3:7.2f} {n * base_cpu / cpu_step / rows[0][0]:11.2f}"
        )


if __name__ == "__main__":
    main()
