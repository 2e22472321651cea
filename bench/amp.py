"""Mixed-precision training steps: LeNet (1x28x28) and a CIFAR-style ResNet-18 (3x32x32), one
step = forward, backward and SGD with momentum, in four configurations in the same command:

* NeoMeg float32, and NeoMeg under ``megengine.amp.autocast(low_prec_dtype="bfloat16")``;
* PyTorch 2.x float32, and PyTorch under ``torch.autocast("cpu", dtype=torch.bfloat16)``.

Each configuration runs in a process of its own (PyTorch from PyPI, found by
torch_reference.py), with ``ONEDNN_VERBOSE=1`` so that the oneDNN implementations that ran
(AMX, AVX-512 BF16, ...) are counted and printed per primitive kind; the time is the best of
``--steps`` steps after one warm-up step (verbose printing is off while timing), in wall time and
in process CPU time (per CPU second: with ``--threads 1`` the figure that descheduling on a
shared machine does not inflate).

    PYTHONPATH=python python3 bench/amp.py [--models lenet resnet18] [--batch 32] [--steps 5]
        [--format nhwc] [--trace]

``--format nhwc`` runs every configuration channels-last (as bench/train_step.py's); ``--trace``
times NeoMeg's step under ``jit.trace(symbolic=True)`` (after its recording run; PyTorch's stays
eager).
"""

import argparse
import collections
import json
import os
import subprocess
import sys

from bench_models import MODELS
from machine import describe
from torch_reference import torch_python

# The models and the timed loop, written once for both frameworks (as bench/train_step.py).
WORKER = (
    r"""
import json, os, sys, time
import numpy as np

fw, model_name, steps, batch, amp_on, fmt, traced = (
    sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5] == "bf16",
    sys.argv[7], sys.argv[8] == "trace")
shape = (1, 28, 28) if model_name == "lenet" else (3, 32, 32)
rng = np.random.default_rng(0)
x_np = rng.normal(size=(batch,) + shape).astype(np.float32)
y_np = rng.integers(0, 10, batch).astype(np.int32)

if fw == "neomeg":
    import megengine as mge
    import megengine.functional as F
    import megengine.module as nn
    from megengine.amp import autocast
    from megengine.autodiff import GradManager
    from megengine.optimizer import SGD

    Module, relu, flatten, pool = nn.Module, F.relu, lambda t: F.flatten(t, 1), F.max_pool2d
    avgpool = lambda t: F.mean(t, axis=(2, 3))
else:
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    torch.set_num_threads(int(sys.argv[6]))
    Module, relu, flatten, pool = nn.Module, F.relu, lambda t: torch.flatten(t, 1), F.max_pool2d
    avgpool = lambda t: t.mean(dim=(2, 3))


"""
    + MODELS
    + r"""
model = LeNet() if model_name == "lenet" else ResNet18()
if fw == "neomeg":
    x, y = mge.Tensor(x_np), mge.Tensor(y_np)
    if fmt == "nhwc":
        from megengine import amp

        amp.convert_module_format(model)
        x = amp.convert_tensor_format(x)
    gm = GradManager().attach(model.parameters())
    opt = SGD(model.parameters(), lr=0.01, momentum=0.9)
    region = autocast(enabled=amp_on, low_prec_dtype="bfloat16")

    def step():
        with region:
            with gm:
                loss = F.nn.cross_entropy(model(x), y)
                gm.backward(loss)
        opt.step().clear_grad()

    if traced:
        from megengine.jit import trace

        step = trace(step, symbolic=True)
        step()  # the recording run, untimed like the warm-up below
else:
    x, y = torch.tensor(x_np), torch.tensor(y_np).long()
    if fmt == "nhwc":
        model = model.to(memory_format=torch.channels_last)
        x = x.to(memory_format=torch.channels_last)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)

    def step():
        opt.zero_grad()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=amp_on):
            loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()

step()  # warm-up, printed by ONEDNN_VERBOSE: the implementations that ran
sys.stdout.flush()
try:
    import ctypes
    ctypes.CDLL("libdnnl.so.2").dnnl_set_verbose(0)
except OSError:
    pass
if fw == "torch":
    torch.backends.mkldnn.verbose(0)
times, cpu = [], []
for _ in range(steps):
    t0, c0 = time.perf_counter(), time.process_time()
    step()
    times.append(time.perf_counter() - t0)
    cpu.append(time.process_time() - c0)
print("RESULT " + json.dumps({"samples_per_s": batch / min(times),
                              "samples_per_cpu_s": batch / min(cpu)}))
"""
)


def implementations(stdout):
    """{primitive kind: Counter of implementation names} from oneDNN's verbose lines."""
    seen = collections.defaultdict(collections.Counter)
    for line in stdout.splitlines():
        parts = line.split(",")
        # oneDNN 2.x: onednn_verbose,exec,cpu,KIND,IMPL,...; 3.x adds fields before "exec"
        if parts[0] != "onednn_verbose" or "exec" not in parts[:4]:
            continue
        i = parts.index("exec")
        if len(parts) > i + 3:
            seen[parts[i + 2]][parts[i + 3]] += 1
    return seen


def run(python, fw, model, steps, batch, mode, threads, fmt, trace):
    env = dict(os.environ, ONEDNN_VERBOSE="1", DNNL_VERBOSE="1", OMP_NUM_THREADS=threads)
    proc = subprocess.run(
        [python, "-c", WORKER, fw, model, str(steps), str(batch), mode, threads, fmt, trace],
        check=False,
        capture_output=True,
        text=True,
        env=env,
    )
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        return None, last, {}
    result = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")][-1]
    return json.loads(result[len("RESULT ") :]), None, implementations(proc.stdout)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", nargs="+", default=["lenet", "resnet18"])
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1, help="per framework")
    ap.add_argument("--no-torch", action="store_true", help="skip the PyTorch runs")
    ap.add_argument("--format", choices=["default", "nhwc"], default="default")
    ap.add_argument(
        "--trace",
        action="store_true",
        help="NeoMeg's step under jit.trace(symbolic=True) (PyTorch's stays eager)",
    )
    args = ap.parse_args()
    print(describe())
    torch_py, twhy = (None, "--no-torch") if args.no_torch else torch_python()
    configs = [("NeoMeg", sys.executable, "neomeg", m) for m in ("f32", "bf16")]
    if torch_py is not None:
        configs += [("PyTorch", torch_py, "torch", m) for m in ("f32", "bf16")]
    else:
        print(f"PyTorch: {twhy}")
    for model in args.models:
        speeds = {}
        print(
            f"\n{model}, batch {args.batch}, {args.threads} threads, {args.format}"
            f"{', NeoMeg traced' if args.trace else ''}: samples/s "
            f"(best of {args.steps} steps)"
        )
        for label, python, fw, mode in configs:
            res, why, impls = run(
                python,
                fw,
                model,
                args.steps,
                args.batch,
                mode,
                str(args.threads),
                args.format,
                "trace" if args.trace else "eager",
            )
            if res is None:
                print(f"  {label:<8}{mode:<5} failed: {why}")
                continue
            speeds[(fw, mode)] = res["samples_per_s"]
            used = "; ".join(
                f"{kind}: " + ", ".join(f"{impl} x{n}" for impl, n in c.most_common())
                for kind, c in sorted(impls.items())
            )
            print(
                f"  {label:<8}{mode:<5}{res['samples_per_s']:>10.1f}"
                f"{res['samples_per_cpu_s']:>10.1f} per CPU s   oneDNN: {used or 'none'}"
            )
        ours, base = speeds.get(("neomeg", "bf16")), speeds.get(("neomeg", "f32"))
        theirs = speeds.get(("torch", "bf16"))
        if ours and base:
            print(f"  NeoMeg bf16 / NeoMeg f32   = {ours / base:.3f}")
        if ours and theirs:
            print(f"  NeoMeg bf16 / PyTorch bf16 = {ours / theirs:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
