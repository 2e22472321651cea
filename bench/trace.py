"""megengine.jit.trace against eager mode, in one command:

* a chain of 50 small elementwise ops (on 8 and on 16x16 float32 elements): per call, the traced
  graph against the same Python function run eagerly. Eager mode pays its dispatch once an op;
  the traced graph (opt_level 2) fuses the whole chain into one FusedElemwise step, which runs
  it in one pass over memory in loops of its own, so both sizes mostly measure the call itself;
* a LeNet training step (batch 64, 1x28x28; forward, GradManager backward, SGD with momentum,
  clear_grad) traced whole against eager; with --resnet also a CIFAR-style ResNet-18 step
  (batch 32), slow on a small machine.

Each figure is the median of --repeat timed runs of --iters calls after warm-up. For training
steps it also prints the compiled graph's planned arena (every intermediate and workspace of the
step, statically placed) beside eager mode's peak allocated bytes during a step.

    PYTHONPATH=python python3 bench/trace.py [--iters 200] [--repeat 5] [--resnet]
"""

import argparse
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))

import megengine as mge
import megengine.functional as F
import megengine.module as M
from megengine.autodiff import GradManager
from megengine.core import _imperative_rt as rt
from megengine.jit import trace
from megengine.optimizer import SGD


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


def chain50(x):
    for i in range(50):
        x = (x * 1.01) if i % 3 == 0 else (x + 0.5) if i % 3 == 1 else F.relu(x)
    return x


class LeNet(M.Module):
    def __init__(self):
        super().__init__()
        self.conv1, self.conv2 = M.Conv2d(1, 6, 5), M.Conv2d(6, 16, 5)
        self.fc1, self.fc2, self.fc3 = M.Linear(256, 120), M.Linear(120, 84), M.Linear(84, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return self.fc3(F.relu(self.fc2(F.relu(self.fc1(F.flatten(x, 1))))))


def resnet18():
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    # The same definition bench/train_step.py times against PyTorch.
    from train_step import WORKER

    namespace = {"nn": M, "Module": M.Module, "relu": F.relu}
    namespace["avgpool"] = lambda t: F.mean(t, axis=(2, 3))
    start = WORKER.index("class Block")
    end = WORKER.index("model = ")
    exec(WORKER[start:end], namespace)  # noqa: S102 - our own source text
    return namespace["ResNet18"]()


def make_step(model, x, y):
    gm = GradManager().attach(model.parameters())
    opt = SGD(model.parameters(), lr=0.01, momentum=0.9)

    def step(data, label):
        with gm:
            loss = F.nn.cross_entropy(model(data), label)
            gm.backward(loss)
        opt.step().clear_grad()
        return loss

    return step


def eager_peak_bytes(step, args):
    step(*args)
    rt.reset_peak_memory_stats("cpu0")
    before = rt.memory_stats("cpu0")["allocated"]
    step(*args)
    return rt.memory_stats("cpu0")["peak_allocated"] - before


def bench_training(name, make_model, batch, shape, iters, repeat):
    rng = np.random.default_rng(0)
    x = mge.Tensor(rng.normal(size=(batch,) + shape).astype(np.float32))
    y = mge.Tensor(rng.integers(0, 10, batch).astype(np.int32))
    eager_step = make_step(make_model(), x, y)
    traced_step = trace(make_step(make_model(), x, y))
    t_eager = per_call(eager_step, (x, y), iters, repeat)
    t_traced = per_call(traced_step, (x, y), iters, repeat)
    peak = eager_peak_bytes(eager_step, (x, y))
    planned = traced_step._session.planned_peak_bytes
    print(
        f"{name} training step (batch {batch}): eager {t_eager * 1e3:.2f} ms, "
        f"traced {t_traced * 1e3:.2f} ms, traced speed-up {t_eager / t_traced:.2f}x; "
        f"memory: eager peak {peak / 2**20:.1f} MiB, traced planned arena "
        f"{planned / 2**20:.1f} MiB ({planned / max(peak, 1):.2f}x)"
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--iters", type=int, default=200, help="calls per timed run (chain)")
    parser.add_argument("--repeat", type=int, default=5, help="timed runs; the median is shown")
    parser.add_argument("--resnet", action="store_true", help="also time ResNet-18 (slow)")
    args = parser.parse_args()

    for shape in ((8,), (16, 16)):
        x = mge.Tensor(np.random.default_rng(0).normal(size=shape).astype(np.float32))
        traced = trace(chain50)
        np.testing.assert_allclose(traced(x).numpy(), chain50(x).numpy(), rtol=1e-5)
        t_eager = per_call(chain50, (x,), args.iters, args.repeat)
        t_traced = per_call(traced, (x,), args.iters, args.repeat)
        print(
            f"50 elementwise ops on {'x'.join(map(str, shape))}: eager {t_eager * 1e6:.1f} us, "
            f"traced {t_traced * 1e6:.1f} us, traced speed-up {t_eager / t_traced:.2f}x"
        )
    steps = max(3, args.iters // 20)
    bench_training("LeNet", LeNet, 64, (1, 28, 28), steps, args.repeat)
    if args.resnet:
        bench_training("ResNet-18", resnet18, 32, (3, 32, 32), 2, 3)


if __name__ == "__main__":
    main()
