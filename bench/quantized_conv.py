"""Quantized (int8) inference on x86: NeoMeg's int8 convolution against its own float32 one and
against PyTorch 2.x's quantized convolution, and a quantized ResNet-18 through
``megengine.module.quantized`` against the same float32 network.

One command prints, per convolution of ResNet-18 (3x3 64->64 at 56x56 at batch 1 and 8, the later
stages' 3x3 convolutions, a strided 1x1 downsample), the best and median milliseconds of:

- ``ours int8``: ``F.quantized.conv_bias_activation`` with RELU, qint8 in, qint8 out (the int32
  sums requantised by TypeCvt, as a quantized ``ConvRelu2d`` runs);
- ``ours f32``: ``F.relu(F.conv2d(...))`` on the same shapes in float32;
- ``torch x86`` / ``torch onednn``: ``torch.ao.nn.intrinsic.quantized.ConvReLU2d`` (quint8 in and
  out, qint8 weights) under those quantized engines;

and the ratios ``f32/int8`` (above 1.0: our int8 is faster than our float32) and
``torch/ours`` (above 1.0: ours is faster). ``--network`` adds a quantized ResNet-18 trunk (eager,
``quantize_qat``, calibration, ``quantize``) against the float32 network; ``--before PYTHONPATH``
also times the quantized network on another NeoMeg build (e.g. one whose quantized kernels are
the naive ones) in the same command.

Each framework runs in a process of its own on the same number of threads (PyTorch's
set_num_threads, NeoMeg's OMP_NUM_THREADS). On a machine shared with other work timings swing by
several times: each case runs --repeat times per round, --rounds rounds, the frameworks
interleaved, and the best and median of all calls are printed with the load average.

    PYTHONPATH=python python3 bench/quantized_conv.py [--threads 2] [--repeat 10] [--rounds 3]
                                                      [--network] [--before /work/main/python]
"""

import argparse
import json
import os
import subprocess
import sys

from machine import describe

TORCH_PYTHON = "/root/.cache/neomeg-references/torch-venv/bin/python"

# (name, batch, in channels, out channels, size, kernel, stride, padding)
CONVS = [
    ("3x3 64->64 56x56 b1", 1, 64, 64, 56, 3, 1, 1),
    ("3x3 64->64 56x56 b8", 8, 64, 64, 56, 3, 1, 1),
    ("3x3 128->128 28x28 b1", 1, 128, 128, 28, 3, 1, 1),
    ("3x3 256->256 14x14 b1", 1, 256, 256, 14, 3, 1, 1),
    ("3x3 512->512 7x7 b1", 1, 512, 512, 7, 3, 1, 1),
    ("1x1 64->128 s2 56x56 b1", 1, 64, 128, 56, 1, 2, 0),
]

# argv: framework, json cases, repeat, threads. Prints a JSON list of per-case call times (s).
CONV_WORKER = r"""
import json, sys, time
import numpy as np

fw, cases, repeat, threads = sys.argv[1], json.loads(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
rng = np.random.default_rng(0)


def times(f):
    f()
    out = []
    for _ in range(repeat):
        t = time.perf_counter()
        f()
        out.append(time.perf_counter() - t)
    return out


result = {}
if fw == "neomeg":
    import megengine as mge
    import megengine.functional as F
    from megengine.core.tensor import dtype as D

    for name, n, ci, co, hw, k, s, p in cases:
        x = mge.Tensor(rng.normal(size=(n, ci, hw, hw)).astype(np.float32))
        w = mge.Tensor((rng.normal(size=(co, ci, k, k)) * 0.05).astype(np.float32))
        b = mge.Tensor((rng.normal(size=(1, co, 1, 1)) * 0.1).astype(np.float32))
        xq, wq = x.astype(D.qint8(0.03)), w.astype(D.qint8(0.002))
        out = D.qint8(0.05)
        result[name + "|ours int8"] = times(lambda: F.quantized.conv_bias_activation(
            xq, wq, b, dtype=out, stride=s, padding=p, nonlinear_mode="relu").numpy())
        result[name + "|ours f32"] = times(
            lambda: F.relu(F.conv2d(x, w, b, stride=s, padding=p)).numpy())
else:
    import torch
    import torch.ao.nn.intrinsic.quantized as nniq

    torch.set_num_threads(threads)
    for engine in ("x86", "onednn"):
        torch.backends.quantized.engine = engine
        for name, n, ci, co, hw, k, s, p in cases:
            x = torch.from_numpy(rng.normal(size=(n, ci, hw, hw)).astype(np.float32))
            w = torch.from_numpy((rng.normal(size=(co, ci, k, k)) * 0.05).astype(np.float32))
            conv = nniq.ConvReLU2d(ci, co, k, stride=s, padding=p)
            conv.set_weight_bias(torch.quantize_per_tensor(w, 0.002, 0, torch.qint8),
                                 torch.zeros(co))
            conv.scale, conv.zero_point = 0.05, 0
            xq = torch.quantize_per_tensor(x, 0.03, 128, torch.quint8)
            with torch.no_grad():
                result[name + "|torch " + engine] = times(lambda: conv(xq))
print(json.dumps(result))
"""

# argv: mode (int8 or f32), size, repeat. ResNet-18's trunk (stem, max pooling, BasicBlocks
# 2-2-2-2) on 1x3xSxS.
NET_WORKER = r"""
import json, sys, time
import numpy as np
import megengine as mge
import megengine.functional as F
import megengine.module as M
from megengine.quantization import ema_fakequant_qconfig, quantize, quantize_qat

mode, size, repeat = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])


class Block(M.Module):
    def __init__(self, ci, co, stride):
        super().__init__()
        self.conv1 = M.ConvBnRelu2d(ci, co, 3, stride, 1)
        self.conv2 = M.ConvBn2d(co, co, 3, 1, 1)
        self.down = M.ConvBn2d(ci, co, 1, stride) if stride != 1 or ci != co else None
        self.add = M.Elemwise("fuse_add_relu")

    def forward(self, x):
        short = self.down(x) if self.down is not None else x
        return self.add(self.conv2(self.conv1(x)), short)


class ResNet18(M.Module):
    def __init__(self):
        super().__init__()
        self.quant, self.dequant = M.QuantStub(), M.DequantStub()
        self.stem = M.ConvBnRelu2d(3, 64, 7, 2, 3)
        blocks, ci = [], 64
        for co, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
            blocks += [Block(ci, co, stride), Block(co, co, 1)]
            ci = co
        self.blocks = M.Sequential(*blocks)

    def forward(self, x):
        # The convolutional trunk; pooling and the classifier (float after dequant) left out.
        x = F.max_pool2d(self.stem(self.quant(x)), 3, 2, 1)
        return F.mean(self.dequant(self.blocks(x)), axis=(2, 3))


rng = np.random.default_rng(0)
mge.random.seed(0)
net = ResNet18()
x = mge.Tensor(rng.normal(size=(1, 3, size, size)).astype(np.float32))
if mode == "int8":
    quantize_qat(net, qconfig=ema_fakequant_qconfig)
    net.train()
    for _ in range(2):
        net(x)
    net = quantize(net)
net.eval()
net(x).numpy()
out = []
for _ in range(repeat):
    t = time.perf_counter()
    net(x).numpy()
    out.append(time.perf_counter() - t)
print(json.dumps(out))
"""


def run(python, env_extra, script, args):
    env = dict(os.environ, **env_extra)
    out = subprocess.run(
        [python, "-c", script, *args], env=env, capture_output=True, text=True, check=False
    )
    if out.returncode != 0:
        sys.exit(f"worker failed ({python} {args[:1]}):\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def summary(ts):
    ts = sorted(ts)
    return ts[0] * 1e3, ts[len(ts) // 2] * 1e3


def ratio(best, x, y):
    return f"{best[x] / best[y]:10.2f}" if x in best and y in best else " " * 10


def load():
    return open("/proc/loadavg").read().split()[:3]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--network", action="store_true", help="also time a quantized ResNet-18")
    ap.add_argument("--size", type=int, default=112, help="the network's input size")
    ap.add_argument("--before", help="PYTHONPATH of another NeoMeg build for the network")
    ap.add_argument("--torch-python", default=TORCH_PYTHON)
    ap.add_argument("--skip-torch", action="store_true")
    a = ap.parse_args()
    print(describe())

    here = os.environ.get("PYTHONPATH", "")
    threads = {"OMP_NUM_THREADS": str(a.threads)}
    cases = json.dumps(CONVS)
    print(f"load average before: {' '.join(load())}")
    times = {}
    for _ in range(a.rounds):
        for fw, py in (("neomeg", sys.executable), ("torch", a.torch_python)):
            if fw == "torch" and (a.skip_torch or not os.path.exists(py)):
                continue
            env = dict(threads, PYTHONPATH=here)
            res = run(py, env, CONV_WORKER, [fw, cases, str(a.repeat), str(a.threads)])
            for k, v in res.items():
                times.setdefault(k, []).extend(v)
    print(f"\n{a.threads} threads, ms per call: best / median")
    cols = ["ours int8", "ours f32", "torch x86", "torch onednn"]
    print(f"{'case':26}" + "".join(f"{c:>17}" for c in cols) + f"{'f32/int8':>10}{'x86/ours':>10}")
    for name, *_ in CONVS:
        row, best = f"{name:26}", {}
        for c in cols:
            ts = times.get(f"{name}|{c}")
            if ts:
                b, m = summary(ts)
                best[c] = b
                row += f"{b:9.2f} /{m:6.2f}"
            else:
                row += f"{'-':>17}"
        print(row + ratio(best, "ours f32", "ours int8") + ratio(best, "torch x86", "ours int8"))

    if a.network:
        print(f"\nResNet-18 on 1x3x{a.size}x{a.size}, eager, ms per forward: best / median")
        builds = [("after", here)] + ([("before", a.before)] if a.before else [])
        for mode in ("f32", "int8"):
            for label, path in builds:
                # The naive kernels take seconds per forward: fewer calls there.
                repeat = a.repeat if label == "after" else 2
                ts = []
                for _ in range(a.rounds if label == "after" else 1):
                    env = dict(threads, PYTHONPATH=path)
                    ts += run(sys.executable, env, NET_WORKER, [mode, str(a.size), str(repeat)])
                b, m = summary(ts)
                print(f"  {mode:5} {label:7} {b:9.2f} / {m:9.2f}")
    print(f"\nload average after: {' '.join(load())}")


if __name__ == "__main__":
    main()
