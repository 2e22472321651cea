"""Tensor.format, Tensor.qparams, Tensor.set_value and Tensor.reset_zero against MegEngine 1.13's
behaviour, and megengine.quantization's QParams."""

import copy

import numpy as np
import pytest

import megengine as mge
from megengine.autodiff import GradManager
from megengine.quantization import QParams, QuantDtypeMeta, QuantMode, create_qparams


def test_format_is_default_for_every_tensor():
    for t in (mge.Tensor([1.0]), mge.Tensor([1, 2], dtype="int32"), mge.Tensor([1.0]) + 1):
        assert t.format == "default"
    x = mge.Tensor(np.zeros((1, 2, 3, 4), "float32"))
    x.format = "default"
    assert x.format == "default"


@pytest.mark.parametrize(
    "value,exc", [("bogus", ValueError), (3, TypeError), (None, TypeError)]
)  # fmt: skip
def test_format_rejects_unknown_values(value, exc):
    x = mge.Tensor(np.zeros((1, 2, 3, 4), "float32"))
    with pytest.raises(exc, match="Tensor.format"):
        x.format = value
    assert x.format == "default"


def test_format_marks_only_4d_and_5d_tensors():
    # MegEngine: "Unsupport format conversion" for other ranks
    for shape in ((1, 2, 3, 4), (1, 2, 3, 4, 5)):
        values = np.arange(np.prod(shape), dtype="float32").reshape(shape)
        x = mge.Tensor(values)
        x.format = "nhwc"
        assert x.format == "nhwc" and x.shape == shape
        np.testing.assert_array_equal(x.numpy(), values)
        x.format = "nchw"
        assert x.format == "nchw"
        np.testing.assert_array_equal(x.numpy(), values)
        y = mge.Tensor(values, format="nhwc")
        assert y.format == "nhwc"
        np.testing.assert_array_equal(y.numpy(), values)
        y.format = "default"
        assert y.format == "default"
    v = mge.Tensor(np.zeros((2, 3), "float32"))
    with pytest.raises(ValueError, match="4-D or 5-D"):
        v.format = "nhwc"
    assert v.format == "default"
    # an op of a row-major tensor gives a default-format one, whatever x's label
    assert (x + 1).format == "default"
    # the format is the layout: ops that keep it keep the format (as MegEngine's propagate it)
    x.format = "nhwc"
    assert (x + 1).format == "nhwc"
    # an (N, 1, 1, 1) tensor has one memory order, whichever format is asked
    one = mge.Tensor(np.zeros((2, 1, 1, 1), "float32"), format="nhwc")
    assert one.format == "default"


def test_qparams_of_a_float_tensor_is_megengines_default():
    x = mge.Tensor([1.0, 2.0])
    q = x.qparams
    # MegEngine 1.13 prints exactly this for a plain float tensor
    assert (
        repr(q) == "QParams(mode=QuantMode.SYMMERTIC, dtype_meta=None, scale=None, zero_point=None)"
    )
    assert isinstance(q, QParams) and q.mode is QuantMode.SYMMERTIC
    assert x.qparams is q  # kept: changes stay with the tensor
    q.scale = mge.Tensor([0.5])
    assert x.qparams.scale.numpy().tolist() == [0.5]
    y = x * 2  # a tensor made by an op gets its own
    assert y.qparams is not q and y.qparams.scale is None
    assert y.qparams == create_qparams()


def test_set_value_converts_data_and_adopts_tensors():
    x = mge.Tensor([1.0, 2.0])
    obj = x
    with pytest.warns(DeprecationWarning, match="set_value"):
        x.set_value([5, 6])  # data take the tensor's dtype
    assert x is obj and x.dtype == np.float32 and x.numpy().tolist() == [5.0, 6.0]
    with pytest.warns(DeprecationWarning):
        x.set_value(np.arange(3, dtype=np.float64))  # shape may change, as in MegEngine
    assert x.shape == (3,) and x.dtype == np.float32
    with pytest.warns(DeprecationWarning):
        x.set_value(mge.Tensor([7, 8], dtype="int32"))  # a Tensor is taken as it is
    assert x.dtype == np.int32 and x.numpy().tolist() == [7, 8]
    with pytest.warns(DeprecationWarning), pytest.raises((TypeError, ValueError)):
        x.set_value("not numbers")


def test_set_value_keeps_a_parameters_gradmanager_attachment():
    w = mge.Parameter([1.0, 1.0])
    gm = GradManager().attach(w)
    with pytest.warns(DeprecationWarning):
        w.set_value([2.0, 3.0])
    with gm:
        loss = (w * w).sum()
        gm.backward(loss)
    assert w.grad.numpy().tolist() == [4.0, 6.0]


def test_reset_zero_keeps_object_shape_dtype_and_kind():
    p = mge.Parameter(np.array([[1.0, np.nan], [np.inf, -2.0]], "float32"))
    obj = p
    with pytest.warns(DeprecationWarning, match="reset_zero"):
        p.reset_zero()
    assert p is obj and isinstance(p, mge.Parameter)
    assert p.shape == (2, 2) and p.dtype == np.float32
    assert p.numpy().tolist() == [[0.0, 0.0], [0.0, 0.0]]
    for dtype in ("int32", "float16", "bool"):
        t = mge.Tensor(np.ones(3), dtype=dtype)
        with pytest.warns(DeprecationWarning):
            t.reset_zero()
        assert t.dtype == np.dtype(dtype) and not t.numpy().any()


def test_create_qparams_and_dtype_metas():
    assert mge.quantization.QParams is QParams  # a submodule reachable from the package
    q = create_qparams(QuantMode.ASYMMERTIC, "quint8", mge.Tensor([0.1]), mge.Tensor([3.0]))
    assert q.dtype_meta == ("quint8", "Quantized8Asymm", "uint8", 0, 255, True)
    assert create_qparams(dtype_meta="qint4").dtype_meta[3:] == (-8, 7, False)
    assert create_qparams(None).mode is None
    assert q != create_qparams(QuantMode.ASYMMERTIC, "quint8", mge.Tensor([0.2]), mge.Tensor([3.0]))
    assert q == create_qparams(QuantMode.ASYMMERTIC, "quint8", mge.Tensor([0.1]), mge.Tensor([3.0]))
    meta = QuantDtypeMeta("mine", None, "int8", -4, 3)
    assert meta.is_unsigned is False and copy.deepcopy(meta) is meta
    other = create_qparams()
    other.update(q)
    assert other == q
    with pytest.raises(ValueError, match="unknown quantized dtype 'qint7'"):
        create_qparams(dtype_meta="qint7")
    with pytest.raises(TypeError, match="mode must be a QuantMode"):
        create_qparams(mode=1)
    with pytest.raises(TypeError, match="dtype_meta must be"):
        create_qparams(dtype_meta=8)
    with pytest.raises(TypeError, match="np_dtype_str"):
        QuantDtypeMeta("x", None, 8, 0, 1)


@pytest.mark.parametrize(
    "value_format, expect",
    [("nchw", "nchw"), ("default", "default"), ("nhwc", "nhwc"), (None, "default")],
)
def test_whole_assignment_takes_the_values_format(value_format, expect):
    data = np.arange(24, dtype=np.float32).reshape(1, 2, 3, 4)
    x = mge.Tensor(data[::-1].copy(), format="nhwc")
    value = data if value_format is None else mge.Tensor(data, format=value_format)
    x[...] = value
    assert x.format == expect
    np.testing.assert_array_equal(x.numpy(), data)


@pytest.mark.parametrize("fmt", ["nhwc", "nchw", "default"])
def test_partial_assignment_keeps_the_format(fmt):
    data = np.arange(24, dtype=np.float32).reshape(1, 2, 3, 4)
    x = mge.Tensor(data, format=fmt)
    x[:, :1, 1:] = 0
    expect = data.copy()
    expect[:, :1, 1:] = 0
    assert x.format == fmt
    np.testing.assert_array_equal(x.numpy(), expect)
