"""A traced training step whose gradients autograd turns row-major outside any op (a parameter's
gradient that came out channels-last, e.g. through a (0, 2, 3, 1) permutation) must compute them
in the graph, not replay the recording's values once the parameters change."""

import numpy as np
import pytest

import megengine as mge
import megengine.functional as F
from megengine.autodiff import GradManager
from megengine.jit import trace


def _grads_after_update(fn, params, traced, symbolic=False):
    init = [p.numpy().copy() for p in params]
    for p, v in zip(params, init):
        p._reset(mge.tensor(v))
    gm = GradManager().attach(params)

    def step():
        with gm:
            y = fn()
            gm.backward((y * y).sum())
        grads = [p.grad for p in params]
        for p in params:
            p.grad = None
        return grads

    f = trace(step, symbolic=symbolic) if traced else step
    f()
    for i, p in enumerate(params):
        p._reset(p * 1.5 + 0.1 * (i + 1))
    out = [g.numpy() for g in f()]
    for p, v in zip(params, init):
        p._reset(mge.tensor(v))
    return out


@pytest.mark.parametrize("symbolic", [False, True])
@pytest.mark.parametrize(
    "pattern", [(0, 2, 3, 1), "two transposes"], ids=["nhwc_permutation", "two_transposes"]
)
def test_channels_last_gradients_follow_the_parameters(symbolic, pattern):
    rng = np.random.default_rng(0)
    a = mge.Parameter(rng.standard_normal((2, 4, 3, 5)).astype("float32"))
    b = mge.Parameter(rng.standard_normal((2, 6, 3, 5)).astype("float32"))

    def fn():
        if pattern == "two transposes":
            rhs = b.transpose(0, 2, 1, 3).transpose(0, 1, 3, 2)
        else:
            rhs = b.transpose(*pattern)
        return F.matmul(a.transpose(0, 2, 1, 3), rhs)

    eager = _grads_after_update(fn, [a, b], traced=False)
    traced = _grads_after_update(fn, [a, b], traced=True, symbolic=symbolic)
    for e, t in zip(eager, traced):
        np.testing.assert_allclose(t, e, rtol=1e-5, atol=1e-5)
