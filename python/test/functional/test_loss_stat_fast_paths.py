"""The per-call paths of binary_cross_entropy (one FUSE_MUL_ADD4 of softplus or log terms),
logsumexp over one axis (the infinite max clamped instead of selected) and var/std of float32
(their ops applied directly, every axis flattened once): against NumPy in float64 on large
magnitudes, bit for bit against the general paths they skip, the forms left to those, gradients
and both trace modes."""

import numpy as np
import pytest

import megengine as mge
import megengine.functional as F
import megengine.functional.loss as loss_mod
import megengine.functional.math as math_mod
import megengine.functional.nn as nn_mod
from megengine import amp
from megengine.autodiff import GradManager
from megengine.jit import trace

rng = np.random.default_rng(12)


def _same(a, b):
    assert a.dtype == b.dtype and a.shape == b.shape
    np.testing.assert_array_equal(a.reshape(-1).view(np.uint8), b.reshape(-1).view(np.uint8))


def _softplus(z):
    return np.maximum(z, 0) + np.log1p(np.exp(-np.abs(z)))


# a few units of float32's subnormal range: losses such as 1e-39 keep their digits within it
_TINY = 1e-43


def _reduce(v, reduction):
    return {"mean": np.mean, "sum": np.sum, "none": lambda a: a}[reduction](v)


# ---- binary_cross_entropy -----------------------------------------------------------------


def _bce_inputs(shape, with_logits):
    if with_logits:
        # magnitudes where log(1 + e^x) - x * y loses every digit of the small losses
        x = (rng.normal(size=shape) * 40).astype(np.float32)
    else:
        x = rng.uniform(1e-4, 1 - 1e-4, size=shape).astype(np.float32)
    y = rng.random(shape).astype(np.float32)
    y.reshape(-1)[::3] = 1.0  # hard labels, where one term is exactly 0
    y.reshape(-1)[1::3] = 0.0
    return x, y


def _bce_ref(x, y, with_logits):
    x, y = x.astype(np.float64), y.astype(np.float64)
    if with_logits:
        return y * _softplus(-x) + (1 - y) * _softplus(x)
    return -(y * np.log(x) + (1 - y) * np.log1p(-x))


@pytest.mark.parametrize("with_logits", [True, False])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("shape", [(4, 6), (7,), (2, 3, 4), ()])
def test_bce_against_float64(with_logits, reduction, shape):
    x, y = _bce_inputs(shape, with_logits)
    out = F.nn.binary_cross_entropy(mge.Tensor(x), mge.Tensor(y), with_logits, reduction)
    want = _reduce(_bce_ref(x, y, with_logits), reduction)
    assert out.dtype == np.float32 and out.shape == np.shape(want)
    # relative per element: a loss of 1e-17 (x = 40, y = 1) must keep its digits
    want = np.asarray(want).astype(np.float32)  # losses below float32's range are 0
    np.testing.assert_allclose(out.numpy(), want, rtol=2e-6 if with_logits else 1e-5, atol=_TINY)


def test_bce_large_logits_stay_finite_and_exact():
    x = np.array([-1e4, -200.0, -88.0, -20.0, 0.0, 20.0, 88.0, 200.0, 1e4], np.float32)
    for y in (np.ones_like(x), np.zeros_like(x), np.full_like(x, 0.25)):
        out = F.nn.binary_cross_entropy(mge.Tensor(x), mge.Tensor(y), reduction="none").numpy()
        assert np.isfinite(out).all()
        np.testing.assert_allclose(
            out, _bce_ref(x, y, True).astype(np.float32), rtol=2e-6, atol=_TINY
        )


@pytest.mark.parametrize("with_logits", [True, False])
def test_bce_same_bits_as_the_traced_form(with_logits, monkeypatch):
    # eager calls take 1 - y with a kept 0-d one, a trace with as_tensor's: the same values
    x, y = _bce_inputs((5, 3), with_logits)
    fast = [
        F.nn.binary_cross_entropy(mge.Tensor(x), mge.Tensor(y), with_logits, r).numpy()
        for r in ("mean", "sum", "none")
    ]
    monkeypatch.setattr(loss_mod, "_is_tracing", lambda: True)
    for r, f in zip(("mean", "sum", "none"), fast):
        _same(f, F.nn.binary_cross_entropy(mge.Tensor(x), mge.Tensor(y), with_logits, r).numpy())


@pytest.mark.parametrize("with_logits", [True, False])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_bce_16_bit_dtypes_as_the_old_composition(with_logits, dtype):
    x, y = _bce_inputs((4, 6), with_logits)
    p, t = mge.Tensor(x).astype(dtype), mge.Tensor(y).astype(dtype)
    out = F.nn.binary_cross_entropy(p, t, with_logits, "none")
    if with_logits:
        old = -(t * F.logsigmoid(p) + (1 - t) * F.logsigmoid(-p))
    else:
        old = -(t * F.log(p) + (1 - t) * F.log(1 - p))
    assert out.dtype == old.dtype and out.shape == old.shape
    np.testing.assert_allclose(
        out.numpy().astype(np.float32), old.numpy().astype(np.float32), rtol=1e-2, atol=1e-2
    )


@pytest.mark.parametrize("with_logits", [True, False])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_bce_gradients(with_logits, reduction):
    x, y = _bce_inputs((3, 4), with_logits)
    if with_logits:
        x = (x / 10).astype(np.float32)
    p, t = mge.Parameter(x), mge.Parameter(y)
    gm = GradManager().attach([p, t])
    with gm:
        out = F.nn.binary_cross_entropy(p, t, with_logits, reduction)
        gm.backward(out if reduction != "none" else out.sum())
    z, yy = x.astype(np.float64), y.astype(np.float64)
    scale = 1 / x.size if reduction == "mean" else 1.0
    if with_logits:
        gp, gy = 1 / (1 + np.exp(-z)) - yy, -z
    else:
        gp, gy = (z - yy) / (z * (1 - z)), -np.log(z / (1 - z))
    np.testing.assert_allclose(p.grad.numpy(), gp * scale, rtol=1e-4, atol=1e-7)
    np.testing.assert_allclose(t.grad.numpy(), gy * scale, rtol=1e-4, atol=1e-7)


@pytest.mark.parametrize("symbolic", [False, True])
@pytest.mark.parametrize("with_logits", [True, False])
def test_bce_traced(symbolic, with_logits):
    fn = trace(lambda a, b: F.nn.binary_cross_entropy(a, b, with_logits, "none"), symbolic=symbolic)
    for _ in range(3):
        x, y = _bce_inputs((4, 5), with_logits)
        got = fn(mge.Tensor(x), mge.Tensor(y)).numpy()
        want = _bce_ref(x, y, with_logits).astype(np.float32)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=_TINY)


@pytest.mark.parametrize("symbolic", [False, True])
def test_bce_traced_large_logits(symbolic):
    # a graph runs SOFTPLUS in place on NEGATE's output: the x86 kernel redid the vector holding
    # softplus(-100) from its own results (log 2 in every lane of it)
    x = np.full(64, 70.0, np.float32)
    x[3] = 100.0  # softplus(-100): below -87, the scalar formula's
    y = np.ones(64, np.float32)
    fn = trace(lambda a, b: F.nn.binary_cross_entropy(a, b, reduction="none"), symbolic=symbolic)
    for _ in range(3):
        got = fn(mge.Tensor(x), mge.Tensor(y)).numpy()
        np.testing.assert_allclose(got, _bce_ref(x, y, True).astype(np.float32), 2e-6, _TINY)


def test_bce_errors_and_arrays():
    with pytest.raises(Exception, match="reduction must be"):
        F.nn.binary_cross_entropy(mge.Tensor([0.5]), mge.Tensor([1.0]), reduction="avg")
    with pytest.raises(Exception, match="same shape"):
        F.nn.binary_cross_entropy(mge.Tensor([0.5, 0.2]), mge.Tensor([1.0]))
    with pytest.raises(Exception, match="must be a float tensor"):
        F.nn.binary_cross_entropy(mge.Tensor([1, 2]), mge.Tensor([1, 0]))
    out = F.nn.binary_cross_entropy([0.0, 3.0], [1.0, 0.0], reduction="none").numpy()
    np.testing.assert_allclose(out, [np.log(2), _softplus(3.0)], rtol=1e-6)


def test_bce_autocast():
    x, y = _bce_inputs((4, 6), True)
    x = (x / 10).astype(np.float32)
    with amp.autocast():
        out = F.nn.binary_cross_entropy(mge.Tensor(x), mge.Tensor(y))
    np.testing.assert_allclose(out.numpy(), _bce_ref(x, y, True).mean(), rtol=1e-5)


# ---- logsumexp ------------------------------------------------------------------------------


def _lse_ref(a, axis, keepdims):
    a = a.astype(np.float64)
    m = np.max(a, axis=axis, keepdims=True)
    m = np.where(np.isinf(m), 0, m)
    with np.errstate(all="ignore"):
        out = np.log(np.exp(a - m).sum(axis=axis, keepdims=True)) + m
    return out if keepdims else np.squeeze(out, axis=axis)


def _general_logsumexp(monkeypatch):
    monkeypatch.setattr(nn_mod, "_logsumexp_axis", lambda *a: None)


@pytest.mark.parametrize(
    "shape, axis",
    [((4, 6), 1), ((4, 6), 0), ((4, 6), -1), ((4, 6), -2), ((2, 3, 5), 1), ((7,), 0), ((7,), -1)],
)
@pytest.mark.parametrize("keepdims", [False, True])
def test_logsumexp_one_axis_against_float64(shape, axis, keepdims, monkeypatch):
    a = (rng.normal(size=shape) * 1e3).astype(np.float32)
    a.reshape(-1)[::4] = 3e38  # near the top of float32: the shift must keep it finite
    a.reshape(-1)[1::5] = -3e38
    out = F.logsumexp(mge.Tensor(a), axis, keepdims)
    want = _lse_ref(a, axis, keepdims)
    assert out.shape == want.shape and out.dtype == np.float32
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-6)
    _general_logsumexp(monkeypatch)
    _same(out.numpy(), F.logsumexp(mge.Tensor(a), axis, keepdims).numpy())


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_logsumexp_infinities_nan_and_signed_zero(dtype, monkeypatch):
    inf, nan = np.inf, np.nan
    a = np.array(
        [
            [-inf, -inf, -inf],
            [inf, 1.0, -inf],
            [inf, inf, 2.0],
            [-inf, 0.0, -inf],
            [nan, 1.0, 2.0],
            [-0.0, -inf, -inf],
            [60000.0, 60000.0, -60000.0],
            [-65504.0, -65504.0, -inf],
        ],
        np.float32,
    )
    x = mge.Tensor(a).astype(dtype)
    fast = [F.logsumexp(x, 1), F.logsumexp(x, -1, keepdims=True), F.logsumexp(x, 0)]
    with np.errstate(all="ignore"):
        np.testing.assert_allclose(
            fast[0].numpy().astype(np.float64), _lse_ref(a, 1, False), rtol=1e-3
        )
    _general_logsumexp(monkeypatch)
    slow = [F.logsumexp(x, 1), F.logsumexp(x, -1, keepdims=True), F.logsumexp(x, 0)]
    for f, s in zip(fast, slow):
        _same(f.numpy(), s.numpy())


@pytest.mark.parametrize(
    "make, axis",
    [
        (lambda a: mge.Tensor(a), (0, 1)),  # a sequence of axes
        (lambda a: mge.Tensor(a), None),
        (lambda a: mge.Tensor(a).astype("bfloat16"), 1),
        (lambda a: mge.Tensor((a * 10).astype(np.int32)), 1),  # integers: float32
        (lambda a: a, 1),  # an array
    ],
)
def test_logsumexp_forms_left_to_the_general_path(make, axis):
    a = rng.normal(size=(3, 4)).astype(np.float32)
    x = make(a)
    out = F.logsumexp(x, axis)
    ref = np.asarray(x.numpy() if isinstance(x, mge.Tensor) else x).astype(np.float64)
    want = np.log(np.exp(ref).sum(axis=axis))
    np.testing.assert_allclose(out.numpy().astype(np.float64), want, rtol=1e-2)


def test_logsumexp_errors_as_the_general_path(monkeypatch):
    x = mge.Tensor(rng.normal(size=(3, 4)).astype(np.float32))
    errors = []
    for general in (False, True):
        if general:
            _general_logsumexp(monkeypatch)
        for axis in (2, -3):
            with pytest.raises(Exception) as e:
                F.logsumexp(x, axis)
            errors.append((type(e.value), str(e.value)))
    assert errors[:2] == errors[2:]


@pytest.mark.parametrize("keepdims", [False, True])
def test_logsumexp_gradient_is_softmax(keepdims):
    a = rng.normal(size=(3, 5)).astype(np.float32) * 30
    x = mge.Parameter(a)
    gm = GradManager().attach(x)
    with gm:
        gm.backward(F.logsumexp(x, -1, keepdims).sum())
    e = np.exp(a - a.max(1, keepdims=True))
    np.testing.assert_allclose(x.grad.numpy(), e / e.sum(1, keepdims=True), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("symbolic", [False, True])
def test_logsumexp_traced(symbolic):
    fn = trace(lambda t: F.logsumexp(t, 1), symbolic=symbolic)
    for _ in range(3):
        a = (rng.normal(size=(4, 6)) * 100).astype(np.float32)
        a[0] = -np.inf
        with np.errstate(all="ignore"):
            np.testing.assert_allclose(fn(mge.Tensor(a)).numpy(), _lse_ref(a, 1, False), rtol=1e-6)


def test_logsumexp_autocast():
    a = rng.normal(size=(4, 6)).astype(np.float32)
    with amp.autocast():
        out = F.logsumexp(mge.Tensor(a), 1)
    np.testing.assert_allclose(out.numpy().astype(np.float64), _lse_ref(a, 1, False), rtol=1e-2)


# ---- var and std ----------------------------------------------------------------------------


def _general_var(monkeypatch):
    monkeypatch.setattr(math_mod, "_var_float32", lambda *a: None)


_VAR_CASES = [
    (shape, axis)
    for shape in [(4, 6), (2, 3, 5), (7,)]
    for axis in [0, 1, -1, -3, None, (0, -1)]
    # the out-of-range axes: test_var_std_errors
    if (axis is None or isinstance(axis, tuple) and len(shape) > 1)
    or isinstance(axis, int)
    and -len(shape) <= axis < len(shape)
]


@pytest.mark.parametrize("fn, ref", [(F.var, np.var), (F.std, np.std)])
@pytest.mark.parametrize("shape, axis", _VAR_CASES)
@pytest.mark.parametrize("keepdims", [False, True])
def test_var_std_against_float64_and_general_path(fn, ref, shape, axis, keepdims, monkeypatch):
    # a large offset: the deviations from the mean must come first (no E[x^2] - E[x]^2)
    a = (rng.normal(size=shape) + 100).astype(np.float32)
    out = fn(mge.Tensor(a), axis=axis, keepdims=keepdims)
    want = ref(a.astype(np.float64), axis=axis, keepdims=keepdims)
    assert out.shape == want.shape and out.dtype == np.float32
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-3, atol=1e-5)
    _general_var(monkeypatch)
    _same(out.numpy(), fn(mge.Tensor(a), axis=axis, keepdims=keepdims).numpy())


@pytest.mark.parametrize("fn", [F.var, F.std])
def test_var_std_forms_left_to_the_general_path(fn):
    a = rng.normal(size=(3, 4)).astype(np.float32)
    ref = np.var if fn is F.var else np.std
    for x in (mge.Tensor(a).astype("float16"), mge.Tensor((a * 10).astype(np.int32)), a):
        got = fn(x, axis=1).numpy().astype(np.float64)
        want = ref(np.asarray(x.numpy() if isinstance(x, mge.Tensor) else x, np.float64), axis=1)
        np.testing.assert_allclose(got, want, rtol=1e-2, atol=1e-3)
    assert fn(mge.Tensor(np.float32(2.5))).numpy() == 0  # 0-d
    np.testing.assert_allclose(fn(mge.Tensor(a[0])).numpy(), ref(a[0].astype(np.float64)), 1e-5)


def test_var_std_errors(monkeypatch):
    x = mge.Tensor(rng.normal(size=(3, 4)).astype(np.float32))
    errors = []
    for general in (False, True):
        if general:
            _general_var(monkeypatch)
        for fn in (F.var, F.std):
            for axis in (2, -3):
                with pytest.raises(Exception) as e:
                    fn(x, axis=axis)
                errors.append((type(e.value), str(e.value)))
    assert errors[:4] == errors[4:]


@pytest.mark.parametrize("axis", [1, None])
def test_var_std_gradients(axis):
    a = rng.normal(size=(3, 5)).astype(np.float32)
    x = mge.Parameter(a)
    gm = GradManager().attach(x)
    with gm:
        gm.backward(F.var(x, axis=axis).sum() + F.std(x, axis=axis).sum())
    z = a.astype(np.float64)
    n = z.size if axis is None else z.shape[axis]
    d = z - z.mean(axis=axis, keepdims=True)
    sd = np.sqrt((d * d).mean(axis=axis, keepdims=True))
    np.testing.assert_allclose(x.grad.numpy(), 2 * d / n + d / (n * sd), rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("symbolic", [False, True])
@pytest.mark.parametrize("axis", [1, None])
def test_var_std_traced(symbolic, axis):
    fn = trace(
        lambda t: (F.var(t, axis=axis), F.std(t, axis=axis, keepdims=True)), symbolic=symbolic
    )
    for _ in range(3):
        a = rng.normal(size=(4, 6)).astype(np.float32)
        v, s = fn(mge.Tensor(a))
        z = a.astype(np.float64)
        np.testing.assert_allclose(v.numpy(), np.var(z, axis=axis), rtol=1e-5)
        np.testing.assert_allclose(s.numpy(), np.std(z, axis=axis, keepdims=True), rtol=1e-5)


@pytest.mark.parametrize("axis", [None, 0, 1])
@pytest.mark.parametrize("keepdims", [False, True])
def test_var_std_of_an_empty_tensor_as_the_general_path(axis, keepdims, monkeypatch):
    x = mge.Tensor(np.zeros((0, 3), np.float32))
    fast = [fn(x, axis=axis, keepdims=keepdims).numpy() for fn in (F.var, F.std)]
    _general_var(monkeypatch)
    for f, fn in zip(fast, (F.var, F.std)):
        _same(f, fn(x, axis=axis, keepdims=keepdims).numpy())
