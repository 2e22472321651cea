"""ResNet-18 inference: NeoMeg's dumped model run through the C++ inference API against PyTorch
2.x eager and torch.compile, in the same command.

NeoMeg builds the network in megengine, traces it in eval mode with capture_as_const, dumps it
and times ``InferenceModel.run`` (the Python binding of the C++ loader and executable that
``load_and_run`` uses; inputs set once, so a run is the executable alone). PyTorch runs the
same architecture under ``torch.inference_mode``, eagerly and compiled. Each framework runs in
a process of its own with the same thread count (``OMP_NUM_THREADS`` for NeoMeg,
``torch.set_num_threads`` for PyTorch; 2 by default). Times are the best of ``--iters`` runs
after warm-up; the machines here are shared, so repeat a run before trusting a figure.

    PYTHONPATH=python python3 bench/inference.py [--configs cifar:1 imagenet:1 cifar:32]
        [--iters 20] [--threads 2] [--no-compile]
"""

import argparse
import json
import os
import subprocess
import sys

from machine import describe
from torch_reference import torch_python

# The architecture and the timed loop, written once for both frameworks.
WORKER = r"""
import json, os, sys, tempfile, time
import numpy as np

fw, style, batch, iters, threads = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
size, classes = (32, 10) if style == "cifar" else (224, 1000)
x_np = np.random.default_rng(0).normal(size=(batch, 3, size, size)).astype(np.float32)

if fw == "neomeg":
    import megengine as mge
    import megengine.functional as F
    import megengine.module as nn
    from megengine.core._imperative_rt import InferenceModel
    from megengine.jit import trace

    relu, maxpool = F.relu, lambda t: F.max_pool2d(t, 3, 2, 1)
    head = lambda t: F.flatten(F.adaptive_avg_pool2d(t, 1), 1)
else:
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    torch.set_num_threads(threads)
    relu, maxpool = F.relu, lambda t: F.max_pool2d(t, 3, 2, 1)
    head = lambda t: torch.flatten(F.adaptive_avg_pool2d(t, 1), 1)


class Block(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.down = None
        if stride != 1 or cin != cout:
            self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        y = self.bn2(self.conv2(relu(self.bn1(self.conv1(x)))))
        return relu(y + (x if self.down is None else self.down(x)))


class ResNet18(nn.Module):
    def __init__(self, style, classes):
        super().__init__()
        self.style = style
        if style == "cifar":
            self.conv1 = nn.Conv2d(3, 64, 3, 1, 1, bias=False)
        else:
            self.conv1 = nn.Conv2d(3, 64, 7, 2, 3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        cfg = [(64, 64, 1), (64, 64, 1), (64, 128, 2), (128, 128, 1),
               (128, 256, 2), (256, 256, 1), (256, 512, 2), (512, 512, 1)]
        self.blocks = nn.Sequential(*[Block(*c) for c in cfg])
        self.fc = nn.Linear(512, classes)

    def forward(self, x):
        x = relu(self.bn1(self.conv1(x)))
        if self.style != "cifar":
            x = maxpool(x)
        return self.fc(head(self.blocks(x)))


model = ResNet18(style, classes)
model.eval()
t_prep = time.perf_counter()
if fw == "neomeg":
    f = trace(lambda t: model(t), capture_as_const=True)
    want = f(mge.Tensor(x_np)).numpy()
    path = os.path.join(tempfile.mkdtemp(), "resnet18.nmeg")
    f.dump(path, arg_names=["x"], output_names=["logits"])
    m = InferenceModel(path)
    m.set_input("x", x_np)
    run = m.run
    run()
    got = m.output("logits")
    err = float(np.abs(got - want).max() / (np.abs(want).max() + 1e-12))
else:
    x = torch.tensor(x_np)
    net = torch.compile(model) if fw == "torch.compile" else model

    def run():
        with torch.inference_mode():
            return net(x)

    run()
    err = 0.0
prep = time.perf_counter() - t_prep
run()
times = []
for _ in range(iters):
    t0 = time.perf_counter()
    run()
    times.append(time.perf_counter() - t0)
times.sort()
print(json.dumps({"best_ms": times[0] * 1e3, "median_ms": times[len(times) // 2] * 1e3,
                  "prep_s": prep, "rel_err": err}))
"""


def run(python, fw, style, batch, iters, threads, env=None):
    proc = subprocess.run(
        [python, "-c", WORKER, fw, style, str(batch), str(iters), str(threads)],
        check=False,
        capture_output=True,
        text=True,
        env=env,
        timeout=1800,
    )
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        return None, last
    return json.loads(proc.stdout.strip().splitlines()[-1]), None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--configs",
        nargs="+",
        default=["cifar:1", "imagenet:1", "cifar:32"],
        help="STYLE:BATCH, STYLE cifar (3x32x32) or imagenet (3x224x224)",
    )
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--no-compile", action="store_true", help="skip torch.compile")
    args = ap.parse_args()
    print(describe())
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads))
    python, why = torch_python()
    fws = ["torch"] + ([] if args.no_compile else ["torch.compile"])
    print(f"ResNet-18 inference, {args.threads} threads, best of {args.iters} runs (ms)")
    print(f"{'config':<14}{'NeoMeg C++':>11}" + "".join(f"{f:>15}" for f in fws)
          + "".join(f"{'vs ' + f:>19}" for f in fws))  # fmt: skip
    for cfg in args.configs:
        style, batch = cfg.split(":")
        ours, owhy = run(sys.executable, "neomeg", style, int(batch), args.iters, args.threads, env)
        if ours is None:
            print(f"{cfg:<14} NeoMeg failed: {owhy}")
            continue
        line = f"{cfg:<14}{ours['best_ms']:>11.2f}"
        ratios = ""
        for fw in fws:
            theirs, twhy = (
                (None, why)
                if python is None
                else run(python, fw, style, int(batch), args.iters, args.threads)
            )
            if theirs is None:
                line += f"{'-':>15}"
                ratios += f"{'-':>19}"
                print(f"  ({fw}: {twhy})")
                continue
            line += f"{theirs['best_ms']:>15.2f}"
            ratios += f"{theirs['best_ms'] / ours['best_ms']:>18.2f}x"
        print(line + ratios + f"   (dumped model vs eager: rel err {ours['rel_err']:.1e})")
    print("vs X = X's time / NeoMeg's time: above 1, the dumped NeoMeg model is faster")
    return 0


if __name__ == "__main__":
    sys.exit(main())
