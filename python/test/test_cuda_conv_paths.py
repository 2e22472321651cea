"""The two cuDNN paths of the GPU convolutions, from Python: by default each pass of a convolution
(forward, backward data, backward filter) runs a plan of cuDNN's graph API, and
``NEOMEG_CUDNN_LEGACY=1`` keeps them on the legacy API; ``NEOMEG_DEBUG=1`` names what ran
(``cudnn-graph:engine<N>`` or ``cudnn:<algorithm>``), and both paths give a float64 NumPy
reference's output and gradients. Marked ``gpu``; they skip with "no CUDA device" elsewhere."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import megengine as mge

gpu = pytest.mark.gpu
needs_gpu = pytest.mark.skipif(not mge.is_cuda_available(), reason="no CUDA device")

# A 3x3 convolution, padding 1, forward and both gradients on gpu0; prints them as JSON.
STEP = """
import json
import numpy as np
import megengine as mge
import megengine.functional as F
from megengine.autodiff import GradManager

rng = np.random.default_rng(3)
x = mge.Tensor(rng.uniform(-1, 1, (2, 8, 12, 12)).astype("float32"), device="gpu0")
w = mge.Parameter(rng.uniform(-1, 1, (16, 8, 3, 3)).astype("float32"), device="gpu0")
dy = mge.Tensor(rng.uniform(-1, 1, (2, 16, 12, 12)).astype("float32"), device="gpu0")
gm = GradManager().attach([w, x])
with gm:
    y = F.conv2d(x, w, padding=1)
    gm.backward(y, dy)
print(json.dumps({k: v.numpy().tolist() for k, v in (("y", y), ("dx", x.grad), ("dw", w.grad))}))
"""


def conv_ref(x, w, dy):
    """y, dx and dw of a 3x3 convolution with padding 1, in float64."""
    h = x.shape[2]
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    win = np.lib.stride_tricks.sliding_window_view(xp, (3, 3), axis=(2, 3))[:, :, :h, :h]
    y = np.einsum("ncijab,ocab->noij", win, w)
    dw = np.einsum("ncijab,noij->ocab", win, dy)
    dxp = np.zeros_like(xp)
    for a in range(3):
        for b in range(3):
            dxp[:, :, a : a + h, b : b + h] += np.einsum("noij,oc->ncij", dy, w[:, :, a, b])
    return y, dxp[:, :, 1:-1, 1:-1], dw


def run_step(**env):
    proc = subprocess.run(
        [sys.executable, "-c", STEP],
        check=False,
        capture_output=True,
        text=True,
        timeout=300,
        env=dict(os.environ, NEOMEG_DEBUG="1", **env),
    )
    assert proc.returncode == 0, proc.stderr
    kernels = [
        line.rsplit(" kernel ", 1)[1]
        for line in proc.stderr.splitlines()
        if line.startswith("neomeg cuda: Convolution")
    ]
    return json.loads(proc.stdout.splitlines()[-1]), kernels


def check_values(got):
    rng = np.random.default_rng(3)
    x = rng.uniform(-1, 1, (2, 8, 12, 12)).astype("float32").astype(np.float64)
    w = rng.uniform(-1, 1, (16, 8, 3, 3)).astype("float32").astype(np.float64)
    dy = rng.uniform(-1, 1, (2, 16, 12, 12)).astype("float32").astype(np.float64)
    for name, want in zip(("y", "dx", "dw"), conv_ref(x, w, dy)):
        # float32 without TF32: sums of at most 288 products, each off by 2^-24 relative.
        np.testing.assert_allclose(
            np.array(got[name]), want, rtol=0, atol=1e-4 * np.abs(want).max()
        )


@gpu
@needs_gpu
def test_graph_api_by_default():
    values, kernels = run_step()
    assert len(kernels) == 3, kernels  # forward, backward data, backward filter
    assert all(k.startswith("cudnn-graph:engine") for k in kernels), kernels
    check_values(values)


@gpu
@needs_gpu
def test_legacy_switch():
    values, kernels = run_step(NEOMEG_CUDNN_LEGACY="1")
    assert len(kernels) == 3, kernels
    assert all(k.startswith("cudnn:") for k in kernels), kernels
    check_values(values)
