"""megengine.core.tensor.utils's shape helpers and the shape forms MegEngine code passes."""

import numpy as np
import pytest

import megengine as mge
from megengine.core.tensor.utils import astensor1d, make_shape_tuple


@pytest.mark.parametrize(
    "value, expect, dtype",
    [
        ([1, 2, 3], [1, 2, 3], "int32"),
        ((2, -1), [2, -1], "int32"),
        (np.array([4, 5], np.int32), [4, 5], "int32"),
        ([1.5, 2], [1.5, 2.0], "float32"),
        ([1, mge.Tensor(2), 3], [1, 2, 3], "int32"),
        ([mge.Tensor([7]), mge.Tensor(8)], [7, 8], "int32"),
        ([1, mge.Tensor(2.5)], [1.0, 2.5], "float32"),
    ],
)
def test_astensor1d_values_and_dtypes(value, expect, dtype):
    out = astensor1d(value, mge.Tensor(0))
    assert isinstance(out, mge.Tensor) and out.ndim == 1
    assert out.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(out.numpy(), expect)
    forced = astensor1d(value, dtype="float32")
    assert forced.dtype == np.float32
    np.testing.assert_array_equal(forced.numpy(), np.asarray(expect, np.float32))


def test_astensor1d_passes_tensors_through_and_takes_the_reference_device():
    t = mge.Tensor([1, 2], dtype="int16")
    assert astensor1d(t, dtype="float32") is t
    ref = mge.Tensor([0.0], device="cpu1")
    assert astensor1d([1, 2], ref).device == ref.device
    assert astensor1d([1, 2], ref, device="cpu0").device == mge.Tensor(0, device="cpu0").device


def test_make_shape_tuple():
    assert make_shape_tuple(mge.Tensor([3, 4])) == (3, 4)
    assert make_shape_tuple([2, mge.Tensor(5), np.int64(6)]) == (2, 5, 6)
    shape = make_shape_tuple(mge.Tensor(np.zeros((2, 0, 3))).shape)
    assert shape == (2, 0, 3) and all(type(s) is int for s in shape)


def test_tensor_reshape_takes_a_shape_tensor_and_tuple_shape():
    x = mge.Tensor(np.arange(12, dtype=np.float32))
    np.testing.assert_array_equal(
        x.reshape(mge.Tensor([3, -1])).numpy(), np.arange(12).reshape(3, 4)
    )
    np.testing.assert_array_equal(x.reshape(astensor1d((2, 6), x)).numpy().shape, (2, 6))
    assert x.reshape(2, 6)._tuple_shape == (2, 6)
    assert mge.Tensor(np.zeros((5, 0)))._tuple_shape == (5, 0)
