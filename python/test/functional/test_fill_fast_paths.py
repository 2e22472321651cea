"""zeros/ones/full and the *_like calls take a short path for shapes of plain ints and Python
numbers (their Fill op looked up by value and dtype): the results must be those of the general
path, which numpy-integer shapes and numpy values still take."""

import math

import numpy as np
import pytest

import megengine as mge
import megengine.functional as F
from megengine.functional import tensor as _tensor


def same(a, b):
    """Same dtype, shape, device and bits."""
    assert a.dtype == b.dtype and a.shape == b.shape and a.device == b.device
    assert a.numpy().tobytes() == b.numpy().tobytes()


def general(shape):
    # numpy integers are not plain ints: the general path
    return tuple(np.int64(s) for s in shape)


@pytest.mark.parametrize("shape", [(), (0,), (4, 4), (2, 0, 3), (1, 1, 1, 1, 1, 1, 1)])
@pytest.mark.parametrize("dtype", ["float32", "float16", "int32", "int8", "uint8", "bool"])
def test_plain_shapes_match_the_general_path(shape, dtype):
    for call in (F.zeros, F.ones):
        same(call(shape, dtype=dtype), call(general(shape), dtype=dtype))
        same(call(list(shape), dtype=dtype), call(general(shape), dtype=dtype))
    for value in (0, 1, 3, True, False, 2.5, -7):
        same(F.full(shape, value, dtype=dtype), F.full(general(shape), value, dtype=dtype))
    x = F.full(shape, 5, dtype=dtype)
    same(F.zeros_like(x), F.zeros(general(shape), dtype=dtype))
    same(F.ones_like(x), F.ones(general(shape), dtype=dtype))
    same(F.full_like(x, 2), F.full(general(shape), 2, dtype=dtype))


def test_an_int_shape():
    same(F.zeros(3), F.zeros((np.int64(3),)))
    same(F.full(0, 2.0), F.full((np.int64(0),), 2.0))


def test_value_dtype_inference_does_not_depend_on_the_call_order():
    # 1 == 1.0 == True: a cache keyed by the value alone would hand one its neighbour's dtype
    for order in ((1, 1.0, True), (True, 1.0, 1), (1.0, True, 1)):
        for value in order:
            t = F.full((2,), value)
            want = {bool: "bool", int: "int32", float: "float32"}[type(value)]
            assert t.dtype == np.dtype(want), (order, value)
            assert t.numpy().tolist() == [value, value]


def test_negative_zero_keeps_its_sign():
    # -0.0 == 0.0 == 0: each must still write its own bits, in either order
    for values in ((0.0, -0.0), (-0.0, 0.0), (0, -0.0)):
        for v in values:
            for t in (F.full((3,), v), F.full_like(F.ones((3,)), v)):
                assert np.signbit(t.numpy()).tolist() == [math.copysign(1, v) < 0] * 3, values
    assert not np.signbit(F.zeros((3,)).numpy()).any()


def test_nan_and_inf():
    assert np.isnan(F.full((2,), float("nan")).numpy()).all()
    assert np.isnan(F.full_like(F.ones((2,)), float("nan")).numpy()).all()
    assert F.full((2,), -math.inf).numpy().tolist() == [-math.inf] * 2
    assert F.full((2,), math.inf, dtype="float16").numpy().tolist() == [math.inf] * 2


def test_values_fill_cannot_carry_take_numpy():
    big = 2**31 - 1
    assert F.full((2,), big).numpy().tolist() == [big, big]
    assert F.full_like(F.zeros((2,), dtype="int32"), big).numpy().tolist() == [big, big]
    # a float32 result rounds the same through either path
    same(
        F.full((2,), 2**40 + 1, dtype="float32"), F.full(general((2,)), 2**40 + 1, dtype="float32")
    )


def test_dtype_spellings_and_devices():
    for dtype in ("int16", np.int16, np.dtype("int16")):
        t = F.full((2,), 3, dtype=dtype)
        assert t.dtype == np.int16 and t.numpy().tolist() == [3, 3]
    for device in (None, "cpu1", "cpu1:0", F.zeros(1, device="cpu1").device):
        assert F.zeros((2,), device=device).device == F.zeros(general((2,)), device=device).device
    assert F.ones((2,), device="cpu1").device == "cpu1"


def test_errors_are_the_general_paths():
    with pytest.raises(TypeError):
        F.zeros((2,), dtype=[1])
    with pytest.raises(TypeError):
        F.full((2,), 1, dtype="void")
    with pytest.raises(ValueError, match=r"zeros: negative dimension in shape \(2, -1\)"):
        F.zeros((2, -1))
    with pytest.raises(ValueError, match=r"full: negative dimension in shape \(-1,\)"):
        F.full(-1, 1.5)
    with pytest.raises(TypeError, match=r"ones: shape must be an int or a sequence of ints"):
        F.ones([2, 1.5])
    assert F.zeros((True, 2)).shape == (1, 2)  # a bool is an int, as in the general path


def test_the_op_cache_is_bounded():
    limit = _tensor._FILL_OPS_LIMIT
    for i in range(limit + 10):
        v = 0.5 + i
        assert F.full((1,), v).numpy().tolist() == [v]
    assert len(_tensor._FILL_OPS) <= limit
    assert F.full((1,), 0.5).numpy().tolist() == [0.5]


def test_fills_inside_a_trace():
    from megengine.jit import trace

    @trace(symbolic=True)
    def f(x):
        return F.zeros((2, 2)) + F.full((2, 2), 1.5) + F.ones_like(x)

    x = mge.Tensor(np.zeros((2, 2), np.float32))
    for _ in range(2):
        assert f(x).numpy().tolist() == [[2.5, 2.5], [2.5, 2.5]]
