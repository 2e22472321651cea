"""Which kernel each x86 operator runs on this CPU: an audit for silent slow paths.

Runs the hot operators (softmax, log-softmax, layer norm, pooling, batch norm, convolution,
matmul), forward and backward, in representative shapes and in float32, bfloat16 and float16,
each in a process with ``NEOMEG_DEBUG=1``, and prints per case the kernel of every op that ran:
``onednn:<implementation>`` (oneDNN's name, e.g. ``jit:avx2``), our loops (``hwy`` and the
like) or ``naive``. Lines marked ``SLOW`` ran oneDNN's reference implementation (``ref:...``,
``..._ref:...``) or the naive fallback; the machine's instruction set decides which (oneDNN 2.6
has no AVX2 kernel for several primitives, and no 16-bit kernel below AVX-512), so the audit is
rerun on each machine rather than asserted anywhere.

    PYTHONPATH=python python3 bench/x86_impl_audit.py [--cases softmax pool] [--dtypes float32]
"""

import argparse
import collections
import os
import re
import subprocess
import sys

# One case per process: argv is the case name and dtype. Runs the case twice (the first call
# plans, the second is what a training loop repeats) and prints a marker between them.
WORKER = r"""
import sys
import numpy as np
import megengine as mge
import megengine.functional as F
from megengine.autodiff import GradManager

case, dtype = sys.argv[1], sys.argv[2]
rng = np.random.default_rng(0)


def t(*shape):
    return mge.Tensor(rng.normal(size=shape).astype(np.float32)).astype(dtype)


def grad(fn, *xs):
    gm = GradManager().attach(list(xs))
    with gm:
        y = fn(*xs)
        gm.backward(y, mge.Tensor(np.ones(y.shape, np.float32)).astype(dtype))


def softmax(shape, axis, log=False):
    f = (lambda x: F.logsoftmax(x, axis)) if log else (lambda x: F.softmax(x, axis))
    return lambda: grad(f, t(*shape))


def bn(shape):
    c = shape[1]
    # Under autocast (the 16-bit case a model meets) the statistics and parameters stay float32.
    w, b = mge.Tensor(np.ones((1, c, 1, 1), np.float32)), mge.Tensor(np.zeros((1, c, 1, 1), np.float32))
    m, v = mge.Tensor(np.zeros((1, c, 1, 1), np.float32)), mge.Tensor(np.ones((1, c, 1, 1), np.float32))
    return lambda: grad(lambda x: F.nn.batch_norm(x, m, v, w, b, training=True), t(*shape))


CASES = {
    "softmax_32x10": softmax((32, 10), 1),
    "softmax_64x1000": softmax((64, 1000), 1),
    "softmax_attn_8x12x128x128": softmax((8, 12, 128, 128), 3),
    "softmax_axis1_8x64x28x28": softmax((8, 64, 28, 28), 1),
    "softmax_axis0_1000x64": softmax((1000, 64), 0),
    "logsoftmax_32x10": softmax((32, 10), 1, True),
    "logsoftmax_64x1000": softmax((64, 1000), 1, True),
    "logsoftmax_axis1_8x64x28x28": softmax((8, 64, 28, 28), 1, True),
    "layer_norm_32x128x768": lambda: grad(
        lambda x: F.nn.layer_norm(x, (768,), True, t(768), t(768)),
        t(32, 128, 768),
    ),
    "layer_norm_64x10_noaffine": lambda: grad(lambda x: F.nn.layer_norm(x, (10,), False), t(64, 10)),
    "max_pool_3x3s2_32x64x56x56": lambda: grad(lambda x: F.max_pool2d(x, 3, 2, 1), t(32, 64, 56, 56)),
    "max_pool_2x2_64x6x24x24": lambda: grad(lambda x: F.max_pool2d(x, 2), t(64, 6, 24, 24)),
    "avg_pool_2x2_64x6x24x24": lambda: grad(lambda x: F.avg_pool2d(x, 2), t(64, 6, 24, 24)),
    "avg_pool_3x3s2p1_incl_32x64x56x56": lambda: grad(
        lambda x: F.avg_pool2d(x, 3, 2, 1, mode="average"), t(32, 64, 56, 56)
    ),
    "avg_pool_3x3s2p1_excl_32x64x56x56": lambda: grad(lambda x: F.avg_pool2d(x, 3, 2, 1), t(32, 64, 56, 56)),
    "adaptive_avg_7x7_32x64x56x56": lambda: grad(lambda x: F.adaptive_avg_pool2d(x, (7, 7)), t(32, 64, 56, 56)),
    "batch_norm_32x64x56x56": bn((32, 64, 56, 56)),
    "batch_norm_64x6x24x24": bn((64, 6, 24, 24)),
    "conv3x3_8x64x56x56": lambda: grad(lambda x, w: F.conv2d(x, w, padding=1), t(8, 64, 56, 56), t(64, 64, 3, 3)),
    "conv1x1_8x64x56x56": lambda: grad(lambda x, w: F.conv2d(x, w), t(8, 64, 56, 56), t(256, 64, 1, 1)),
    "depthwise3x3_8x64x56x56": lambda: grad(
        lambda x, w: F.conv2d(x, w, padding=1, groups=64), t(8, 64, 56, 56), t(64, 1, 1, 3, 3)
    ),
    "matmul_256": lambda: grad(F.matmul, t(256, 256), t(256, 256)),
    "batched_matmul_16x64x64": lambda: grad(F.matmul, t(16, 64, 64), t(16, 64, 64)),
}
if case == "list":
    print(" ".join(CASES))
    sys.exit(0)
CASES[case]()
sys.stderr.write("--- second call ---\n")
sys.stderr.flush()
CASES[case]()
"""

LINE = re.compile(r"^neomeg x86: (\w+)(.*?) inputs \[(.*)\] outputs \[(.*)\] kernel (\S+)")
# oneDNN's reference implementations: "ref:any", "bnorm_ref:any", "ref_fused:any", ...
REFERENCE = re.compile(r"(^|[:_])ref(_\w+)?:")

# The ops of a case worth listing: the data movement around them (casts, copies, fills, the
# elementwise of the gradient's seed) has its own loops and its own audit (bench/stream.py).
SKIP = {"TypeCvt", "Fill", "Relayout", "BroadcastTo", "ReshapeTo", "Elemwise", "Reduce"}


def slow(kernel):
    body = kernel.removeprefix("onednn:").removeprefix("f32:")
    return kernel == "naive" or bool(REFERENCE.search(body))


def run_case(case, dtype):
    env = dict(os.environ, NEOMEG_DEBUG="1", NEOMEG_BACKEND="x86")
    p = subprocess.run(
        [sys.executable, "-c", WORKER, case, dtype],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if p.returncode != 0:
        tail = p.stderr.strip().splitlines()[-1:] or ["?"]
        return None, tail[0]
    # The second call's lines: what a loop runs once planned.
    lines = p.stderr.split("--- second call ---\n", 1)[-1].splitlines()
    seen = collections.OrderedDict()
    for line in lines:
        m = LINE.match(line)
        if not m or m.group(1) in SKIP:
            continue
        key = (m.group(1), m.group(3), m.group(5))
        seen[key] = seen.get(key, 0) + 1
    return seen, None


def main():
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--cases", nargs="*", help="substrings of case names (default: all)")
    parser.add_argument("--dtypes", nargs="*", default=["float32", "bfloat16", "float16"])
    args = parser.parse_args()
    names = subprocess.run(
        [sys.executable, "-c", WORKER, "list", "float32"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    if args.cases:
        names = [n for n in names if any(c in n for c in args.cases)]
    n_slow = 0
    for case in names:
        for dtype in args.dtypes:
            seen, err = run_case(case, dtype)
            print(f"{case} {dtype}")
            if seen is None:
                print(f"    error: {err}")
                continue
            for (op, inputs, kernel), count in seen.items():
                mark = "SLOW" if slow(kernel) else "    "
                n_slow += mark == "SLOW"
                times = f" x{count}" if count > 1 else ""
                print(f"  {mark} {op:<28} {kernel:<40} [{inputs}]{times}")
    print(f"{n_slow} slow (reference or naive) kernel lines")


if __name__ == "__main__":
    main()
