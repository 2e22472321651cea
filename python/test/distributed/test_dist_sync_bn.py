"""SyncBatchNorm on 2 ranks equals BatchNorm2d on the ranks' batches concatenated: outputs,
running statistics, and gradients (the input's per rank, the parameters' summed over ranks)."""

import numpy as np
from dist_util import TIMEOUT

import megengine as mge
import megengine.distributed as dist
import megengine.functional as F
import megengine.module as M
from megengine.autodiff import GradManager

W, N, C = 2, 3, 4


def _data():
    rng = np.random.RandomState(3)
    x = rng.randn(W * N, C, 5, 5).astype("float32") * 2 + 1
    dy = rng.randn(W * N, C, 5, 5).astype("float32")
    return x, dy


def _run(bn, x, dy):
    x = mge.Parameter(x)
    gm = GradManager().attach([x, bn.weight, bn.bias])
    with gm:
        y = bn(x)
        gm.backward((y * mge.Tensor(dy)).sum())
    return {
        "y": y.numpy(),
        "dx": x.grad.numpy(),
        "dw": bn.weight.grad.numpy(),
        "db": bn.bias.grad.numpy(),
        "mean": bn.running_mean.numpy(),
        "var": bn.running_var.numpy(),
    }


def _worker(eps_mode_max):
    r = dist.get_rank()
    x, dy = _data()
    part = slice(r * N, (r + 1) * N)
    bn = M.SyncBatchNorm(C)
    out = _run(bn, x[part], dy[part])
    bn.eval()
    out["eval"] = bn(mge.Tensor(x[part])).numpy()
    if eps_mode_max:
        big = F.nn.sync_batch_norm(
            mge.Tensor(x[part] * 1e-4), None, None, training=True, eps=1.0, eps_mode="max"
        )
        out["max"] = big.numpy()
    return out


def test_sync_batch_norm_equals_batch_norm_on_the_whole_batch():
    results = dist.launcher(n_gpus=W, timeout=TIMEOUT)(_worker)(True)
    x, dy = _data()
    ref_bn = M.BatchNorm2d(C)
    ref = _run(ref_bn, x, dy)
    ref_bn.eval()
    ref_eval = ref_bn(mge.Tensor(x)).numpy()
    for r, res in enumerate(results):
        part = slice(r * N, (r + 1) * N)
        np.testing.assert_allclose(res["y"], ref["y"][part], rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(res["dx"], ref["dx"][part], rtol=1e-3, atol=1e-4)
        np.testing.assert_allclose(res["mean"], ref["mean"], rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(res["var"], ref["var"], rtol=1e-4, atol=1e-6)
        np.testing.assert_allclose(res["eval"], ref_eval[part], rtol=1e-4, atol=1e-5)
        # Tiny variance, eps 1: max(var, eps) = 1, so the output is x - mean.
        xs = x * 1e-4
        mean = xs.mean(axis=(0, 2, 3), keepdims=True)
        np.testing.assert_allclose(res["max"], (xs - mean)[part], rtol=1e-4, atol=1e-9)
    for k in ("dw", "db"):
        np.testing.assert_allclose(sum(res[k] for res in results), ref[k], rtol=1e-3, atol=1e-4)
