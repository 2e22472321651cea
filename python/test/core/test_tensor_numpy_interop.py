"""MegEngine's rules where tensors meet NumPy and Python's copy module: a NumPy ufunc of a
tensor gives a Tensor on the tensor's device, a tuple inside an index is an integer array,
min/max reduce bool tensors, and copies keep quantization parameters but not the name."""

import copy

import numpy as np
import pytest

import megengine as mge
from megengine.core._trace_option import set_symbolic_shape, use_symbolic_shape


def test_numpy_ufunc_of_a_tensor_is_a_tensor():
    x = np.array([1, 2, 3], dtype=np.int32)
    t = mge.Tensor(x)
    y = np.array([1, 0, 3], dtype=np.int32)
    out = np.add(t, y)
    assert isinstance(out, mge.Tensor) and out.device == t.device
    np.testing.assert_array_equal(out.numpy(), x + y)
    eq = np.equal(t, y)
    assert isinstance(eq, mge.Tensor)
    np.testing.assert_array_equal(eq.numpy(), x == y)
    np.testing.assert_allclose(np.exp(mge.Tensor([0.0, 1.0])).numpy(), [1.0, np.e], rtol=1e-6)
    # np.asarray still gives the values as an ndarray
    assert type(np.asarray(t)) is np.ndarray


def test_numpy_ufunc_result_narrows_64_bits():
    out = np.multiply(mge.Tensor([1.5, 2.0]), np.array([2.0, 4.0]))  # float64 in NumPy
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out.numpy(), [3.0, 8.0])


@pytest.mark.parametrize(
    "index",
    [
        ((0, 4, 2), slice(None)),
        (slice(None), (3, 1)),
        ((1, 2), (0, 4)),
        (1, (0, 0, 2)),
    ],
)
def test_tuple_inside_an_index_is_an_array(index):
    x = np.arange(25, dtype=np.int32).reshape(5, 5)
    t = mge.Tensor(x)
    # NumPy's reading of the same index: each inner tuple as a list
    np_index = tuple(list(i) if isinstance(i, tuple) else i for i in index)
    np.testing.assert_array_equal(t[index].numpy(), x[np_index])
    value = np.full(x[np_index].shape, -1, np.int32)
    t[index] = value
    x[np_index] = value
    np.testing.assert_array_equal(t.numpy(), x)


def test_top_level_tuple_stays_a_multi_axis_index():
    x = np.arange(25, dtype=np.int32).reshape(5, 5)
    assert mge.Tensor(x)[(1, 2)].item() == x[1, 2]


@pytest.mark.parametrize("method", ["min", "max"])
@pytest.mark.parametrize("axis", [None, 0, 1, -1])
def test_min_max_of_bool_tensors(method, axis):
    x = np.array([[True, False, True], [True, True, True]])
    out = getattr(mge.Tensor(x), method)(axis=axis)
    assert out.dtype == np.bool_
    np.testing.assert_array_equal(out.numpy(), getattr(x, method)(axis=axis))


def test_default_name_is_empty_and_copies_drop_it():
    assert mge.Tensor(0).name == "" and mge.Parameter(0).name == ""
    t = mge.Tensor([1.0], name="t")
    assert copy.copy(t).name == "" and copy.deepcopy(t).name == ""


def test_copies_keep_quantization_parameters():
    t = mge.Tensor([1.0, 2.0])
    t.qparams.scale = mge.Tensor(0.5)
    shallow, deep = copy.copy(t), copy.deepcopy(t)
    assert shallow.qparams is t.qparams
    assert deep.qparams is not t.qparams and deep.qparams.scale.item() == 0.5
    for c in (shallow, deep):
        assert c is not t
        np.testing.assert_array_equal(c.numpy(), t.numpy())
    # a tensor whose qparams were never read gets fresh ones
    fresh = copy.copy(mge.Tensor([1.0]))
    assert fresh.qparams.scale is None
    p = copy.deepcopy(mge.Parameter([3.0]))
    assert isinstance(p, mge.Parameter) and p.item() == 3.0


def test_symbolic_shape_option():
    assert use_symbolic_shape() is False
    assert set_symbolic_shape(False) is False
    with pytest.raises(NotImplementedError):
        set_symbolic_shape(True)
    assert isinstance(mge.Tensor([1, 2]).shape, tuple)
