"""The per-call paths of quantized tensors (docs/architecture.md, *Per-call cost of quantized
tensors, devices and assignment*): ``Tensor.dtype`` of a quantized tensor and the quantized
dtype makers hand out kept dtype objects, ``astype`` and ``conv_bias_activation`` keep their
ops, a quantized Linear reads its scales from those dtypes. Each against values worked out with
NumPy and against freshly built objects, with the errors, the caches' bounds, a dtype whose
metadata dict was changed after it was handed out, and jit.trace."""

import math

import numpy as np
import pytest

import megengine as mge
import megengine.functional as F
import megengine.module as M
from megengine.core.tensor import array_method, quant_dtype
from megengine.core.tensor import dtype as D
from megengine.functional import quantized as FQ
from megengine.jit import trace
from megengine.quantization import quantize, quantize_qat

X = np.array([[-1.26, 0.04, 0.35, 12.7], [0.25, -0.25, 3.0, -20.0]], np.float32)


def _away(x):
    return np.sign(x) * np.floor(np.abs(x) + 0.5)


def _fresh(dtype):
    # the dtype as np.dtype builds it, from a copy of its metadata: what every read made before
    info = dict(dtype.metadata["mgb_dtype"])
    return np.dtype(dtype.str, metadata={"mgb_dtype": info})


def _same_dtype(a, b):
    assert a == b and hash(a) == hash(b) and str(a) == str(b) and repr(a) == repr(b)
    assert a.metadata == b.metadata and D.is_dtype_equal(a, b)


# ---- Tensor.dtype of a quantized tensor ------------------------------------------------------


@pytest.mark.parametrize(
    "make",
    [lambda s: D.qint8(s), lambda s: D.quint8(s, 7), lambda s: D.qint32(s)],
    ids=["qint8", "quint8", "qint32"],
)
def test_tensor_dtype_is_kept_and_equals_a_fresh_one(make):
    for scale in (0.1, 0.25, 3e-3):
        q = mge.Tensor(X).astype(make(scale))
        dt = q.dtype
        assert q.dtype is dt  # one object per (kind, scale, zero point)
        _same_dtype(dt, _fresh(make(np.float32(scale))))
        # the runtime keeps the scale in float32: the dtype says so
        assert D.get_scale(dt) == float(np.float32(scale))
        assert D.is_quantize(dt)
    a, b = mge.Tensor(X).astype(make(0.1)), mge.Tensor(X).astype(make(0.2))
    assert a.dtype is not b.dtype and not D.is_dtype_equal(a.dtype, b.dtype)


def test_zero_points_and_kinds_are_kept_apart():
    x = mge.Tensor(X)
    u3, u4 = x.astype(D.quint8(0.5, 3)), x.astype(D.quint8(0.5, 4))
    s8, s32 = x.astype(D.qint8(0.5)), x.astype(D.qint32(0.5))
    assert D.get_zero_point(u3.dtype) == 3 and D.get_zero_point(u4.dtype) == 4
    assert s8.dtype.metadata["mgb_dtype"]["name"] == "QuantizedS8"
    assert s32.dtype.metadata["mgb_dtype"]["name"] == "QuantizedS32"
    assert str(s8.dtype) == "int8" and str(s32.dtype) == "int32" and str(u3.dtype) == "uint8"
    with pytest.raises(ValueError, match="symmetric"):
        D.get_zero_point(s8.dtype)
    with pytest.raises(ValueError, match="not a quantized dtype"):
        D.get_scale(x.dtype)


def test_tensor_dtype_after_its_metadata_was_changed():
    # numpy dtypes are immutable, their metadata's inner dict is not: a changed one is not
    # handed out again
    q = mge.Tensor(X).astype(D.qint8(0.5))
    q.dtype.metadata["mgb_dtype"]["scale"] = 9.0
    assert D.get_scale(q.dtype) == 0.5
    q.dtype.metadata["mgb_dtype"]["zero_point"] = 1
    assert "zero_point" not in q.dtype.metadata["mgb_dtype"]
    u = mge.Tensor(X).astype(D.quint8(0.5, 2))
    u.dtype.metadata["mgb_dtype"]["zero_point"] = 5
    assert D.get_zero_point(u.dtype) == 2
    u.dtype.metadata["mgb_dtype"]["name"] = "QuantizedS8"
    assert u.dtype.metadata["mgb_dtype"]["name"] == "Quantized8Asymm"


def test_many_scales_each_read_right():
    # more scales than the kept dtypes' bound (1024): each read still names its own scale
    x = mge.Tensor(X)
    scales = [0.001 * (k + 1) for k in range(1100)]
    tensors = [x.astype(D.qint8(s)) for s in scales]
    for s, t in zip(scales, tensors):
        assert D.get_scale(t.dtype) == float(np.float32(s))
    for s, t in list(zip(scales, tensors))[:5]:
        assert D.get_scale(t.dtype) == float(np.float32(s))


# ---- the dtype makers -------------------------------------------------------------------------


def test_makers_hand_out_one_object_per_parameters():
    assert D.qint8(0.1) is D.qint8(0.1)
    assert D.quint8(0.1, 3) is D.quint8(0.1, 3)
    assert D.quint8(0.1, 3) is not D.quint8(0.1, 4)
    assert D.qint8(0.1) is not D.qint32(0.1)
    _same_dtype(
        D.qint8(0.1),
        np.dtype("int8", metadata={"mgb_dtype": {"name": "QuantizedS8", "scale": 0.1}}),
    )
    assert D.get_zero_point(D.quint8(0.1, 4)) == 4 and D.get_scale(D.qint8(0.25)) == 0.25
    # other scale and zero-point types give the same values (converted) as before
    assert D.get_scale(D.qint8(np.float32(0.1))) == float(np.float32(0.1))
    assert D.get_zero_point(D.quint8(0.1, np.int32(4))) == 4
    assert type(D.get_zero_point(D.quint8(0.1, 4.0))) is int
    assert D.get_scale(D.qint8(1)) == 1.0 and type(D.get_scale(D.qint8(1))) is float


def test_makers_keep_the_sign_of_zero_and_nan():
    assert math.copysign(1.0, D.get_scale(D.qint8(0.0))) == 1.0
    assert math.copysign(1.0, D.get_scale(D.qint8(-0.0))) == -1.0
    assert math.copysign(1.0, D.get_scale(D.qint8(0.0))) == 1.0
    assert math.isnan(D.get_scale(D.qint8(float("nan"))))


def test_makers_raise_as_before_after_a_kept_dtype():
    D.quint8(0.1, 3)
    with pytest.raises(ValueError, match="zero_point should be within"):
        D.quint8(0.1, 256)
    with pytest.raises(ValueError, match="zero_point should be an integer"):
        D.quint8(0.1, None)
    with pytest.raises(ValueError, match="zero_point should be an integer"):
        D.quint8(0.1, 2.5)
    with pytest.raises(ValueError, match="could not convert"):
        D.qint8("a")
    # a meta of the same runtime dtype and storage with another range checks its own range
    narrow = D.QuantDtypeMeta("quint8_lo", "Quantized8Asymm", "uint8", 0, 15)
    D.create_quantized_dtype(D._builtin_quant_dtypes["quint8"], 0.5, 200)
    with pytest.raises(ValueError, match=r"\[0, 15\]"):
        D.create_quantized_dtype(narrow, 0.5, 200)
    with pytest.raises(ValueError, match="without cname"):
        D.create_quantized_dtype(D._builtin_quant_dtypes["qint2"], 0.5, None)


def test_a_changed_dtype_is_not_handed_out_again():
    dt = D.qint8(0.75)
    dt.metadata["mgb_dtype"]["scale"] = 2.0
    assert D.get_scale(D.qint8(0.75)) == 0.75
    u = D.quint8(0.75, 1)
    del u.metadata["mgb_dtype"]["zero_point"]
    assert D.get_zero_point(D.quint8(0.75, 1)) == 1


def test_kept_dtypes_are_bounded():
    for k in range(quant_dtype._MADE_MAX + 10):
        D.qint8(1.0 + k)
    assert len(quant_dtype._made) <= quant_dtype._MADE_MAX
    assert D.get_scale(D.qint8(1.0)) == 1.0


# ---- astype, conv_bias_activation, Linear ---------------------------------------------------


@pytest.mark.parametrize("scale", [0.1, 0.05, 0.3])
def test_astype_of_each_scale_quantizes_with_it(scale):
    s = np.float32(scale)
    q = mge.Tensor(X).astype(D.qint8(scale)).numpy()
    np.testing.assert_array_equal(q.astype(np.int32), np.clip(_away(X * (1 / s)), -128, 127))
    u = mge.Tensor(X).astype(D.quint8(scale, 100)).numpy()
    np.testing.assert_array_equal(u.astype(np.int32), np.clip(_away(X * (1 / s)) + 100, 0, 255))


def test_astype_ops_are_bounded():
    x = mge.Tensor(X)
    for k in range(array_method._SHAPE_KEYED_OPS_LIMIT + 5):
        x.astype(D.qint32(1.0 + k))
    assert len(array_method._quantize_ops) <= array_method._SHAPE_KEYED_OPS_LIMIT


def _conv_inputs():
    rng = np.random.default_rng(3)
    x = mge.Tensor(rng.normal(size=(2, 3, 5, 5)).astype(np.float32)).astype(D.qint8(0.05))
    w = mge.Tensor(rng.normal(size=(4, 3, 3, 3)).astype(np.float32)).astype(D.qint8(0.02))
    b = mge.Tensor(rng.normal(size=(1, 4, 1, 1)).astype(np.float32))
    return x, w, b


def _conv_reference(x, w, b, stride, padding):
    xf, wf = x.astype("float32"), w.astype("float32")
    bias = b.astype(D.qint32(0.05 * 0.02)).astype("float32")
    return F.conv2d(xf, wf, bias, stride=stride, padding=padding).numpy()


def test_conv_bias_ops_are_per_parameters():
    x, w, b = _conv_inputs()
    for stride, padding in ((1, 0), (2, 1), (1, 1), (2, 0)):
        got = FQ.conv_bias_activation(x, w, b, None, stride=stride, padding=padding)
        want = _conv_reference(x, w, b, stride, padding)
        np.testing.assert_allclose(got.astype("float32").numpy(), want, rtol=1e-6, atol=1e-6)
    relu = FQ.conv_bias_activation(x, w, b, None, nonlinear_mode="relu")
    np.testing.assert_allclose(
        relu.astype("float32").numpy(), np.maximum(_conv_reference(x, w, b, 1, 0), 0), atol=1e-6
    )


def _outcome(fn, *args, **kwargs):
    try:
        return fn(*args, **kwargs).astype("float32").numpy().tolist()
    except Exception as e:  # noqa: BLE001 - the outcome, whatever it is, is compared
        return type(e), str(e)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"stride": 1.0},
        {"stride": True},
        {"stride": (1, 1)},
        {"nonlinear_mode": "tanh"},
        {"nonlinear_mode": "RELU"},
        {"compute_mode": "float32"},
        {"conv_mode": "corr"},
        {"conv_mode": "CONVOLUTION"},
        {"groups": 0},
        {"groups": 2},
    ],
)
def test_conv_bias_arguments_after_a_kept_op(kwargs):
    # the same result or error with the op kept for the defaults as with nothing kept
    x, w, b = _conv_inputs()
    FQ.conv_bias_activation(x, w, b, None)
    _outcome(FQ.conv_bias_activation, x, w, b, None, **kwargs)  # kept, where it is valid
    kept = _outcome(FQ.conv_bias_activation, x, w, b, None, **kwargs)
    FQ._conv_bias_ops.clear()
    assert _outcome(FQ.conv_bias_activation, x, w, b, None, **kwargs) == kept


def _qlinear(data):
    net = quantize_qat(M.Sequential(M.QuantStub(), M.Linear(16, 5), M.DequantStub()))
    net(mge.Tensor(data))
    net.eval()
    q = quantize(net)
    q.eval()
    return q


def test_quantized_linear_against_its_integers():
    data = np.random.default_rng(1).normal(size=(3, 2, 16)).astype(np.float32)
    q = _qlinear(data.reshape(-1, 16))
    qx = q[0](mge.Tensor(data))
    lin = q[1]
    out = lin(qx)
    assert out.shape == (3, 2, 5) and D.is_dtype_equal(out.dtype, lin.output_dtype)
    si, sw = D.get_scale(qx.dtype), D.get_scale(lin.weight.dtype)
    acc = qx.numpy().astype(np.int64) @ lin.weight.numpy().astype(np.int64).T
    bias = lin.bias.astype(D.qint32(si * sw)).numpy().astype(np.int64)
    so = np.float32(D.get_scale(lin.output_dtype))
    # requantised as MegEngine's TypeCvt: value = sums x float32(si sw), times float32(1 / so)
    value = (acc + bias).astype(np.float32) * np.float32(si * sw)
    want = np.clip(_away(value * np.float32(1 / so)), -128, 127)
    np.testing.assert_array_equal(out.numpy().astype(np.int32), want)
    lin.train()
    with pytest.raises(ValueError, match="only support inference"):
        lin(qx)


def test_stubs_and_dtype_reads_in_a_trace():
    data = np.random.default_rng(2).normal(size=(4, 16)).astype(np.float32)
    q = _qlinear(data)
    eager = q(mge.Tensor(data)).numpy()
    for symbolic in (False, True):
        traced = trace(symbolic=symbolic)(lambda x: q(x))
        for _ in range(2):
            np.testing.assert_array_equal(traced(mge.Tensor(data)).numpy(), eager)
