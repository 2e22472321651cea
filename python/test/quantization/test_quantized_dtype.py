"""Quantized dtypes (``megengine.core.tensor.dtype``): the NumPy dtypes with MegEngine's
metadata, tensors that carry them, ``astype`` (rounding half away from zero, saturation) and
its round trips, ``numpy()``, printing and ``mge.save``/``load``. Expected values are worked out
by hand or by NumPy from MegEngine's formulas (q = round(x * float32(1 / scale)) + zero_point)."""

import io

import numpy as np
import pytest

import megengine as mge
import megengine.functional as F
from megengine.core.tensor import dtype as D


def _away(x):
    # round half away from zero, MegEngine's (NumPy's np.round is half to even)
    return np.sign(x) * np.floor(np.abs(x) + 0.5)


def test_dtype_metadata_and_getters():
    q = D.qint8(0.1)
    assert q == np.int8 and q.metadata == {"mgb_dtype": {"name": "QuantizedS8", "scale": 0.1}}
    u = D.quint8(0.5, 3)
    assert D.get_scale(u) == 0.5 and D.get_zero_point(u) == 3
    assert D.qint32(2.0).metadata["mgb_dtype"]["name"] == "QuantizedS32"
    assert D.is_quantize(q) and not D.is_quantize(np.int8) and not D.is_quantize("float32")
    assert D.is_dtype_equal(q, D.qint8(0.1)) and not D.is_dtype_equal(q, D.qint8(0.2))
    with pytest.raises(ValueError):
        D.get_zero_point(q)
    with pytest.raises(ValueError):
        D.get_scale(np.float32)
    with pytest.raises(ValueError):
        D.quint8(0.1, 256)
    with pytest.raises(ValueError):
        D.quint8(0.1, None)
    assert D.get_dtype_bit("qint4") == 4
    from megengine.quantization.utils import QuantDtypeMeta, create_quantized_dtype

    assert QuantDtypeMeta is D.QuantDtypeMeta and create_quantized_dtype is D.create_quantized_dtype


@pytest.mark.parametrize(
    "make, lo, hi, zp",
    [(lambda: D.qint8(0.1), -128, 127, 0), (lambda: D.quint8(0.1, 128), 0, 255, 128)],
)
def test_astype_rounds_half_away_and_saturates(make, lo, hi, zp):
    # -10.65 and 0.35: x * float32(1 / 0.1) rounds to a half (-106.5, 3.5) where x / 0.1 does not;
    # MegEngine 1.13 gives -107 and 4 (+ zp) for them
    x = np.array(
        [0.05, 0.15, -0.05, -0.15, 0.25, 1.26, 100.0, -100.0, 0.0, -10.65, 0.35], np.float32
    )
    q = mge.Tensor(x).astype(make())
    want = np.clip(_away(x * (np.float32(1) / np.float32(0.1))) + zp, lo, hi)
    assert list(want[-2:] - zp) == [-107, 4]
    assert D.is_dtype_equal(q.dtype, make())
    np.testing.assert_array_equal(q.numpy(), want)
    assert D.is_dtype_equal(q.numpy().dtype, make())
    # back to float: (q - zp) * scale, and a second quantisation changes nothing
    back = q.astype("float32").numpy()
    np.testing.assert_allclose(back, (want - zp) * np.float32(0.1), rtol=1e-6)
    np.testing.assert_array_equal(mge.Tensor(back).astype(make()).numpy(), want)


def test_ties_are_rounded_away_from_zero():
    x = np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5], np.float32)
    np.testing.assert_array_equal(mge.Tensor(x).astype(D.qint8(1.0)).numpy(), [1, 2, 3, -1, -2, -3])
    np.testing.assert_array_equal(
        mge.Tensor(x).astype(D.quint8(1.0, 10)).numpy(), [11, 12, 13, 9, 8, 7]
    )


def test_requantise_and_other_conversions():
    acc = mge.Tensor(np.array([5, 15, 25, -5, -15, -25, 5000], np.int32)).astype(D.qint32(1.0))
    np.testing.assert_array_equal(acc.numpy(), [5, 15, 25, -5, -15, -25, 5000])
    np.testing.assert_array_equal(acc.astype(D.qint8(10.0)).numpy(), [1, 2, 3, -1, -2, -3, 127])
    q = mge.Tensor(np.array([5, 15, -5, -15], np.float32)).astype(D.qint8(1.0))
    np.testing.assert_array_equal(q.astype(D.quint8(1.0, 3)).numpy(), [8, 18, 0, 0])
    # to a plain integer dtype: the value, truncated (MegEngine's astype("int8"))
    q = mge.Tensor(np.array([1.3, -1.3, 12.7], np.float32)).astype(D.qint8(0.1))
    np.testing.assert_array_equal(q.astype("int8").numpy(), [1, -1, 12])
    assert q.astype("int8").dtype.metadata is None


def test_tensor_from_quantized_array_keeps_dtype_and_integers():
    arr = np.array([1, -2, 3], dtype=D.qint8(0.25))
    t = mge.Tensor(arr)
    assert D.is_dtype_equal(t.dtype, D.qint8(0.25))
    np.testing.assert_array_equal(t.numpy(), [1, -2, 3])
    # MegEngine casts array data into the storage as NumPy does (no quantisation)
    t = mge.Tensor(np.array([1.3, 2.0], np.float32), dtype=D.qint8(0.5))
    np.testing.assert_array_equal(t.numpy(), [1, 2])
    p = mge.Parameter(arr)
    assert D.is_dtype_equal(p.dtype, D.qint8(0.25))


def test_byte_moves_keep_the_quantized_dtype():
    q = mge.Tensor(np.arange(6, dtype=np.float32)).astype(D.qint8(0.5))
    r = q.reshape(2, 3)
    assert D.is_dtype_equal(r.dtype, q.dtype)
    np.testing.assert_array_equal(r.numpy(), np.arange(0, 12, 2).reshape(2, 3))
    np.testing.assert_array_equal(F.transpose(r, (1, 0)).numpy(), r.numpy().T)
    c = F.concat([q, q])
    assert D.is_dtype_equal(c.dtype, q.dtype) and c.shape == (12,)
    np.testing.assert_array_equal(q[1:3].numpy(), [2, 4])
    other = q.astype(D.qint8(0.25))
    with pytest.raises(Exception, match="dtype"):
        F.concat([q, other])


def test_print_and_save_load():
    q = mge.Tensor(np.array([0.3, -0.3], np.float32)).astype(D.quint8(0.1, 128))
    assert "131" in repr(q) and "125" in repr(q)
    buf = io.BytesIO()
    mge.save({"q": q}, buf)
    buf.seek(0)
    loaded = mge.load(buf)["q"]
    assert D.is_dtype_equal(loaded.dtype, q.dtype)
    np.testing.assert_array_equal(loaded.numpy(), q.numpy())


def test_load_state_dict_takes_the_checkpoints_quantized_dtype():
    class Net(mge.module.Module):
        def __init__(self, scale):
            super().__init__()
            w = mge.Tensor(np.array([0.5, -0.25, 2.0], np.float32)).astype(D.qint8(scale))
            self.w = mge.Parameter(w.numpy())

        def forward(self, x):
            return x

    saved = Net(0.01)
    buf = io.BytesIO()
    mge.save(saved.state_dict(), buf)
    buf.seek(0)
    net = Net(0.5)
    net.load_state_dict(mge.load(buf))
    # MegEngine 1.13 loads the values with the checkpoint's scale, not the module's
    assert D.is_dtype_equal(net.w.dtype, D.qint8(0.01))
    np.testing.assert_array_equal(net.w.numpy(), np.array([50, -25, 127], np.int8))
    np.testing.assert_allclose(net.w.astype("float32").numpy(), [0.5, -0.25, 1.27], rtol=1e-6)
    # a float checkpoint entry replaces a quantized tensor by a float one, as MegEngine's does
    net.load_state_dict({"w": np.array([1.0, 2.0, 3.0], np.float32)})
    assert net.w.dtype == np.float32
    with pytest.raises(ValueError, match="shape"):
        net.load_state_dict({"w": np.zeros(2, np.int8)})


def test_numpy_conversions():
    x = np.array([0.26, -0.26, 20.0], np.float32)
    q = D.convert_to_qint8(x, D.qint8(0.1))
    np.testing.assert_array_equal(q, [3, -3, 127])
    np.testing.assert_allclose(D.convert_from_qint8(q), [0.3, -0.3, 12.7], rtol=1e-6)
    u = D.convert_to_quint8(x, D.quint8(0.1, 10))
    np.testing.assert_array_equal(u, [13, 7, 210])
    np.testing.assert_allclose(D.convert_from_quint8(u), [0.3, -0.3, 20.0], rtol=1e-6)
    with pytest.raises(ValueError):
        D.convert_to_qint8(x, D.quint8(0.1, 10))
    with pytest.raises(ValueError):
        D.convert_from_qint32(q)
