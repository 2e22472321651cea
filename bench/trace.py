"""megengine.jit.trace against eager mode and PyTorch eager, in one command:

* a chain of 50 small elementwise ops (on 8 and on 16x16 float32 elements): per call, the traced
  graph against the same Python function run eagerly. Eager mode pays its dispatch once an op;
  the traced graph (opt_level 2) fuses the whole chain into one FusedElemwise step, so both
  sizes mostly measure the call itself;
* training steps of LeNet (batch 64, 1x28x28), a CIFAR-style ResNet-18 (batch 32, 3x32x32) and,
  with ``--models mobilenet``, a MobileNet v1 of depthwise-separable blocks (batch 32, 3x32x32):
  forward, GradManager backward, SGD with momentum and clear_grad, traced whole against the same
  step run eagerly and against PyTorch 2.x eager (``--threads``, below, in a process of
  its own, the same model text: bench/bench_models.py); samples/s from the fastest and from the
  median of the timed steps. For ResNet-18 also the compiled graph's planned arena (every
  intermediate and workspace of the step, statically placed) beside eager mode's peak allocated
  bytes during a step and the most bytes the graph has live at one step (the bound for any
  placement). Each model also gets the time its traced step spends in convolutions (a
  profiled replay): eager mode runs the same convolution kernels, so the rest of the step
  bounds what tracing can gain, and the line prints that bound on traced/eager. Each training
  line also gives our median CPU time per step (both
  threads' together): on a shared machine it moves much less than the wall clock when other
  work takes the cores, though it also counts OpenMP's spinning at barriers.

``--threads N`` (default 2, the issue's setting) is both sides' thread count: ``OMP_NUM_THREADS``
for NeoMeg, set before it loads, and ``torch.set_num_threads`` for PyTorch. With ``--threads 1``
the process CPU times (the ``CPU ms/step`` line) are the steadiest figures a shared machine gives:
no OpenMP thread spins waiting for a partner that another process holds off its core.

``--benchmark-kernel`` sets ``megengine.config.benchmark_kernel`` (MegEngine's fastrun; off by
default as in MegEngine) for both our eager and traced steps: the x86 convolutions then time
oneDNN's direct and Winograd algorithms per shape and keep the faster, where by default a rule on
the shape picks one (docs/x86-backend.md, "Convolution"; ``NEOMEG_CONV_WINOGRAD=0`` keeps them
direct).

    PYTHONPATH=python python3 bench/trace.py [--steps N] [--models lenet resnet18 mobilenet]
        [--no-chain] [--benchmark-kernel] [--threads N]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np
from machine import describe

HERE = os.path.dirname(os.path.abspath(__file__))


def threads_from_argv(argv):
    """--threads N (or --threads=N) from the command line, 2 when absent: OpenMP reads its
    thread count once, when megengine loads, which is before argparse runs."""
    for i, arg in enumerate(argv):
        value = arg.split("=", 1)[1] if arg.startswith("--threads=") else None
        if arg == "--threads" and i + 1 < len(argv):
            value = argv[i + 1]
        if value is not None:
            if not value.isdigit() or int(value) < 1:
                raise SystemExit(f"--threads takes a positive integer, not {value!r}")
            return int(value)
    return 2


THREADS = threads_from_argv(sys.argv[1:])
os.environ["OMP_NUM_THREADS"] = str(THREADS)
sys.path.insert(0, os.path.join(HERE, "..", "python"))
sys.path.insert(0, HERE)

from bench_models import MODELS
from torch_reference import torch_python

import megengine as mge
import megengine.functional as F
import megengine.module as M
from megengine.autodiff import GradManager
from megengine.core import _imperative_rt as rt
from megengine.jit import trace
from megengine.optimizer import SGD

BATCH = {"lenet": (64, (1, 28, 28)), "resnet18": (32, (3, 32, 32)), "mobilenet": (32, (3, 32, 32))}
CLASS = {"lenet": "LeNet", "resnet18": "ResNet18", "mobilenet": "MobileNet"}

# PyTorch's side: the same model text and step, timed the same way (every step after warm-up).
TORCH_WORKER = (
    r"""
import json, sys, time
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

model_name, steps = sys.argv[1], int(sys.argv[2])
torch.set_num_threads(int(sys.argv[3]))
Module, relu, flatten, pool = nn.Module, F.relu, lambda t: torch.flatten(t, 1), F.max_pool2d
avgpool = lambda t: t.mean(dim=(2, 3))
"""
    + MODELS
    + r"""
batch, shape = (64, (1, 28, 28)) if model_name == "lenet" else (32, (3, 32, 32))
rng = np.random.default_rng(0)
x = torch.tensor(rng.normal(size=(batch,) + shape).astype(np.float32))
y = torch.tensor(rng.integers(0, 10, batch).astype(np.int64))
model = {"lenet": LeNet, "resnet18": ResNet18, "mobilenet": MobileNet}[model_name]()
opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)

def step():
    opt.zero_grad()
    F.cross_entropy(model(x), y).backward()
    opt.step()

for _ in range(2):
    step()
times = []
for _ in range(steps):
    t0 = time.perf_counter()
    step()
    times.append(time.perf_counter() - t0)
print(json.dumps(times))
"""
)


def neomeg_model(name):
    namespace = {"nn": M, "Module": M.Module, "relu": F.relu, "pool": F.max_pool2d}
    namespace["flatten"] = lambda t: F.flatten(t, 1)
    namespace["avgpool"] = lambda t: F.mean(t, axis=(2, 3))
    exec(MODELS, namespace)  # noqa: S102 - our own source text
    return namespace[CLASS[name]]()


def make_step(model):
    gm = GradManager().attach(model.parameters())
    opt = SGD(model.parameters(), lr=0.01, momentum=0.9)

    def step(data, label):
        with gm:
            loss = F.nn.cross_entropy(model(data), label)
            gm.backward(loss)
        opt.step().clear_grad()
        return loss

    return step


def step_times(fn, args, steps, warmup=2, cpu=None):
    """Wall seconds per step; with a list `cpu`, appends each step's process CPU seconds to it."""
    for _ in range(warmup):  # a trace records on its first call
        fn(*args)
    times = []
    for _ in range(steps):
        c0, t0 = time.process_time(), time.perf_counter()
        fn(*args).numpy()  # the loss's value: the step has finished
        times.append(time.perf_counter() - t0)
        if cpu is not None:
            cpu.append(time.process_time() - c0)
    return times


def torch_times(name, steps):
    python, why = torch_python()
    if python is None:
        return None, why
    proc = subprocess.run(
        [python, "-c", TORCH_WORKER, name, str(steps), str(THREADS)],
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        return None, (proc.stderr.strip().splitlines() or ["no output"])[-1]
    return json.loads(proc.stdout.strip().splitlines()[-1]), None


def eager_peak_bytes(step, args):
    step(*args)
    # The caching allocator may hand a request a cached block up to twice its size and counts
    # the whole block, so blocks the earlier (traced, profiled) runs left would make the peak
    # depend on what ran before.
    rt.empty_cache("cpu0")
    rt.reset_peak_memory_stats("cpu0")
    before = rt.memory_stats("cpu0")["allocated"]
    step(*args).numpy()
    return rt.memory_stats("cpu0")["peak_allocated"] - before


def convolution_ms(name, args, steps):
    """Median over ``steps`` replays of the time a profiled traced step spends in convolution
    kernels (forward, ConvBias and both backwards). Eager mode calls the same kernels, so the
    step time left beside them bounds what tracing can gain (Amdahl's law)."""
    step = trace(make_step(neomeg_model(name)), profiling=True)
    step(*args)
    totals = []
    for _ in range(max(steps, 3)):
        step(*args).numpy()
        prof = step._session.profile()
        totals.append(sum(s["end"] - s["start"] for s in prof if "Conv" in s["type"]) * 1e3)
    return statistics.median(totals)


def rate(batch, times):
    """samples/s of the fastest step and of the median step."""
    return batch / min(times), batch / statistics.median(times)


def bench_training(name, steps):
    batch, shape = BATCH[name]
    rng = np.random.default_rng(0)
    x = mge.Tensor(rng.normal(size=(batch,) + shape).astype(np.float32))
    y = mge.Tensor(rng.integers(0, 10, batch).astype(np.int32))
    eager_step = make_step(neomeg_model(name))
    traced_step = trace(make_step(neomeg_model(name)))
    # Interleaved, so that load from other processes falls on both alike.
    eager, traced, eager_cpu, traced_cpu = [], [], [], []
    for _ in range(2):
        eager += step_times(eager_step, (x, y), (steps + 1) // 2, cpu=eager_cpu)
        traced += step_times(traced_step, (x, y), (steps + 1) // 2, cpu=traced_cpu)
    ours_e, ours_t = rate(batch, eager), rate(batch, traced)
    theirs, why = torch_times(name, steps)
    line = (
        f"{name} (batch {batch}) samples/s, best | median: eager {ours_e[0]:.1f} | {ours_e[1]:.1f}"
        f", traced {ours_t[0]:.1f} | {ours_t[1]:.1f}, traced/eager "
        f"{ours_t[0] / ours_e[0]:.2f} | {ours_t[1] / ours_e[1]:.2f}"
    )
    if theirs is None:
        line += f"; PyTorch eager: none ({why})"
    else:
        pt = rate(batch, theirs)
        line += (
            f"; PyTorch eager {pt[0]:.1f} | {pt[1]:.1f}, traced/PyTorch "
            f"{ours_t[0] / pt[0]:.2f} | {ours_t[1] / pt[1]:.2f}"
        )
    print(line, flush=True)
    e_cpu, t_cpu = statistics.median(eager_cpu), statistics.median(traced_cpu)
    print(
        f"{name} CPU ms/step (median): eager {e_cpu * 1e3:.1f}, traced {t_cpu * 1e3:.1f}, "
        f"eager/traced {e_cpu / t_cpu:.2f}",
        flush=True,
    )
    conv_ms = convolution_ms(name, (x, y), steps)
    bound = statistics.median(eager) / (conv_ms / 1e3)
    print(
        f"{name} convolutions: {conv_ms:.1f} ms of the traced step's "
        f"{statistics.median(traced) * 1e3:.1f} ms (median); eager runs the same convolution "
        f"kernels, so even with every other step free traced/eager could reach at most "
        f"{bound:.2f}",
        flush=True,
    )
    if name == "resnet18":
        peak = eager_peak_bytes(eager_step, (x, y))
        planned = traced_step._session.planned_peak_bytes
        live = traced_step._session.live_peak_bytes
        print(
            f"{name} memory: eager peak {peak / 2**20:.1f} MiB, traced planned arena "
            f"{planned / 2**20:.1f} MiB ({planned / max(peak, 1):.2f}x eager; the most bytes "
            f"live at one step, which no placement beats: {live / 2**20:.1f} MiB)",
            flush=True,
        )


def chain50(x):
    for i in range(50):
        x = (x * 1.01) if i % 3 == 0 else (x + 0.5) if i % 3 == 1 else F.relu(x)
    return x


def per_call(fn, args, iters, repeat):
    fn(*args)
    fn(*args)  # the first call of a trace records; the second compiles nothing more
    runs = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(iters):
            fn(*args)
        runs.append((time.perf_counter() - t0) / iters)
    return statistics.median(runs)


def bench_chain(iters, repeat):
    for shape in ((8,), (16, 16)):
        x = mge.Tensor(np.random.default_rng(0).normal(size=shape).astype(np.float32))
        traced = trace(chain50)
        np.testing.assert_allclose(traced(x).numpy(), chain50(x).numpy(), rtol=1e-5)
        t_eager = per_call(chain50, (x,), iters, repeat)
        t_traced = per_call(traced, (x,), iters, repeat)
        print(
            f"50 elementwise ops on {'x'.join(map(str, shape))}: eager {t_eager * 1e6:.1f} us, "
            f"traced {t_traced * 1e6:.1f} us, traced speed-up {t_eager / t_traced:.2f}x",
            flush=True,
        )


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--steps", type=int, help="timed training steps per mode (default: LeNet 60, ResNet-18 6)"
    )
    parser.add_argument("--models", nargs="+", default=["lenet", "resnet18"], choices=BATCH)
    parser.add_argument("--no-chain", action="store_true", help="skip the elementwise chain")
    parser.add_argument("--iters", type=int, default=200, help="calls per timed run (chain)")
    parser.add_argument("--repeat", type=int, default=5, help="timed runs (chain)")
    parser.add_argument(
        "--threads",
        type=int,
        default=2,
        help="threads of both frameworks (OMP_NUM_THREADS, torch.set_num_threads); default 2",
    )
    parser.add_argument(
        "--benchmark-kernel",
        action="store_true",
        help="megengine.config.benchmark_kernel = True (fastrun) for our eager and traced steps",
    )
    args = parser.parse_args()
    print(describe())
    mge.config.benchmark_kernel = args.benchmark_kernel
    if not args.no_chain:
        bench_chain(args.iters, args.repeat)
    for name in args.models:
        bench_training(name, args.steps or {"lenet": 60, "resnet18": 6, "mobilenet": 10}[name])


if __name__ == "__main__":
    main()
