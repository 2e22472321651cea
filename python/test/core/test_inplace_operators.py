"""In-place operators update the tensor object itself, as MegEngine 1.13's do (its
``_inplace`` resets the tensor): every name bound to it sees the update, a Parameter updated by
hand stays attached to its GradManager, and within a recording the update is differentiable.
The expected values are what MegEngine 1.13 gives for the same code."""

import operator

import numpy as np
import pytest

import megengine as mge
from megengine.autodiff import GradManager
from megengine.jit import trace


def test_aliases_see_the_update():
    a = mge.Tensor([1.0])
    b = a
    b += 1
    assert b is a
    np.testing.assert_array_equal(a.numpy(), [2.0])


def test_hand_written_sgd_keeps_the_parameter_attached():
    w = mge.Parameter([1.0, 2.0])
    gm = GradManager().attach([w])
    seen = []
    for _ in range(3):
        with gm:
            gm.backward((w * w).sum())
        seen.append(w.grad.numpy().copy())
        w -= 0.1 * w.grad
        w.grad = None
    np.testing.assert_allclose(seen, [[2.0, 4.0], [1.6, 3.2], [1.28, 2.56]], rtol=1e-6)
    np.testing.assert_allclose(w.numpy(), [0.512, 1.024], rtol=1e-6)
    assert isinstance(w, mge.Parameter)


def test_update_inside_a_recording_is_differentiable():
    x = mge.Parameter([1.0, 2.0])
    gm = GradManager().attach([x])
    with gm:
        y = x * 2
        z = y
        y += x
        gm.backward((z * 1).sum())
    np.testing.assert_array_equal(z.numpy(), [3.0, 6.0])
    np.testing.assert_array_equal(x.grad.numpy(), [3.0, 3.0])


def test_attached_parameter_updated_inside_the_recording():
    w = mge.Parameter([1.0, 2.0])
    gm = GradManager().attach([w])
    with gm:
        w += 1
        gm.backward((w * w).sum())
    np.testing.assert_array_equal(w.numpy(), [2.0, 3.0])
    np.testing.assert_array_equal(w.grad.numpy(), [4.0, 6.0])


def test_shape_and_dtype_follow_the_result():
    c = mge.Tensor([1.0])
    d = c
    d += mge.Tensor([1.0, 2.0])
    assert c.shape == (2,)
    np.testing.assert_array_equal(c.numpy(), [2.0, 3.0])
    i = mge.Tensor([1, 2], dtype="int32")
    j = i
    j += 0.5
    assert i.dtype == np.float32
    np.testing.assert_array_equal(i.numpy(), [1.5, 2.5])


def test_a_slice_is_a_copy():
    e = mge.Tensor([1.0, 2.0, 3.0])
    f = e[1:]
    f += 10
    np.testing.assert_array_equal(e.numpy(), [1.0, 2.0, 3.0])
    np.testing.assert_array_equal(f.numpy(), [12.0, 13.0])


FLOAT_OPS = [operator.iadd, operator.isub, operator.imul, operator.itruediv, operator.ipow]
INT_OPS = [
    operator.ifloordiv,
    operator.imod,
    operator.ilshift,
    operator.irshift,
    operator.iand,
    operator.ior,
    operator.ixor,
]


@pytest.mark.parametrize("op", FLOAT_OPS + INT_OPS, ids=lambda op: op.__name__)
def test_every_operator_against_numpy(op):
    dtype = "float32" if op in FLOAT_OPS else "int32"
    lhs = np.array([[5, 6, 7], [8, 9, 10]], dtype)
    rhs = np.array([1, 2, 3], dtype)
    t = mge.Tensor(lhs)
    alias = t
    result = op(t, mge.Tensor(rhs))
    assert result is alias
    np.testing.assert_allclose(alias.numpy(), op(lhs.copy(), rhs), rtol=1e-6)


def test_explicit_dunder_call_updates_too():
    t = mge.Tensor([1.0, 2.0])
    assert t.__imul__(3) is t
    np.testing.assert_array_equal(t.numpy(), [3.0, 6.0])


def test_in_place_update_of_outside_state_replays_in_a_trace():
    class State:
        pass

    state = State()
    state.acc = mge.Tensor(np.zeros(3, "float32"))

    @trace(symbolic=True)
    def step(x):
        state.acc += x
        return state.acc * 1

    total = np.zeros(3, "float32")
    for i in range(4):
        x = np.full(3, i + 1, "float32")
        total += x
        out = step(mge.Tensor(x))
        np.testing.assert_array_equal(out.numpy(), total)
        np.testing.assert_array_equal(state.acc.numpy(), total)


def test_unsupported_operand_raises_type_error():
    t = mge.Tensor([1.0])
    with pytest.raises(TypeError):
        t += object()
