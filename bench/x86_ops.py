"""The x86 backend's hot operators and a LeNet training step, NeoMeg against PyTorch 2.x eager.

One command prints, per case, NeoMeg's and PyTorch's time and the ratio of their throughputs
(above 1.0: NeoMeg is faster): a LeNet training step (batch 64, 1x28x28, samples/s; the model
and loop of bench/train_step.py), elementwise add/relu/exp on 16M float32, max and average
pooling, batch normalisation forward and backward, a stable sort and a top-10 of 512 rows of
4096, softmax and log-softmax forward and backward (64x1000 logits along the last axis,
8x12x128x128 attention scores, 8x64x28x28 along the channels), adaptive average pooling of 56x56
to 7x7 (even windows) and to 5x5 (uneven ones), the BERT-mini step's operators forward and
backward (bench/transformer_train.py: GELU on 16x128x1024, also forward alone; erf, erfc, tan and
pow (base |x| + 0.5, exponent x) of the same 2M floats, and log, log1p (of |x| + 0.5), expm1,
atanh (of tanh x), softplus and logsigmoid; dropout of the 16x4x128x128 attention
probabilities, LayerNorm over 256, scaled-dot-product attention of 16x4 heads of 128x64, the
embedding of 16x128 tokens in a 30522x256 table), Resize (F.interpolate) of 32x64x56x56 to 112x112, bilinear and nearest, and bilinear's backward,
and GroupNorm with weight and bias, forward alone and forward and backward (the gradients of x,
weight and bias; fresh leaves per call and dst's gradient made once, as batch normalisation's), at the functional audit's 32x64x28x28 in 32 groups (gn_audit_*), 32x64x56x56 in
32 (gn_56_*), 32x256x14x14 in 32 (gn_14_*) and 8x32x64x64 in 8 (gn_64_*),
each with the peak resident memory of its worker process (MiB; the inputs' and the framework's own share alike). Each framework runs
in a process of its own on the same number of threads (PyTorch's set_num_threads, NeoMeg's
OMP_NUM_THREADS), one table per thread count: 1 and 2 by default, the issue's figures. PyTorch
comes from the reference virtual environment (PyTorch 2.x from PyPI, MKL and oneDNN 3), or
--torch-python.

On a machine shared with other work, timings swing by several times from run to run: each
worker process runs --rounds times, the two frameworks interleaved, and the best round counts.

    PYTHONPATH=python python3 bench/x86_ops.py [--threads 1 2] [--repeat 10] [--rounds 3]
                                               [--cases lenet add]
"""

import argparse
import json
import os
import subprocess
import sys

from machine import describe

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import train_step  # the LeNet step, shared with bench/train_step.py

TORCH_PYTHON = "/root/.cache/neomeg-references/torch-venv/bin/python"

# One timed case per call: argv is framework, case, repeat, threads; prints seconds per call
# (the best of `repeat`). Both frameworks share the inputs and the case table.
OP_WORKER = r"""
import json, resource, sys, time
import numpy as np

fw, case, repeat, threads = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
rng = np.random.default_rng(0)
big = rng.normal(size=(1 << 24,)).astype(np.float32)
big2 = rng.normal(size=(1 << 24,)).astype(np.float32)
act = rng.normal(size=(32, 64, 56, 56)).astype(np.float32)
lenet_act = rng.normal(size=(64, 6, 24, 24)).astype(np.float32)
rows = rng.normal(size=(512, 4096)).astype(np.float32)
ch = np.ones(64, np.float32)
logits = rng.normal(size=(64, 1000)).astype(np.float32)
scores = rng.normal(size=(8, 12, 128, 128)).astype(np.float32)
chan = rng.normal(size=(8, 64, 28, 28)).astype(np.float32)
# The BERT-mini step's tensors (bench/transformer_train.py): the FFN's inner activation, the
# attention probabilities, queries/keys/values per head, the hidden states, token ids.
ffn = rng.normal(size=(16, 128, 1024)).astype(np.float32)
probs = rng.normal(size=(16, 4, 128, 128)).astype(np.float32)
qkv = rng.normal(size=(3, 16, 4, 128, 64)).astype(np.float32)
hid = rng.normal(size=(16, 128, 256)).astype(np.float32)
ids = rng.integers(0, 30522, (16, 128)).astype(np.int32)
# POW's base for the elementwise math cases (erf, erfc, tan, pow of ffn's 2M N(0, 1) floats).
pow_base = np.abs(ffn) + np.float32(0.5)
# ERFINV's argument: ffn squashed into (-1, 1), denser near 0 as a probit's input would be.
unit = np.tanh(ffn)
table = (rng.normal(size=(30522, 256)) * 0.02).astype(np.float32)
# GroupNorm's inputs: the functional audit's (32, 64, 28, 28) and typical CNN stages, each with
# its group count and a per-channel weight and bias (weight around 1, bias around 0).
gn_shapes = {"gn_audit": ((32, 64, 28, 28), 32), "gn_56": ((32, 64, 56, 56), 32),
             "gn_14": ((32, 256, 14, 14), 32), "gn_64": ((8, 32, 64, 64), 8)}
gn_data = {k: (rng.normal(size=s).astype(np.float32), g,
               rng.uniform(0.5, 1.5, size=s[1]).astype(np.float32),
               rng.uniform(-0.5, 0.5, size=s[1]).astype(np.float32))
           for k, (s, g) in gn_shapes.items()}

if fw == "neomeg":
    import megengine as mge
    import megengine.functional as F
    from megengine.autodiff import GradManager

    T = mge.Tensor
    a, b, x, lx, r, h = T(big), T(big2), T(act), T(lenet_act), T(rows), T(ffn)
    hb, hu = T(pow_base), T(unit)
    w, bias = T(ch.reshape(1, 64, 1, 1)), T(0 * ch.reshape(1, 64, 1, 1))

    def bn_fwd():
        return F.nn.batch_norm(x, T(0 * ch.reshape(1, 64, 1, 1)), T(ch.reshape(1, 64, 1, 1)),
                               w, bias, training=True)

    # As PyTorch's case: a fresh leaf each call (no gradient accumulated into x.grad from the
    # previous call) and dst's gradient made once, outside the timed call.
    bn_dy = T(act)

    def bn_fwd_bwd():
        xg = x.detach()
        gm = GradManager().attach([xg])
        with gm:
            y = F.nn.batch_norm(xg, None, None, w, bias, training=True)
            gm.backward(y, bn_dy)

    def pool_fwd_bwd():
        gm = GradManager().attach([x])
        with gm:
            y = F.max_pool2d(x, 3, 2, 1)
            gm.backward(y, T(np.ones(y.shape, np.float32)))

    def resize(mode):
        return lambda: F.nn.interpolate(x, size=(112, 112), mode=mode, align_corners=False)

    def resize_fwd_bwd():
        gm = GradManager().attach([x])
        with gm:
            y = F.nn.interpolate(x, size=(112, 112), mode="bilinear", align_corners=False)
            gm.backward(y, T(np.ones(y.shape, np.float32)))

    def softmax_fwd_bwd(v, axis, log=False):
        def f():
            xg = T(v)
            gm = GradManager().attach([xg])
            with gm:
                y = F.logsoftmax(xg, axis) if log else F.softmax(xg, axis)
                gm.backward(y, T(v))
        return f

    def grad_case(fn, *vals):
        def f():
            xs = [T(v) for v in vals]
            gm = GradManager().attach(xs)
            with gm:
                y = fn(*xs)
                gm.backward(y, F.ones_like(y))
        return f

    def attention(q, k, v):
        return F.matmul(F.softmax(F.matmul(q, k, transpose_b=True) * 0.125, axis=-1), v)

    # As bn_fwd_bwd: fresh leaves of x, weight and bias each call, dst's gradient made once.
    def gn_fwd_bwd(v, g, gw, gb):
        x, w, b, dy = T(v), T(gw), T(gb), T(v)

        def f():
            xs = [x.detach(), w.detach(), b.detach()]
            gm = GradManager().attach(xs)
            with gm:
                gm.backward(F.nn.group_norm(xs[0], g, True, xs[1], xs[2]), dy)
        return f

    ln_w, ln_b = T(np.ones(256, np.float32)), T(np.zeros(256, np.float32))
    cases = {
        "gelu": lambda: F.nn.gelu(h),
        "erf": lambda: F.erf(h),
        "erfc": lambda: F.erfc(h),
        "tan": lambda: F.tan(h),
        "pow": lambda: F.pow(hb, h),
        "erfinv": lambda: F.erfinv(hu),
        "log": lambda: F.log(hb),
        "log1p": lambda: F.log1p(hb),
        "expm1": lambda: F.expm1(h),
        "atanh": lambda: F.atanh(hu),
        "softplus": lambda: F.softplus(h),
        "logsigmoid": lambda: F.logsigmoid(h),
        "gelu_fwd_bwd": grad_case(F.nn.gelu, ffn),
        "dropout_fwd_bwd": grad_case(lambda t: F.dropout(t, 0.1), probs),
        "layernorm_fwd_bwd": grad_case(lambda t: F.nn.layer_norm(t, 256, True, ln_w, ln_b), hid),
        "attention_fwd_bwd": grad_case(attention, *qkv),
        "embedding_fwd_bwd": grad_case(lambda w: F.embedding(T(ids), w), table),
        **{f"{k}_fwd": (lambda v, g, gw, gb: lambda: F.nn.group_norm(v, g, True, gw, gb))(
            T(v), g, T(gw), T(gb)) for k, (v, g, gw, gb) in gn_data.items()},
        **{f"{k}_fwd_bwd": gn_fwd_bwd(*gn_data[k]) for k in gn_shapes},
        "add": lambda: a + b,
        "relu": lambda: F.relu(a),
        "exp": lambda: F.exp(a),
        "maxpool_lenet": lambda: F.max_pool2d(lx, 2),
        "maxpool": lambda: F.max_pool2d(x, 3, 2, 1),
        "avgpool": lambda: F.avg_pool2d(x, 3, 2, 1),
        "maxpool_fwd_bwd": pool_fwd_bwd,
        "batchnorm_fwd": bn_fwd,
        "batchnorm_fwd_bwd": bn_fwd_bwd,
        "sort": lambda: F.sort(r),
        "topk": lambda: F.topk(r, 10),
        "adaptive_avgpool": lambda: F.adaptive_avg_pool2d(x, (7, 7)),
        "adaptive_avgpool_uneven": lambda: F.adaptive_avg_pool2d(x, (5, 5)),
        "resize_bilinear": resize("bilinear"),
        "resize_nearest": resize("nearest"),
        "resize_bilinear_fwd_bwd": resize_fwd_bwd,
        "softmax_fwd_bwd": softmax_fwd_bwd(logits, 1),
        "logsoftmax_fwd_bwd": softmax_fwd_bwd(logits, 1, True),
        "softmax_attn_fwd_bwd": softmax_fwd_bwd(scores, 3),
        "softmax_axis1_fwd_bwd": softmax_fwd_bwd(chan, 1),
        "logsoftmax_axis1_fwd_bwd": softmax_fwd_bwd(chan, 1, True),
    }
else:
    import torch
    import torch.nn.functional as F

    torch.set_num_threads(threads)
    a, b, x, lx, r, h = (torch.tensor(v) for v in (big, big2, act, lenet_act, rows, ffn))
    hb, hu = torch.tensor(pow_base), torch.tensor(unit)
    w, bias = torch.tensor(ch), torch.zeros(64)
    dy = torch.tensor(act)

    def bn_fwd():
        with torch.no_grad():
            return F.batch_norm(x, torch.zeros(64), torch.ones(64), w, bias, training=True)

    def bn_fwd_bwd():
        xg = x.detach().requires_grad_()
        F.batch_norm(xg, None, None, w, bias, training=True).backward(dy)

    def pool_fwd_bwd():
        xg = x.detach().requires_grad_()
        y = F.max_pool2d(xg, 3, 2, 1)
        y.backward(torch.ones_like(y))

    def resize(mode):
        corners = False if mode == "bilinear" else None
        return lambda: F.interpolate(x, size=(112, 112), mode=mode, align_corners=corners)

    def resize_fwd_bwd():
        xg = x.detach().requires_grad_()
        y = F.interpolate(xg, size=(112, 112), mode="bilinear", align_corners=False)
        y.backward(torch.ones_like(y))

    def softmax_fwd_bwd(v, axis, log=False):
        def f():
            xg = torch.tensor(v).requires_grad_()
            y = F.log_softmax(xg, axis) if log else F.softmax(xg, axis)
            y.backward(torch.tensor(v))
        return f

    def no_grad(f):
        def g():
            with torch.no_grad():
                return f()
        return g

    def grad_case(fn, *vals):
        def f():
            xs = [torch.tensor(v).requires_grad_() for v in vals]
            y = fn(*xs)
            y.backward(torch.ones_like(y))
        return f

    def attention(q, k, v):
        return F.softmax(q @ k.transpose(-1, -2) * 0.125, dim=-1) @ v

    def gn_fwd_bwd(v, g, gw, gb):
        x, w, b, dy = torch.tensor(v), torch.tensor(gw), torch.tensor(gb), torch.tensor(v)

        def f():
            xs = [t.detach().requires_grad_() for t in (x, w, b)]
            F.group_norm(xs[0], g, xs[1], xs[2]).backward(dy)
        return f

    ln_w, ln_b = torch.ones(256), torch.zeros(256)
    tids = torch.tensor(ids).long()
    cases = {
        "gelu": no_grad(lambda: F.gelu(h)),
        "erf": no_grad(lambda: torch.erf(h)),
        "erfc": no_grad(lambda: torch.erfc(h)),
        "tan": no_grad(lambda: torch.tan(h)),
        "pow": no_grad(lambda: torch.pow(hb, h)),
        "erfinv": no_grad(lambda: torch.erfinv(hu)),
        "log": no_grad(lambda: torch.log(hb)),
        "log1p": no_grad(lambda: torch.log1p(hb)),
        "expm1": no_grad(lambda: torch.expm1(h)),
        "atanh": no_grad(lambda: torch.atanh(hu)),
        "softplus": no_grad(lambda: F.softplus(h)),
        "logsigmoid": no_grad(lambda: F.logsigmoid(h)),
        "gelu_fwd_bwd": grad_case(F.gelu, ffn),
        "dropout_fwd_bwd": grad_case(lambda t: F.dropout(t, 0.1), probs),
        "layernorm_fwd_bwd": grad_case(lambda t: F.layer_norm(t, (256,), ln_w, ln_b), hid),
        "attention_fwd_bwd": grad_case(attention, *qkv),
        "embedding_fwd_bwd": grad_case(lambda w: F.embedding(tids, w), table),
        **{f"{k}_fwd": (lambda v, g, gw, gb: no_grad(lambda: F.group_norm(v, g, gw, gb)))(
            torch.tensor(v), g, torch.tensor(gw), torch.tensor(gb))
           for k, (v, g, gw, gb) in gn_data.items()},
        **{f"{k}_fwd_bwd": gn_fwd_bwd(*gn_data[k]) for k in gn_shapes},
        "add": no_grad(lambda: a + b),
        "relu": no_grad(lambda: F.relu(a)),
        "exp": no_grad(lambda: torch.exp(a)),
        "maxpool_lenet": no_grad(lambda: F.max_pool2d(lx, 2)),
        "maxpool": no_grad(lambda: F.max_pool2d(x, 3, 2, 1)),
        "avgpool": no_grad(lambda: F.avg_pool2d(x, 3, 2, 1, count_include_pad=True)),
        "maxpool_fwd_bwd": pool_fwd_bwd,
        "batchnorm_fwd": bn_fwd,
        "batchnorm_fwd_bwd": bn_fwd_bwd,
        "sort": no_grad(lambda: torch.sort(r, stable=True)),
        "topk": no_grad(lambda: torch.topk(r, 10)),
        "adaptive_avgpool": no_grad(lambda: F.adaptive_avg_pool2d(x, (7, 7))),
        "adaptive_avgpool_uneven": no_grad(lambda: F.adaptive_avg_pool2d(x, (5, 5))),
        "resize_bilinear": no_grad(resize("bilinear")),
        "resize_nearest": no_grad(resize("nearest")),
        "resize_bilinear_fwd_bwd": resize_fwd_bwd,
        "softmax_fwd_bwd": softmax_fwd_bwd(logits, 1),
        "logsoftmax_fwd_bwd": softmax_fwd_bwd(logits, 1, True),
        "softmax_attn_fwd_bwd": softmax_fwd_bwd(scores, 3),
        "softmax_axis1_fwd_bwd": softmax_fwd_bwd(chan, 1),
        "logsoftmax_axis1_fwd_bwd": softmax_fwd_bwd(chan, 1, True),
    }

f = cases[case]
f()  # warm-up: plans and primitives are made on the first call
times = []
for _ in range(repeat):
    t0 = time.perf_counter()
    f()
    times.append(time.perf_counter() - t0)
print(json.dumps({"seconds": min(times),
                  "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""

OP_CASES = [
    "add",
    "relu",
    "exp",
    "maxpool_lenet",
    "maxpool",
    "avgpool",
    "maxpool_fwd_bwd",
    "batchnorm_fwd",
    "batchnorm_fwd_bwd",
    "sort",
    "topk",
    "adaptive_avgpool",
    "adaptive_avgpool_uneven",
    "resize_bilinear",
    "resize_nearest",
    "resize_bilinear_fwd_bwd",
    "softmax_fwd_bwd",
    "logsoftmax_fwd_bwd",
    "softmax_attn_fwd_bwd",
    "softmax_axis1_fwd_bwd",
    "logsoftmax_axis1_fwd_bwd",
    "gelu",
    "gelu_fwd_bwd",
    "erf",
    "erfc",
    "tan",
    "pow",
    "erfinv",
    "log",
    "log1p",
    "expm1",
    "atanh",
    "softplus",
    "logsigmoid",
    "dropout_fwd_bwd",
    "layernorm_fwd_bwd",
    "attention_fwd_bwd",
    "embedding_fwd_bwd",
    *(f"gn_{s}_{p}" for s in ("audit", "56", "14", "64") for p in ("fwd", "fwd_bwd")),
]


def best_of(rounds, key, better, *runs):
    """Runs each (python, code, args, threads) of `runs` `rounds` times, interleaved; returns the
    record of each run's best round by `key` (`better` picks between two values), or (None, why).
    """
    best = [None] * len(runs)
    why = None
    for _ in range(rounds):
        for i, run in enumerate(runs):
            res, err = run_worker(*run)
            if res is None:
                why = err
                continue
            if best[i] is None or better(res[key], best[i][key]) == res[key]:
                best[i] = res
    return best, why


def run_worker(python, code, args, threads):
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    proc = subprocess.run(
        [python, "-c", code, *args], check=False, capture_output=True, text=True, env=env
    )
    if proc.returncode != 0:
        return None, (proc.stderr.strip().splitlines() or ["no output"])[-1]
    return json.loads(proc.stdout.strip().splitlines()[-1]), None


def print_table(args, threads):
    print(f"{threads} thread(s)")
    print(f"{'case':<20}{'NeoMeg':>14}{'PyTorch':>14}{'ratio':>8}{'RSS MiB':>10}{'torch':>8}")
    for case in args.cases:
        if case == "lenet":
            # train_step's worker: framework, model, steps, threads, format, float32 layout; it
            # reports samples/s.
            wargs = ["lenet", str(args.repeat), str(threads), "default", "auto"]
            code, key, better = train_step.WORKER, "samples_per_s", max
        else:
            wargs = [case, str(args.repeat), str(threads)]
            code, key, better = OP_WORKER, "seconds", min
        (ours, theirs), why = best_of(
            args.rounds,
            key,
            better,
            (sys.executable, code, ["neomeg", *wargs], threads),
            (args.torch_python, code, ["torch", *wargs], threads),
        )
        if ours is None or theirs is None:
            print(f"{case:<20} failed: {why}")
            continue
        rss = f"{ours['peak_rss_mib']:>10.0f}{theirs['peak_rss_mib']:>8.0f}"
        if case == "lenet":
            o, t = ours[key], theirs[key]
            print(f"{case + ' samples/s':<20}{o:>14.1f}{t:>14.1f}{o / t:>8.3f}{rss}")
        else:
            o, t = ours[key] * 1e3, theirs[key] * 1e3
            print(f"{case + ' ms':<20}{o:>14.3f}{t:>14.3f}{t / o:>8.3f}{rss}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--cases", nargs="+", default=["lenet", *OP_CASES])
    ap.add_argument("--torch-python", default=TORCH_PYTHON)
    args = ap.parse_args()
    print(describe())
    if min(args.threads) < 1:
        ap.error("--threads must be positive")
    for threads in args.threads:
        print_table(args, threads)
    print("ratio = NeoMeg throughput / PyTorch throughput (above 1.0: NeoMeg is faster)")
    print("RSS MiB = peak resident memory of the worker process, NeoMeg then PyTorch")
    return 0


if __name__ == "__main__":
    sys.exit(main())
