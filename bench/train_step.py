"""One training step (forward, backward, SGD with momentum) of LeNet (batch 64, 1x28x28), a
CIFAR-style ResNet-18 and a MobileNet (batch 32, 3x32x32), NeoMeg against PyTorch in the same
command.

Each framework and model runs in a process of its own (PyTorch 2.x from PyPI, found by
torch_reference.py), so the peak resident memory printed is that run's own.

    PYTHONPATH=python python3 bench/train_step.py [--models lenet resnet18 mobilenet] [--steps 5]
        [--threads 1 2] [--format nhwc] [--float32-layout plain]

One table per thread count (1 and 2 by default).

``--format nhwc`` runs both frameworks channels-last: NeoMeg's
``amp.convert_module_format`` / ``amp.convert_tensor_format`` and PyTorch's
``channels_last`` memory format on the model and the input. On a shared machine the wall-clock
figures move with the load (each worker takes its fastest step); the one-thread figures are the
steadier ones.

``--float32-layout plain`` switches off NeoMeg's automatic float32 channels-last layout (the input
of a wide depthwise convolution; ``megengine.core.tensor.amp.AUTO_CHANNELS_LAST_FLOAT32``), to
compare with its default ``auto``.
"""

import argparse
import json
import os
import subprocess
import sys

from bench_models import MODELS
from machine import describe
from torch_reference import torch_python

# Model definitions and the timed loop, written once for both frameworks: `nn`, `F`, `opt` and
# the step body differ, the architecture does not.
WORKER = (
    r"""
import json, resource, sys, time
import numpy as np

fw, model_name, steps, fmt, layout = (
    sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[5], sys.argv[6])
rng = np.random.default_rng(0)
if model_name == "lenet":
    batch, shape = 64, (1, 28, 28)
else:
    batch, shape = 32, (3, 32, 32)
x_np = rng.normal(size=(batch,) + shape).astype(np.float32)
y_np = rng.integers(0, 10, batch).astype(np.int32)

if fw == "neomeg":
    import megengine as mge
    import megengine.functional as F
    import megengine.module as nn
    from megengine.autodiff import GradManager
    from megengine.core.tensor import amp as core_amp
    from megengine.optimizer import SGD

    core_amp.AUTO_CHANNELS_LAST_FLOAT32 = layout == "auto"
    Module, relu, flatten, pool = nn.Module, F.relu, lambda t: F.flatten(t, 1), F.max_pool2d
    avgpool = lambda t: F.mean(t, axis=(2, 3))
else:
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    torch.set_num_threads(int(sys.argv[4]))
    Module, relu, flatten, pool = nn.Module, F.relu, lambda t: torch.flatten(t, 1), F.max_pool2d
    avgpool = lambda t: t.mean(dim=(2, 3))


"""
    + MODELS
    + r"""
model = {"lenet": LeNet, "resnet18": ResNet18, "mobilenet": MobileNet}[model_name]()
if fw == "neomeg":
    x, y = mge.Tensor(x_np), mge.Tensor(y_np)
    if fmt == "nhwc":
        from megengine import amp

        amp.convert_module_format(model)
        x = amp.convert_tensor_format(x)
    gm = GradManager().attach(model.parameters())
    opt = SGD(model.parameters(), lr=0.01, momentum=0.9)

    def step():
        with gm:
            loss = F.nn.cross_entropy(model(x), y)
            gm.backward(loss)
        opt.step().clear_grad()
else:
    x, y = torch.tensor(x_np), torch.tensor(y_np).long()
    if fmt == "nhwc":
        model = model.to(memory_format=torch.channels_last)
        x = x.to(memory_format=torch.channels_last)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)

    def step():
        opt.zero_grad()
        F.cross_entropy(model(x), y).backward()
        opt.step()

step()  # warm-up
times = []
for _ in range(steps):
    t0 = time.perf_counter()
    step()
    times.append(time.perf_counter() - t0)
best = min(times)
print(json.dumps({"samples_per_s": batch / best,
                  "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""
)


def run(python, fw, model, steps, threads, fmt, layout):
    threads = str(threads)
    # OpenMP (NeoMeg's oneDNN and loop kernels) reads OMP_NUM_THREADS; PyTorch gets the same
    # count from set_num_threads as well.
    env = dict(os.environ, OMP_NUM_THREADS=threads)
    proc = subprocess.run(
        [python, "-c", WORKER, fw, model, str(steps), threads, fmt, layout],
        check=False,
        capture_output=True,
        text=True,
        env=env,
    )
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        return None, last
    return json.loads(proc.stdout.strip().splitlines()[-1]), None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--models",
        nargs="+",
        default=["lenet", "resnet18"],
        choices=["lenet", "resnet18", "mobilenet"],
    )
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--format", choices=["default", "nhwc"], default="default")
    ap.add_argument("--float32-layout", choices=["auto", "plain"], default="auto")
    ap.add_argument(
        "--threads", type=int, nargs="+", default=[1, 2], help="per framework, a table for each"
    )
    args = ap.parse_args()
    print(describe())
    if min(args.threads) < 1:
        ap.error("--threads must be positive")
    for threads in args.threads:
        print_table(args, threads)
    print("ratio = NeoMeg samples/s / PyTorch samples/s (higher is better for NeoMeg)")
    return 0


def print_table(args, threads):
    print(f"{threads} thread(s) per framework")
    print(
        f"{'model':<10}{'NeoMeg samples/s':>18}{'PyTorch samples/s':>19}{'ratio':>8}"
        f"{'NeoMeg MiB':>12}{'PyTorch MiB':>13}"
    )
    for model in args.models:
        ours, why = run(
            sys.executable, "neomeg", model, args.steps, threads, args.format, args.float32_layout
        )
        theirs = None
        python, twhy = torch_python()
        if python is not None:
            theirs, twhy = run(
                python, "torch", model, args.steps, threads, args.format, args.float32_layout
            )
        if ours is None:
            print(f"{model:<10} NeoMeg failed: {why}")
            continue
        if theirs is None:
            print(
                f"{model:<10}{ours['samples_per_s']:>18.1f}{'-':>19}{'-':>8}"
                f"{ours['peak_rss_mib']:>12.0f}{'-':>13}   (PyTorch: {twhy})"
            )
            continue
        ratio = ours["samples_per_s"] / theirs["samples_per_s"]
        print(
            f"{model:<10}{ours['samples_per_s']:>18.1f}{theirs['samples_per_s']:>19.1f}"
            f"{ratio:>8.3f}{ours['peak_rss_mib']:>12.0f}{theirs['peak_rss_mib']:>13.0f}"
        )


if __name__ == "__main__":
    sys.exit(main())
