"""The x86 convolutions' algorithm on the CPU. By default a rule on the shape picks oneDNN's
Winograd for 3x3 stride-1 float32 convolutions of 32 to 1024 channels on batches of enough
pixels (where this CPU has it); with ``megengine.config.benchmark_kernel`` they time oneDNN's
direct and Winograd algorithms per case and keep the faster; ``NEOMEG_CONV_WINOGRAD=0`` keeps
Winograd out. Whichever runs, a two-convolution training step, eager and traced, gives a float64
NumPy reference's loss and filter gradients within the bound Winograd's rounding allows (the C++
suite dnn/test/x86/conv_algo.cpp checks the rule on shapes and forces Winograd against naive;
here the choice is the machine's, and no test asserts which kernel a CPU ran)."""

import os
import subprocess
import sys

import numpy as np
import pytest

import megengine as mge
import megengine.functional as F
from megengine import config
from megengine.autodiff import GradManager
from megengine.core import _imperative_rt as rt
from megengine.jit import trace


@pytest.fixture
def benchmark_kernel_on():
    config.benchmark_kernel = True
    yield
    config.benchmark_kernel = False


def windows(xp, k, out):
    """(N, C, out, out, k, k) views of the padded input xp."""
    v = np.lib.stride_tricks.sliding_window_view(xp, (k, k), axis=(2, 3))
    return v[:, :, :out, :out]


def conv_ref(x, w):
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    return np.einsum("ncijab,ocab->noij", windows(xp, 3, x.shape[2]), w)


def conv_grads_ref(x, w, dy):
    """(dx, dw) of y = conv_ref(x, w) for upstream gradient dy (3x3, stride 1, padding 1)."""
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    n = x.shape[2]
    dw = np.einsum("ncijab,noij->ocab", windows(xp, 3, n), dy)
    dxp = np.zeros_like(xp)
    for a in range(3):
        for b in range(3):
            dxp[:, :, a : a + n, b : b + n] += np.einsum("noij,oc->ncij", dy, w[:, :, a, b])
    return dxp[:, :, 1:-1, 1:-1], dw


def test_the_switch_reaches_the_x86_kernels(benchmark_kernel_on):
    assert rt.x86_benchmark_kernel() is True and rt.cuda_benchmark_kernel() is True
    config.benchmark_kernel = False
    assert rt.x86_benchmark_kernel() is False and rt.cuda_benchmark_kernel() is False
    with config._override(benchmark_kernel=True):
        assert rt.x86_benchmark_kernel() is True
    assert rt.x86_benchmark_kernel() is False


# (benchmark_kernel, shape): fastrun on a shape no other test uses, so its measured choice, which
# the process keeps, reaches no other test; and the default rule on a shape it gives Winograd
# (batch 2 of 32x32 images, 32 channels: 128 output tiles of 4x4).
CASES = [(True, (3, 16, 13)), (False, (2, 32, 32))]


@pytest.mark.parametrize("traced", [False, True])
@pytest.mark.parametrize("benchmark_kernel, shape", CASES)
def test_training_step_matches_float64_reference(traced, benchmark_kernel, shape):
    config.benchmark_kernel = benchmark_kernel
    try:
        check_training_step(traced, *shape)
    finally:
        config.benchmark_kernel = False


def check_training_step(traced, n, c, hw):
    rng = np.random.default_rng(7)
    x = rng.uniform(-1, 1, (n, c, hw, hw)).astype("float32")
    r = rng.uniform(-1, 1, (n, c, hw, hw)).astype("float32")
    w1_np = rng.uniform(-0.3, 0.3, (c, c, 3, 3)).astype("float32")
    w2_np = rng.uniform(-0.3, 0.3, (c, c, 3, 3)).astype("float32")
    w1, w2 = mge.Parameter(w1_np), mge.Parameter(w2_np)
    gm = GradManager().attach([w1, w2])

    def step(data, upstream):
        with gm:
            y = F.conv2d(F.conv2d(data, w1, padding=1), w2, padding=1)
            loss = (y * upstream).sum()
            gm.backward(loss)
        return loss

    run = trace(step) if traced else step
    x64, r64 = x.astype(np.float64), r.astype(np.float64)
    y1 = conv_ref(x64, w1_np.astype(np.float64))
    terms = conv_ref(y1, w2_np.astype(np.float64)) * r64
    loss_want = terms.sum()
    dy1, dw2_want = conv_grads_ref(y1, w2_np.astype(np.float64), r64)
    _, dw1_want = conv_grads_ref(x64, w1_np.astype(np.float64), dy1)
    for _ in range(3):  # recorded, then replayed twice
        w1.grad = w2.grad = None
        loss = run(mge.Tensor(x), mge.Tensor(r)).numpy()
        # Winograd F(4x4, 3x3) measured up to 2.3e-6 of the output's scale per convolution
        # (direct: 3e-7); through two convolutions, 2e-5 of the scale: the largest gradient
        # element, and for the loss, a sum, the sum of its terms' magnitudes.
        checks = [
            (loss, loss_want, np.abs(terms).sum()),
            (w1.grad.numpy(), dw1_want, np.abs(dw1_want).max()),
            (w2.grad.numpy(), dw2_want, np.abs(dw2_want).max()),
        ]
        for got, want, scale in checks:
            assert np.abs(got.astype(np.float64) - want).max() <= 2e-5 * scale


def test_switched_off_runs_no_winograd():
    # NEOMEG_DEBUG=1 names each op's kernel on stderr; with NEOMEG_CONV_WINOGRAD=0 none of the three
    # passes of a convolution the rule would give Winograd names it, on any CPU.
    code = """
import numpy as np
import megengine as mge
import megengine.functional as F
from megengine.autodiff import GradManager

rng = np.random.default_rng(1)
x = mge.Tensor(rng.uniform(-1, 1, (2, 32, 32, 32)).astype("float32"))
w = mge.Parameter(rng.uniform(-1, 1, (32, 32, 3, 3)).astype("float32"))
gm = GradManager().attach([w])
x.requires_grad = True
gm.attach([x])
with gm:
    y = F.conv2d(x, w, padding=1)
    gm.backward(y.sum())
print(w.grad.numpy().shape, x.grad.numpy().shape)
"""
    env = dict(os.environ, NEOMEG_CONV_WINOGRAD="0", NEOMEG_DEBUG="1")
    proc = subprocess.run(
        [sys.executable, "-c", code],
        check=False,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    assert "(32, 32, 3, 3) (2, 32, 32, 32)" in proc.stdout
    conv_lines = [line for line in proc.stderr.splitlines() if "Conv" in line]
    assert len(conv_lines) >= 3, proc.stderr
    for line in conv_lines:
        assert "onednn:" in line and "wino" not in line, line
