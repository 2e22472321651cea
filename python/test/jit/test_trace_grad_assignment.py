"""``Tensor.grad`` as a property: None on a fresh tensor, and assignments made by user code inside
a traced function (not only GradManager's and clear_grad's) replay on every call."""

import numpy as np
import pytest

import megengine as mge
import megengine.module as M
from megengine.autodiff import GradManager
from megengine.jit import trace
from megengine.optimizer import SGD


def test_fresh_tensor_has_no_grad():
    assert mge.Tensor([1.0]).grad is None
    assert mge.Parameter([1.0]).grad is None


def test_grad_assign_and_delete():
    w = mge.Parameter([1.0, 2.0])
    w.grad = mge.Tensor([3.0, 4.0])
    np.testing.assert_array_equal(w.grad.numpy(), [3.0, 4.0])
    del w.grad
    assert w.grad is None


def _train(traced, steps=5):
    rng = np.random.RandomState(0)
    net = M.Linear(4, 3)
    net.weight[...] = rng.randn(3, 4).astype("float32")
    net.bias[...] = rng.randn(3).astype("float32")
    gm = GradManager().attach(net.parameters())
    opt = SGD(net.parameters(), lr=0.1, momentum=0.9)

    def step(x):
        with gm:
            loss = (net(x) ** 2).mean()
            gm.backward(loss)
        opt.step()
        for p in net.parameters():
            p.grad = None  # by hand, not opt.clear_grad()
        return loss

    fn = trace(step, symbolic=True) if traced else step
    xs = [rng.randn(2, 4).astype("float32") for _ in range(steps)]
    losses = [float(fn(mge.Tensor(x)).numpy()) for x in xs]
    return losses, [p.numpy() for p in net.parameters()], [p.grad for p in net.parameters()]


def test_user_grad_none_replays():
    eager_losses, eager_params, _ = _train(False)
    traced_losses, traced_params, grads = _train(True)
    np.testing.assert_allclose(traced_losses, eager_losses, rtol=1e-5)
    for a, b in zip(traced_params, eager_params):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    assert all(g is None for g in grads)


def test_user_grad_assignment_of_a_tensor_replays():
    w = mge.Parameter(np.ones(3, "float32"))

    @trace(symbolic=True)
    def f(x):
        w.grad = x * 2
        return x + 1

    for i in range(4):
        x = np.full(3, float(i), "float32")
        f(mge.Tensor(x))
        np.testing.assert_array_equal(w.grad.numpy(), x * 2)


@pytest.mark.parametrize("value", [1.0, "a"])
def test_grad_assignment_of_a_non_tensor_in_a_trace_raises(value):
    w = mge.Parameter(np.ones(3, "float32"))

    @trace(symbolic=True)
    def f(x):
        w.grad = value
        return x + 1

    with pytest.raises(TypeError, match="expected a Tensor"):
        f(mge.Tensor(np.ones(3, "float32")))
