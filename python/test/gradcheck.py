"""Gradients from GradManager against central finite differences, shared by the tests."""

import numpy as np

import megengine as mge
from megengine.autodiff import GradManager


def numeric_grad(f, x, eps=1e-2):
    """Central differences of the scalar function ``f`` at the array ``x``."""
    g = np.zeros_like(x, dtype=np.float64)
    for i in np.ndindex(x.shape):
        xp, xm = x.copy(), x.copy()
        xp[i] += eps
        xm[i] -= eps
        g[i] = (f(xp) - f(xm)) / (2 * eps)
    return g


def check_grad(fn, *arrays, wrt=None, rtol=2e-2, atol=2e-3, eps=1e-2, seed=0):
    """The gradient of ``sum(fn(*arrays) * w)``, for a fixed random cotangent ``w``, with respect
    to each input in ``wrt`` (all by default), against central differences. An input in ``wrt``
    that gets no gradient fails."""
    arrays = [np.asarray(a, np.float32) for a in arrays]
    wrt = range(len(arrays)) if wrt is None else wrt
    out_shape = fn(*[mge.Tensor(a) for a in arrays]).shape
    # A scalar output is checked as it is; a tensor one through a random weighting, so that
    # every output element counts with its own weight.
    w = np.random.default_rng(seed).normal(size=out_shape).astype(np.float32) if out_shape else 1.0

    def loss(*ts):
        return (fn(*ts) * mge.Tensor(w)).sum()

    params = [mge.Parameter(a) for a in arrays]
    gm = GradManager().attach([params[k] for k in wrt])
    with gm:
        gm.backward(loss(*params))
    for k in wrt:
        assert params[k].grad is not None, f"no gradient for input {k}"

        def f(v, k=k):
            ts = [mge.Tensor(v.astype(np.float32) if j == k else b) for j, b in enumerate(arrays)]
            return loss(*ts).item()

        num = numeric_grad(f, arrays[k].astype(np.float64), eps)
        np.testing.assert_allclose(
            params[k].grad.numpy(), num, rtol=rtol, atol=atol, err_msg=f"input {k}"
        )
