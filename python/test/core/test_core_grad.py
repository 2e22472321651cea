"""megengine.core.autodiff.grad.Grad, MegEngine's low-level recorder: gradients reach the
callbacks of the tensors given to wrt, checked against finite differences and known values."""

import numpy as np
import pytest
from gradcheck import numeric_grad

import megengine as mge
import megengine.functional as F
from megengine.core.autodiff.grad import Grad


def test_grad_matches_finite_differences():
    rng = np.random.default_rng(0)
    xv = rng.normal(size=(3, 4)).astype(np.float32)
    wv = rng.normal(size=(4, 2)).astype(np.float32)
    dyv = rng.normal(size=(3, 2)).astype(np.float32)

    def f(x, w):
        return F.tanh(F.matmul(x, w)) * 2

    got = {}
    x, w = mge.Tensor(xv), mge.Tensor(wv)
    with Grad() as grad:
        grad.wrt(x, callback=lambda g: got.update(x=g.numpy()))
        grad.wrt(w, callback=lambda g: got.update(w=g.numpy()))
        grad(f(x, w), mge.Tensor(dyv))

    def loss_x(a):
        return float((f(mge.Tensor(a), mge.Tensor(wv)).numpy() * dyv).sum())

    def loss_w(a):
        return float((f(mge.Tensor(xv), mge.Tensor(a)).numpy() * dyv).sum())

    np.testing.assert_allclose(got["x"], numeric_grad(loss_x, xv), rtol=2e-2, atol=2e-3)
    np.testing.assert_allclose(got["w"], numeric_grad(loss_w, wv), rtol=2e-2, atol=2e-3)


def test_grad_of_an_intermediate_and_several_outputs():
    xv = np.array([0.5, 1.0, 2.0], np.float32)
    x = mge.Tensor(xv)
    got = {}
    with Grad() as grad:
        grad.wrt(x, callback=lambda g: got.update(x=g.numpy()))
        y = x * x
        grad.wrt(y, callback=lambda g: got.update(y=g.numpy()))
        grad([y * y, y], [mge.Tensor(np.ones(3, np.float32)), mge.Tensor(np.full(3, 2.0))])
    # d/dy (y^2 + 2y) = 2y + 2; d/dx = (2y + 2) * 2x
    np.testing.assert_allclose(got["y"], 2 * xv**2 + 2, rtol=1e-6)
    np.testing.assert_allclose(got["x"], (2 * xv**2 + 2) * 2 * xv, rtol=1e-6)


def test_grad_without_a_path_makes_no_call_and_checks_its_arguments():
    a, b = mge.Tensor([1.0]), mge.Tensor([2.0])
    calls = []
    with Grad() as grad:
        grad.wrt(a, b, callback=lambda g: calls.append(g.numpy().tolist()))
        grad(a * 3, mge.Tensor([1.0]))
    assert calls == [[3.0]]
    with Grad() as grad:
        grad.wrt(a)
        with pytest.raises(ValueError, match="output gradients"):
            grad([a * 2, a * 3], [mge.Tensor([1.0])])
