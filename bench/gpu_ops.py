"""The CUDA backend's headline cases on one GPU, NeoMeg against PyTorch eager on the same GPU.

Cases: a 3x3 convolution 64->64 on 32x64x56x56 (forward; backward data and filter), a 4096^3
matrix product in float32, TF32 and bfloat16, a ResNet-18 training step (batch 64, 3x224x224,
SGD with momentum), a LeNet training step (batch 256, 1x28x28), and the bandwidth of a
device-to-device copy, an elementwise add and a sum over 64M float32 (GB/s read plus written).
Each framework runs every case in one process of its own; a case times `--iters` calls after a warm-up and waits for the
GPU before reading the clock. PyTorch comes from this interpreter when it imports torch, else
from bench/torch_reference.py's environment; without it only NeoMeg's column is printed.

NeoMeg's convolutions run on cuDNN's graph API by default; the convolution and ResNet-18 cases
run a second time with ``NEOMEG_CUDNN_LEGACY=1`` (cuDNN's legacy API alone), and a second table
sets both paths against PyTorch (``--no-legacy`` skips that run).

A case named ``*_bf16`` runs in bfloat16 (tensor cores in both frameworks). A case named
``*_tf32`` runs with TF32 on, every other float32 case with it off, in both frameworks: ``megengine.config.allow_tf32`` (matrix products and cuDNN convolutions) against
PyTorch's ``torch.backends.cuda.matmul.allow_tf32`` and ``torch.backends.cudnn.allow_tf32``.
PyTorch's own default lets cuDNN convolutions use TF32, so a float32 convolution compared with
that default would set our float32 against its TF32.

    PYTHONPATH=python python3 bench/gpu_ops.py [--iters 20] [--cases conv_fwd matmul_fp32]
"""

import argparse
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from machine import describe
from torch_reference import torch_python

CASES = [
    "conv_fwd",
    "conv_bwd",
    "conv_fwd_tf32",
    "conv_bwd_tf32",
    "conv_fwd_bf16",
    "conv_bwd_bf16",
    "matmul_fp32",
    "matmul_tf32",
    "matmul_bf16",
    "resnet18_step",
    "resnet18_step_tf32",
    "lenet_step",
    "copy_bw",
    "add_bw",
    "sum_bw",
]
# The bandwidth cases' tensors: 64M float32 (256 MiB each), far beyond any GPU's L2.
BW_N = 64 << 20
# What one call of a case does, for the throughput column: FLOPs, or samples for a step.
UNITS = {
    "conv_fwd": ("TFLOP/s", 2 * 32 * 64 * 56 * 56 * 64 * 9),
    "conv_bwd": ("TFLOP/s", 2 * 2 * 32 * 64 * 56 * 56 * 64 * 9),
    "conv_fwd_tf32": ("TFLOP/s", 2 * 32 * 64 * 56 * 56 * 64 * 9),
    "conv_bwd_tf32": ("TFLOP/s", 2 * 2 * 32 * 64 * 56 * 56 * 64 * 9),
    "conv_fwd_bf16": ("TFLOP/s", 2 * 32 * 64 * 56 * 56 * 64 * 9),
    "conv_bwd_bf16": ("TFLOP/s", 2 * 2 * 32 * 64 * 56 * 56 * 64 * 9),
    "matmul_fp32": ("TFLOP/s", 2 * 4096**3),
    "matmul_tf32": ("TFLOP/s", 2 * 4096**3),
    "matmul_bf16": ("TFLOP/s", 2 * 4096**3),
    "resnet18_step": ("samples/s", 64),
    "resnet18_step_tf32": ("samples/s", 64),
    "lenet_step": ("samples/s", 256),
    # Bytes read and written: a device-to-device copy, c = a + b, a full sum.
    "copy_bw": ("GB/s", 2 * 4 * BW_N),
    "add_bw": ("GB/s", 3 * 4 * BW_N),
    "sum_bw": ("GB/s", 4 * BW_N),
}

# Runs the cases given in argv[3:] with framework argv[1] and argv[2] iterations; prints one JSON
# line per case: {"case", "ms"} or {"case", "error"}. The models are written once for both.
WORKER = r"""
import json, os, sys, time, traceback
import numpy as np

# Both frameworks on their heuristics' choice of convolution algorithm, or both on the measured
# one (--benchmark-kernel: MegEngine's fastrun, PyTorch's cudnn.benchmark).
measured = os.environ.get("GPU_OPS_MEASURED") == "1"

fw, iters, cases = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
rng = np.random.default_rng(0)

if fw == "neomeg":
    import megengine as mge

    mge.config.benchmark_kernel = measured
    import megengine.functional as F
    import megengine.module as nn
    from megengine.autodiff import GradManager
    from megengine.optimizer import SGD

    mge.set_default_device("gpu0")
    T = lambda a: mge.Tensor(a, device="gpu0")
    sync = mge._full_sync
    Module, relu = nn.Module, F.relu
    flatten = lambda t: F.flatten(t, 1)
    maxpool, avgpool = F.max_pool2d, lambda t: F.mean(t, axis=(2, 3))
    conv = lambda x, w: F.conv2d(x, w, padding=1)

    def cast(t, dtype):
        return t.astype(dtype)

    copy, total = F.copy, F.sum

    def set_tf32(on):
        mge.config.allow_tf32 = on

    def grads(f, inputs):
        gm = GradManager().attach(inputs)
        with gm:
            y = f()
            gm.backward(y, F.ones_like(y))
        return [t.grad for t in inputs]

    def trainer(model, x, y):
        gm = GradManager().attach(model.parameters())
        opt = SGD(model.parameters(), lr=0.01, momentum=0.9)

        def step():
            with gm:
                loss = F.nn.cross_entropy(model(x), y)
                gm.backward(loss)
            opt.step().clear_grad()

        return step
else:
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    dev = torch.device("cuda:0")
    T = lambda a: torch.tensor(a, device=dev)
    sync = torch.cuda.synchronize
    Module, relu = nn.Module, F.relu
    flatten = lambda t: torch.flatten(t, 1)
    maxpool, avgpool = F.max_pool2d, lambda t: t.mean(dim=(2, 3))
    conv = lambda x, w: F.conv2d(x, w, padding=1)
    torch.backends.cudnn.benchmark = measured

    def cast(t, dtype):
        return t.to(getattr(torch, dtype))

    copy, total = (lambda t: t.clone()), (lambda t: t.sum())

    def set_tf32(on):
        torch.backends.cuda.matmul.allow_tf32 = on
        torch.backends.cudnn.allow_tf32 = on

    def grads(f, inputs):
        for t in inputs:
            t.requires_grad_(True)
            t.grad = None
        y = f()
        y.backward(torch.ones_like(y))
        return [t.grad for t in inputs]

    def trainer(model, x, y):
        model.to(dev)
        opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
        y = y.long()

        def step():
            opt.zero_grad()
            F.cross_entropy(model(x), y).backward()
            opt.step()

        return step


class LeNet(Module):
    def __init__(self):
        super().__init__()
        self.conv1, self.conv2 = nn.Conv2d(1, 6, 5), nn.Conv2d(6, 16, 5)
        self.fc1, self.fc2, self.fc3 = nn.Linear(256, 120), nn.Linear(120, 84), nn.Linear(84, 10)

    def forward(self, x):
        x = maxpool(relu(self.conv1(x)), 2)
        x = maxpool(relu(self.conv2(x)), 2)
        return self.fc3(relu(self.fc2(relu(self.fc1(flatten(x))))))


class Block(Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.down = None
        if stride != 1 or cin != cout:
            self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                      nn.BatchNorm2d(cout))

    def forward(self, x):
        y = self.bn2(self.conv2(relu(self.bn1(self.conv1(x)))))
        return relu(y + (x if self.down is None else self.down(x)))


class ResNet18(Module):  # torchvision's layout: 7x7 stem, max pool, four stages, 1000 classes
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, 7, 2, 3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        cfg = [(64, 64, 1), (64, 64, 1), (64, 128, 2), (128, 128, 1),
               (128, 256, 2), (256, 256, 1), (256, 512, 2), (512, 512, 1)]
        self.blocks = nn.Sequential(*[Block(*c) for c in cfg])
        self.fc = nn.Linear(512, 1000)

    def forward(self, x):
        x = maxpool(relu(self.bn1(self.conv1(x))), 3, 2, 1)
        return self.fc(avgpool(self.blocks(x)))


def make(case):
    if case.endswith("_bw"):
        a = T(rng.random(BW_N, dtype=np.float32))
        b = T(rng.random(BW_N, dtype=np.float32))
        return {"copy_bw": lambda: copy(a), "add_bw": lambda: a + b, "sum_bw": lambda: total(a)}[
            case
        ]
    set_tf32(case.endswith("_tf32"))
    bf16 = case.endswith("_bf16")
    case = case.removesuffix("_tf32").removesuffix("_bf16")
    if case.startswith("conv"):
        x = T(rng.normal(size=(32, 64, 56, 56)).astype(np.float32))
        w = T((rng.normal(size=(64, 64, 3, 3)) * 0.05).astype(np.float32))
        if bf16:
            x, w = cast(x, "bfloat16"), cast(w, "bfloat16")
        if case == "conv_fwd":
            return lambda: conv(x, w)
        return lambda: grads(lambda: conv(x, w), [x, w])
    if case.startswith("matmul"):
        a = T(rng.normal(size=(4096, 4096)).astype(np.float32))
        b = T(rng.normal(size=(4096, 4096)).astype(np.float32))
        if case == "matmul_bf16":
            a, b = cast(a, "bfloat16"), cast(b, "bfloat16")
        mm = (lambda: F.matmul(a, b)) if fw == "neomeg" else (lambda: a @ b)
        return mm
    if case == "resnet18_step":
        x = T(rng.normal(size=(64, 3, 224, 224)).astype(np.float32))
        y = T(rng.integers(0, 1000, 64).astype(np.int32))
        return trainer(ResNet18(), x, y)
    if case == "lenet_step":
        x = T(rng.normal(size=(256, 1, 28, 28)).astype(np.float32))
        y = T(rng.integers(0, 10, 256).astype(np.int32))
        return trainer(LeNet(), x, y)
    raise ValueError(case)


for case in cases:
    try:
        f = make(case)
        for _ in range(3):
            f()
        sync()
        t0 = time.perf_counter()
        for _ in range(iters):
            f()
        sync()
        ms = (time.perf_counter() - t0) / iters * 1e3
        print(json.dumps({"case": case, "ms": ms}), flush=True)
    except Exception as e:
        msg = (str(e).strip().splitlines() or [type(e).__name__])[0][:150]
        print(json.dumps({"case": case, "error": f"{type(e).__name__}: {msg}"}), flush=True)
"""


def torch_interpreter():
    """This interpreter when it imports torch with CUDA, else the reference environment's."""
    probe = "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 3)"
    r = subprocess.run([sys.executable, "-c", probe], check=False, capture_output=True)
    if r.returncode == 0:
        return sys.executable, None
    python, _ = torch_python()
    if python is None:
        return None, "torch is not importable (pip install torch)"
    r = subprocess.run([python, "-c", probe], check=False, capture_output=True)
    return (python, None) if r.returncode == 0 else (None, f"{python}: torch without CUDA")


def run(python, fw, iters, cases, timeout, env=None):
    try:
        proc = subprocess.run(
            [python, "-c", f"BW_N = {BW_N}\n{WORKER}", fw, str(iters), *cases],
            check=False,
            capture_output=True,
            text=True,
            timeout=timeout,
            env={**os.environ, **(env or {})},
        )
        out = proc.stdout
        tail = (proc.stderr.strip().splitlines() or ["exited with " + str(proc.returncode)])[-1]
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        tail = f"timed out after {timeout} s"
    results = {}
    for line in out.splitlines():
        if line.startswith("{"):
            r = json.loads(line)
            results[r["case"]] = r
    for case in cases:
        results.setdefault(case, {"case": case, "error": tail})
    return results


def ms(r):
    return f"{r['ms']:.2f}" if "ms" in r else "-"


def speed(ours, theirs):
    return f"{theirs['ms'] / ours['ms']:.2f}" if "ms" in ours and "ms" in theirs else "-"


def print_paths(cases, graph, legacy, theirs):
    """NeoMeg's two cuDNN paths side by side, each against PyTorch."""
    print("\ncuDNN paths: graph API (default) and legacy API (NEOMEG_CUDNN_LEGACY=1)")
    print(
        f"{'case':<20}{'graph ms':>10}{'legacy ms':>11}{'PyTorch ms':>12}{'graph speed':>13}"
        f"{'legacy speed':>14}"
    )
    for case in cases:
        g, lg, t = graph[case], legacy[case], theirs.get(case, {})
        print(f"{case:<20}{ms(g):>10}{ms(lg):>11}{ms(t):>12}{speed(g, t):>13}{speed(lg, t):>14}")
        if "error" in lg:
            print(f"    legacy: {lg['error']}")


def rate(case, r):
    unit, work = UNITS[case]
    if "ms" not in r:
        return "-"
    per_s = work / (r["ms"] / 1e3)
    if unit == "TFLOP/s":
        return f"{per_s / 1e12:.1f}"
    return f"{per_s / 1e9:.0f}" if unit == "GB/s" else f"{per_s:.0f}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--cases", nargs="+", default=CASES, choices=CASES)
    ap.add_argument("--timeout", type=int, default=150, help="seconds per framework")
    ap.add_argument(
        "--no-legacy",
        action="store_true",
        help="skip the second NeoMeg run of the convolution cases on cuDNN's legacy API",
    )
    ap.add_argument(
        "--benchmark-kernel",
        action="store_true",
        help="both frameworks time the convolution algorithms and keep the fastest "
        "(megengine.config.benchmark_kernel, torch.backends.cudnn.benchmark)",
    )
    args = ap.parse_args()
    print(describe())
    os.environ["GPU_OPS_MEASURED"] = "1" if args.benchmark_kernel else "0"  # the workers read it

    ours = run(sys.executable, "neomeg", args.iters, args.cases, args.timeout)
    python, why = torch_interpreter()
    theirs = run(python, "torch", args.iters, args.cases, args.timeout) if python else {}
    print(
        f"{'case':<15}{'unit':>10}{'NeoMeg ms':>11}{'rate':>9}{'PyTorch ms':>12}{'rate':>9}"
        f"{'speed':>8}"
    )
    for case in args.cases:
        o, t = ours[case], theirs.get(case, {})
        print(
            f"{case:<15}{UNITS[case][0]:>10}{ms(o):>11}{rate(case, o):>9}{ms(t):>12}"
            f"{rate(case, t):>9}{speed(o, t):>8}"
        )
        for who, r in (("NeoMeg", o), ("PyTorch", t)):
            if "error" in r:
                print(f"    {who}: {r['error']}")
    both = [c for c in args.cases if c.startswith(("conv", "resnet18"))]
    # What is printed stays if a time limit stops the legacy run.
    sys.stdout.flush()
    if both and not args.no_legacy:
        legacy = run(
            sys.executable, "neomeg", args.iters, both, args.timeout, {"NEOMEG_CUDNN_LEGACY": "1"}
        )
        print_paths(both, ours, legacy, theirs)
    if python is None:
        print(f"PyTorch: {why}")
    print("speed = PyTorch ms / NeoMeg ms (above 1: NeoMeg is faster)")
    # The bandwidth target: elementwise and reduction at >= 80% of a device copy's.
    copy_ms = ours.get("copy_bw", {}).get("ms")
    for case in ("add_bw", "sum_bw"):
        case_ms = ours.get(case, {}).get("ms")
        if copy_ms and case_ms:
            frac = (UNITS[case][1] / case_ms) / (UNITS["copy_bw"][1] / copy_ms)
            print(f"NeoMeg {case[:-3]} bandwidth / its device copy's: {frac:.2f} (target >= 0.8)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
