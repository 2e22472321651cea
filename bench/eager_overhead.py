"""Per-op eager overhead of NeoMeg against PyTorch, measured in the same command.

Runs each case with NeoMeg in this interpreter and with PyTorch 2.x (from PyPI, found by
``torch_reference.py``; ``bench/setup_reference.sh`` installs it) in a second process, and prints microseconds per call and the ratio
NeoMeg/PyTorch (below 1.0: NeoMeg is faster).

    PYTHONPATH=python python3 bench/eager_overhead.py [--repeat 5] [--number 2000]

The first six cases are the issue's (1-element add and relu, 8x8 matmul, indexing, an MLP
step); the rest are the other calls a training script makes, on 4x4 tensors.
"""

import argparse
import json
import os
import subprocess
import sys

import numpy as np
from machine import describe
from torch_reference import torch_python

# PyTorch runs on one thread below; NeoMeg's oneDNN kernels get the same one (OpenMP reads this
# when megengine is first imported, inside make_cases). Set OMP_NUM_THREADS to measure otherwise.
os.environ.setdefault("OMP_NUM_THREADS", "1")


# The same cases for both frameworks; `fw` is "neomeg" or "torch".
CASES_SOURCE = r"""
import numpy as np

def make_cases(fw):
    rng = np.random.default_rng(0)
    one_a = np.array([1.5], np.float32)
    one_b = np.array([2.5], np.float32)
    m8 = rng.normal(size=(8, 8)).astype(np.float32)
    xs = rng.normal(size=(32, 64)).astype(np.float32)
    w1 = (rng.normal(size=(64, 128)) * 0.1).astype(np.float32)
    w2 = (rng.normal(size=(128, 10)) * 0.1).astype(np.float32)
    s4 = rng.normal(size=(4, 4)).astype(np.float32)
    t4 = rng.normal(size=(4, 4)).astype(np.float32)
    u1 = rng.normal(size=(1, 4, 1)).astype(np.float32)
    lg = rng.normal(size=(8, 10)).astype(np.float32)
    lb = rng.integers(0, 10, size=8).astype(np.int32)
    img = rng.normal(size=(2, 4, 3, 3)).astype(np.float32)
    q16 = rng.normal(size=(8, 16)).astype(np.float32)
    g46 = rng.random((4, 6)).astype(np.float32)
    lab4 = np.array([1, 0, 3, 2], np.int32)
    idx42 = np.array([[0, 1], [2, 3], [1, 1], [0, 0]], np.int32)
    if fw == "neomeg":
        import megengine as mge
        import megengine.functional as F
        import megengine.module as M
        from megengine.autodiff import GradManager

        a, b, m = mge.Tensor(one_a), mge.Tensor(one_b), mge.Tensor(m8)
        u = mge.Tensor(u1)
        x, p1, p2 = mge.Tensor(xs), mge.Parameter(w1), mge.Parameter(w2)
        gm = GradManager().attach([p1, p2])

        def mlp_step():
            with gm:
                loss = (F.matmul(F.relu(F.matmul(x, p1)), p2) ** 2).mean()
                gm.backward(loss)

        s, t = mge.Tensor(s4), mge.Tensor(t4)
        lin = M.Linear(4, 4)
        logits, labels = mge.Tensor(lg), mge.Tensor(lb)
        im = mge.Tensor(img)
        bn, bn_plain = M.BatchNorm2d(4), M.BatchNorm2d(4, affine=False)
        bn.eval()
        bn_plain.eval()
        qlin = qlinear_neomeg(mge, M, q16)
        fx = mge.Tensor(q16)
        qx = qlin[0](fx)
        qy = qlin[1](qx)
        from megengine.core.tensor import dtype as D
        g, gset, lab, idx = mge.Tensor(g46), mge.Tensor(g46), mge.Tensor(lab4), mge.Tensor(idx42)
        src, pg = g[:, :2], F.sigmoid(g)
        return {
            "add_1elem": lambda: a + b,
            "relu_1elem": lambda: F.relu(a),
            "matmul_8x8": lambda: F.matmul(m, m),
            "index_b[0]": lambda: m[0],
            "slice_b[1:3]": lambda: m[1:3],
            "mlp_fwd_bwd": mlp_step,
            # What a training script calls besides the issue's three: 4x4 tensors, so the
            # figure is the per-call cost.
            "concat": lambda: F.concat([s, t]),
            "stack": lambda: F.stack([s, t]),
            "flatten": lambda: F.flatten(s),
            "reshape": lambda: s.reshape(16),
            "transpose": lambda: s.transpose(1, 0),
            "expand_dims": lambda: F.expand_dims(s, 0),
            "squeeze": lambda: F.squeeze(u),
            "broadcast_to": lambda: F.broadcast_to(s, (2, 4, 4)),
            "where": lambda: F.where(s > 0, s, t),
            "clip": lambda: F.clip(s, 0, 1),
            "astype_f16": lambda: s.astype("float16"),
            "sum_axis": lambda: F.sum(s, axis=1),
            "mean_all": lambda: F.mean(s),
            "max_axis": lambda: F.max(s, axis=0),
            "argmax_axis": lambda: F.argmax(s, axis=0),
            "softmax": lambda: F.softmax(s, axis=1),
            "linear": lambda: F.linear(s, t),
            "module_linear": lambda: lin(s),
            "cross_entropy": lambda: F.nn.cross_entropy(logits, labels),
            "zeros": lambda: F.zeros((4, 4)),
            "full": lambda: F.full((4, 4), 1.5),
            # an eager inference loop's per-layer calls: eval BatchNorm (2, 4, 3, 3), a quantized
            # Linear (8x16 quint8/qint8 input, 16 outputs)
            "bn_eval": lambda: bn(im),
            "bn_eval_noaff": lambda: bn_plain(im),
            "qlinear": lambda: qlin[1](qx),
            # the rest of a quantized network's calls: its ends, and reading a quantized
            # tensor's dtype, scale and device (PyTorch: q_scale() of a quint8 tensor)
            "quant_stub": lambda: qlin[0](fx),
            "dequant_stub": lambda: qlin[2](qy),
            "q.dtype": lambda: qx.dtype,
            "q_scale": lambda: D.get_scale(qx.dtype),
            "x.device": lambda: s.device,
            # indexing, assignment and the functional calls around them (4x6 float32, int32
            # labels); `scatter` is in place here, PyTorch's out of place
            "setitem": lambda: gset.__setitem__(0, 1.0),
            "getitem_idx": lambda: g[lab],
            "getitem_mask": lambda: g[g > 0.5],
            "where_scalar": lambda: F.where(g > 0.5, g, 0.0),
            "logsumexp": lambda: F.logsumexp(g, 1),
            "one_hot": lambda: F.one_hot(lab, 5),
            "scatter": lambda: F.scatter(g, 1, idx, src),
            "bce": lambda: F.nn.binary_cross_entropy(pg, g, with_logits=False),
            "bce_logits": lambda: F.nn.binary_cross_entropy(g, g),
            # statistics of the 4x6 tensor (population variance, as F.var computes it)
            "std_axis": lambda: F.std(g, 1),
            "var_all": lambda: F.var(g),
        }
    import torch

    torch.set_num_threads(1)
    a, b, m = torch.tensor(one_a), torch.tensor(one_b), torch.tensor(m8)
    x = torch.tensor(xs)
    p1 = torch.tensor(w1, requires_grad=True)
    p2 = torch.tensor(w2, requires_grad=True)

    def mlp_step():
        loss = (torch.relu(x @ p1) @ p2).pow(2).mean()
        loss.backward()

    s, t = torch.tensor(s4), torch.tensor(t4)
    tu = torch.tensor(u1)
    lin = torch.nn.Linear(4, 4)
    logits, labels = torch.tensor(lg), torch.tensor(lb).long()
    tf = torch.nn.functional
    im = torch.tensor(img)
    bn, bn_plain = torch.nn.BatchNorm2d(4).eval(), torch.nn.BatchNorm2d(4, affine=False).eval()
    # no autograd record, as under the torch.no_grad() of an inference loop (without the
    # context manager's own cost per call)
    bn.requires_grad_(False)
    qlin, qx = qlinear_torch(torch, q16)
    fx, qy = torch.tensor(q16), qlin(qx)
    qstub = torch.ao.nn.quantized.Quantize(0.05, 0, torch.quint8)
    dqstub = torch.ao.nn.quantized.DeQuantize()
    g, gset, idx = torch.tensor(g46), torch.tensor(g46), torch.tensor(idx42).long()
    lab = torch.tensor(lab4).long()
    src, pg = g[:, :2], torch.sigmoid(g)
    return {
        "add_1elem": lambda: a + b,
        "relu_1elem": lambda: torch.relu(a),
        "matmul_8x8": lambda: m @ m,
        "index_b[0]": lambda: m[0],
        "slice_b[1:3]": lambda: m[1:3],
        "mlp_fwd_bwd": mlp_step,
        "concat": lambda: torch.cat([s, t]),
        "stack": lambda: torch.stack([s, t]),
        "flatten": lambda: torch.flatten(s),
        "reshape": lambda: s.reshape(16),
        "transpose": lambda: s.permute(1, 0),
        "expand_dims": lambda: s.unsqueeze(0),
        "squeeze": lambda: tu.squeeze(),
        "broadcast_to": lambda: torch.broadcast_to(s, (2, 4, 4)),
        "where": lambda: torch.where(s > 0, s, t),
        "clip": lambda: s.clamp(0, 1),
        "astype_f16": lambda: s.half(),
        "sum_axis": lambda: s.sum(1),
        "mean_all": lambda: s.mean(),
        "max_axis": lambda: s.max(0).values,
        "argmax_axis": lambda: s.argmax(0),
        "softmax": lambda: torch.softmax(s, 1),
        "linear": lambda: tf.linear(s, t),
        "module_linear": lambda: lin(s),
        "cross_entropy": lambda: tf.cross_entropy(logits, labels),
        "zeros": lambda: torch.zeros((4, 4)),
        "full": lambda: torch.full((4, 4), 1.5),
        "bn_eval": lambda: bn(im),
        "bn_eval_noaff": lambda: bn_plain(im),
        "qlinear": lambda: qlin(qx),
        "quant_stub": lambda: qstub(fx),
        "dequant_stub": lambda: dqstub(qy),
        "q.dtype": lambda: qx.dtype,
        "q_scale": lambda: qx.q_scale(),
        "x.device": lambda: s.device,
        "setitem": lambda: gset.__setitem__(0, 1.0),
        "getitem_idx": lambda: g[lab],
        "getitem_mask": lambda: g[g > 0.5],
        "where_scalar": lambda: torch.where(g > 0.5, g, 0.0),
        "logsumexp": lambda: torch.logsumexp(g, 1),
        "one_hot": lambda: tf.one_hot(lab, 5),
        "scatter": lambda: g.scatter(1, idx, src),
        "bce": lambda: tf.binary_cross_entropy(pg, g),
        "bce_logits": lambda: tf.binary_cross_entropy_with_logits(g, g),
        "std_axis": lambda: torch.std(g, 1, correction=0),
        "var_all": lambda: torch.var(g, correction=0),
    }


def qlinear_neomeg(mge, M, data):
    from megengine.quantization import quantize, quantize_qat

    net = quantize_qat(M.Sequential(M.QuantStub(), M.Linear(16, 16), M.DequantStub()))
    net(mge.Tensor(data))  # calibrates the observers
    net.eval()
    q = quantize(net)
    q.eval()
    return q


def qlinear_torch(torch, data):
    import warnings

    warnings.filterwarnings("ignore")  # the quantized tensor creators are deprecated
    lin = torch.ao.nn.quantized.Linear(16, 16)
    return lin, torch.quantize_per_tensor(torch.tensor(data), 0.05, 0, torch.quint8)
"""

TIMER_SOURCE = r"""
import json, sys, time
def run(cases, repeat, number):
    out = {}
    for name, fn in cases.items():
        n = number if name != "mlp_fwd_bwd" else max(number // 50, 5)
        fn()
        best = float("inf")
        for _ in range(repeat):
            t0 = time.perf_counter()
            for _ in range(n):
                fn()
            best = min(best, (time.perf_counter() - t0) / n)
        out[name] = best * 1e6
    return out
"""


def measure(fw, repeat, number):
    scope = {}
    exec(CASES_SOURCE + TIMER_SOURCE, scope)  # noqa: S102 - our own benchmark source
    return scope["run"](scope["make_cases"](fw), repeat, number)


def measure_torch(repeat, number):
    python, why = torch_python()
    if python is None:
        return None, why
    code = (
        CASES_SOURCE
        + TIMER_SOURCE
        + f"\nprint(json.dumps(run(make_cases('torch'), {repeat}, {number})))\n"
    )
    proc = subprocess.run([python, "-c", code], check=False, capture_output=True, text=True)
    if proc.returncode != 0:
        last = proc.stderr.strip().splitlines()[-1:] or ["no output"]
        return None, f"PyTorch run failed ({last[0]}); run bench/setup_reference.sh"
    return json.loads(proc.stdout.strip().splitlines()[-1]), None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--number", type=int, default=2000)
    args = ap.parse_args()
    print(describe())
    ours = measure("neomeg", args.repeat, args.number)
    theirs, why = measure_torch(args.repeat, args.number)
    print(f"{'case':<16}{'NeoMeg us':>12}{'PyTorch us':>12}{'ratio':>8}")
    for name, us in ours.items():
        if theirs is None:
            print(f"{name:<16}{us:>12.2f}{'-':>12}{'-':>8}")
        else:
            print(f"{name:<16}{us:>12.2f}{theirs[name]:>12.2f}{us / theirs[name]:>8.2f}")
    if theirs is None:
        print(f"(no PyTorch reference: {why})")
    return 0


if __name__ == "__main__":
    np.random.seed(0)
    sys.exit(main())
