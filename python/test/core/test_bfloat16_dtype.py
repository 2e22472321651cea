"""bfloat16 as a NumPy dtype (``megengine.core.tensor.dtype.bfloat16``, ml_dtypes'): arrays of
it make bfloat16 tensors, and a bfloat16 tensor's ``dtype`` and ``numpy()`` are of it, as
MegEngine 1.13's are of its own ``pybfloat16``. Expected values are MegEngine 1.13's."""

import io
import pickle

import numpy as np
import pytest

import megengine as mge
import megengine.functional as F
from megengine.core.tensor.dtype import bfloat16, is_bfloat16


def test_numpy_rounds_to_bfloat16_as_megengine():
    got = np.array([0.5, 0.13425, 3.4687, -1.34976, -9.34673, 0.0], dtype=bfloat16)
    want = [0.5, 0.1337890625, 3.46875, -1.3515625, -9.375, 0.0]
    assert got.astype(np.float32).tolist() == want
    got = np.array([0.34985, 10.943, -0.5, -19.3, 21.49673], dtype=bfloat16)
    assert got.astype(np.float32).tolist() == [0.349609375, 10.9375, -0.5, -19.25, 21.5]
    # halfway cases go to the even neighbour
    ties = np.array([1.00390625, 1.01171875], np.float32).astype(bfloat16)
    assert ties.astype(np.float32).tolist() == [1.0, 1.015625]
    for dt in (np.int8, np.int16, np.int32, np.float32, np.float64):
        ints = np.array([34, 10, -5, -19, 21], dtype=dt)
        assert ints.astype(bfloat16).astype(dt).tolist() == ints.tolist()


def test_tensor_of_bfloat16_array_and_dtype():
    data = np.array([-3.4, 1.394683, 2.323497, -7.439948, -5.2397], dtype=bfloat16)
    t = mge.Tensor(data, dtype=bfloat16)
    assert t._dtype_name == "bfloat16" and t.dtype == bfloat16
    out = t.numpy()
    assert out.dtype == bfloat16
    assert out.astype(np.float32).tolist() == [-3.40625, 1.3984375, 2.328125, -7.4375, -5.25]
    # the array's dtype alone makes a bfloat16 tensor; the name works as a dtype too
    assert mge.Tensor(data)._dtype_name == "bfloat16"
    assert mge.Tensor([1.0, 2.3], dtype="bfloat16").dtype == bfloat16
    # astype both ways, and ops on bfloat16 stay bfloat16
    x = mge.Tensor([1.0, 2.3, 0.13425]).astype(bfloat16)
    assert x.numpy().astype(np.float32).tolist() == [1.0, 2.296875, 0.1337890625]
    assert x.astype(np.float32).dtype == np.float32
    assert F.relu(x).dtype == bfloat16 and (x * x).dtype == bfloat16
    assert float(x[1]) == 2.296875
    assert repr(x) == f"Tensor([1.     2.2969 0.1338], dtype=bfloat16, device={x.device})"


def test_is_bfloat16():
    assert is_bfloat16(bfloat16) and is_bfloat16("bfloat16")
    assert not is_bfloat16(np.float16) and not is_bfloat16("float32")
    assert not is_bfloat16(object())


def test_pickle_and_save_keep_bfloat16():
    x = np.ascontiguousarray(np.random.default_rng(0).random(64), dtype=bfloat16)
    y = pickle.loads(pickle.dumps(x, pickle.HIGHEST_PROTOCOL))
    assert x.dtype is y.dtype and x.tobytes() == y.tobytes()
    t = mge.Tensor(x)
    for back in (pickle.loads(pickle.dumps(t)), mge.load(_saved(t))):
        assert back._dtype_name == "bfloat16"
        assert back.numpy().tobytes() == x.tobytes()
    # saved as its float32 values, as before, so a plain pickle needs no ml_dtypes to read it
    assert t.__reduce__()[2]["data"].dtype == np.float32


def _saved(obj):
    buf = io.BytesIO()
    mge.save(obj, buf)
    buf.seek(0)
    return buf


def test_other_void_dtypes_are_refused():
    with pytest.raises(TypeError, match="unsupported numpy dtype"):
        mge.Tensor(np.zeros(2, dtype="V2"))
