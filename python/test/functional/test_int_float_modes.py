"""Float-only elementwise modes on integer tensors: MegEngine computes them in float32 (as true
division), through F.* and through the Tensor operators alike."""

import numpy as np
import pytest

import megengine.functional as F
from megengine import Tensor

_INTS = np.array([1, 2, 3, 7], dtype=np.int32)

_UNARY = [
    (F.exp, np.exp),
    (F.expm1, np.expm1),
    (F.log, np.log),
    (F.log1p, np.log1p),
    (F.sqrt, np.sqrt),
    (F.sin, np.sin),
    (F.cos, np.cos),
    (F.tan, np.tan),
    (F.sinh, np.sinh),
    (F.cosh, np.cosh),
    (F.tanh, np.tanh),
    (F.asinh, np.arcsinh),
    (F.acosh, np.arccosh),
]


@pytest.mark.parametrize("fn, ref", _UNARY, ids=[f.__name__ for f, _ in _UNARY])
@pytest.mark.parametrize("dtype", ["int32", "int16", "int8", "uint8"])
def test_unary_float_mode_of_ints_is_float32(fn, ref, dtype):
    out = fn(Tensor(_INTS.astype(dtype)))
    assert out.dtype == np.float32
    np.testing.assert_allclose(out.numpy(), ref(_INTS.astype(np.float64)), rtol=1e-6)


def test_binary_float_modes_of_ints():
    y = np.array([3, 1, 2, 2], dtype=np.int32)
    pairs = [
        (F.pow, np.power),
        (F.atan2, np.arctan2),
        (F.logaddexp, np.logaddexp),
    ]
    for fn, ref in pairs:
        out = fn(Tensor(_INTS), Tensor(y))
        assert out.dtype == np.float32, fn.__name__
        np.testing.assert_allclose(out.numpy(), ref(_INTS * 1.0, y * 1.0), rtol=1e-6)


def test_power_operator_of_ints():
    x = Tensor(_INTS)
    for out, expect in [
        (x**2, _INTS.astype(np.float64) ** 2),
        (2**x, 2.0**_INTS),
        (x**x, _INTS.astype(np.float64) ** _INTS),
    ]:
        assert out.dtype == np.float32
        np.testing.assert_allclose(out.numpy(), expect, rtol=1e-6)


def test_integer_modes_stay_integer():
    x = Tensor(_INTS)
    assert (x * 2).dtype == np.int32
    assert F.abs(-x).dtype == np.int32
    assert F.relu(x).dtype == np.int32
    # MegEngine 1.13's RELU6 keeps integers too: relu6 of int32 [-7..100] is int32 [0..6]
    v = np.array([-7, -1, 0, 3, 6, 7, 100], np.int32)
    for dtype in ["int32", "int16", "int8"]:
        out = F.relu6(Tensor(v.astype(dtype)))
        assert out.dtype == dtype
        np.testing.assert_array_equal(out.numpy(), np.clip(v, 0, 6))
    assert F.relu6([-1, 9]).numpy().tolist() == [0, 6]
    assert F.relu6(Tensor([-1.5, 2.5, 9.0], dtype="float16")).dtype == np.float16


def test_arg_reductions_of_masks():
    # MegEngine 1.13 takes bool tensors: the first True (argmax) or False (argmin), int32
    m = np.random.RandomState(3).rand(4, 6) > 0.5
    m[:, 0] = False  # a column without True: argmax is 0 there, as in NumPy
    for fn, ref in [(F.argmax, np.argmax), (F.argmin, np.argmin)]:
        for axis in [None, 0, 1, -1]:
            out = fn(Tensor(m), axis=axis)
            assert out.dtype == np.int32
            np.testing.assert_array_equal(out.numpy(), ref(m, axis=axis))


def test_float_modes_keep_float16_and_reject_bool():
    assert F.exp(Tensor([1.0, 2.0], dtype="float16")).dtype == np.float16
    with pytest.raises(TypeError, match="float dtypes only"):
        F.exp(Tensor([True, False]))
