"""megengine.dtr's trade: the peak of allocated memory against the time of a training step.

CIFAR ResNet-18 (batch 32) or LeNet training steps (forward, backward, SGD momentum) run without
DTR, then with DTR at eviction thresholds of given fractions of that run's peak; each line prints
the step time and the peak of allocated memory as ratios to the run without DTR measured in the
same command, the eviction and recomputation counts, and whether the parameters after the timed
steps are bitwise those of the run without DTR (they must be). PyTorch has no automatic
counterpart (its checkpointing is written into the model), so the reference is our own step.

    python3 bench/dtr.py [--model resnet18|lenet] [--steps 4] [--fractions 0.75 0.5]
                         [--cost estimate|measured]

--cost picks what eviction counts as a value's recomputation cost (megengine.dtr._eviction_cost:
the bytes its op moved, the default, or its measured time).
"""

import argparse
import time

import numpy as np
from bench_models import MODELS
from machine import describe

import megengine as mge
import megengine.functional as F
import megengine.module as nn
from megengine.autodiff import GradManager
from megengine.core import _imperative_rt as rt
from megengine.optimizer import SGD

Module, relu, flatten, pool = nn.Module, F.relu, lambda t: F.flatten(t, 1), F.max_pool2d


def avgpool(t):
    return F.mean(t, axis=(2, 3))


exec(MODELS)  # LeNet, ResNet18, MobileNet over the names above  # noqa: S102


def run(model_name, steps, threshold, cost="estimate"):
    mge.random.seed(0)
    model = {"lenet": LeNet, "resnet18": ResNet18}[model_name]()  # noqa: F821
    rng = np.random.default_rng(0)
    batch, shape = (64, (1, 28, 28)) if model_name == "lenet" else (32, (3, 32, 32))
    x = mge.Tensor(rng.normal(size=(batch,) + shape).astype(np.float32))
    y = mge.Tensor(rng.integers(0, 10, batch).astype(np.int32))
    gm = GradManager().attach(model.parameters())
    opt = SGD(model.parameters(), lr=0.01, momentum=0.9)

    def step():
        with gm:
            gm.backward(F.nn.cross_entropy(model(x), y))
        opt.step().clear_grad()

    step()  # warm-up: plans, weights' reorders
    if threshold is not None:
        mge.dtr.eviction_threshold = int(threshold)
        mge.dtr.evictee_minimum_size = "64KB"
        mge.dtr._eviction_cost = cost
        mge.dtr.enable()
    rt.dtr_reset_stats()
    mge.reset_max_memory_stats()
    times = []
    for _ in range(steps):
        t0 = time.perf_counter()
        step()
        times.append(time.perf_counter() - t0)
    peak = mge.get_max_allocated_memory()
    mge.dtr.disable()
    return min(times), peak, rt.dtr_stats(), [p.numpy() for p in model.parameters()]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="resnet18", choices=["resnet18", "lenet"])
    ap.add_argument("--steps", type=int, default=4)
    ap.add_argument("--fractions", type=float, nargs="+", default=[0.75, 0.5])
    ap.add_argument("--cost", default="estimate", choices=["estimate", "measured"])
    args = ap.parse_args()
    print(describe())
    t0, peak0, _, params0 = run(args.model, args.steps, None)
    print(f"eviction cost: {args.cost}")
    print(f"{args.model}: without DTR {t0 * 1e3:.1f} ms/step, peak {peak0 / 2**20:.1f} MiB")
    print("threshold | time ratio | peak ratio | evictions | recomputations | same parameters")
    for frac in args.fractions:
        t, peak, stats, params = run(args.model, args.steps, frac * peak0, args.cost)
        same = all(np.array_equal(a, b) for a, b in zip(params, params0))
        print(
            f"{frac:.2f} x peak | {t / t0:.2f} | {peak / peak0:.2f} | {stats['evictions']} | "
            f"{stats['recomputations']} | {same}"
        )


if __name__ == "__main__":
    main()
