"""Inference batch_norm's fast path (``F.nn._batch_norm_inference``, taken by ``F.batch_norm``
with ``training=False`` and by eval-mode BatchNorm1d/2d) against the general path it skips (the
same calls with the fast path switched off) bit for bit, and against NumPy: argument forms,
dtypes, -0.0, errors, gradients, tracing, autocast, and no Fill per call for a missing weight
or bias."""

import numpy as np
import pytest

import megengine as mge
import megengine.functional as F
import megengine.functional.nn as nn_mod
import megengine.module as M
import megengine.module.batchnorm as bn_mod
from megengine import amp
from megengine.autodiff import GradManager
from megengine.core.tensor.array_method import device_name, kept_scalar
from megengine.jit import trace

rng = np.random.default_rng(11)


def randn(*shape):
    return rng.normal(size=shape).astype(np.float32)


@pytest.fixture
def general(monkeypatch):
    """Runs fn with the fast path switched off: the general path's result."""

    def run(fn):
        with monkeypatch.context() as m:
            m.setattr(nn_mod, "_batch_norm_inference", lambda *args: None)
            m.setattr(bn_mod, "_batch_norm_inference", lambda *args: None)
            return fn()

    return run


def bits(t):
    a = t.numpy()
    return a.dtype, a.shape, a.view(np.uint8 if a.dtype.itemsize == 1 else f"u{a.dtype.itemsize}")


def assert_same(a, b):
    da, sa, ba = bits(a)
    db, sb, bb = bits(b)
    assert (da, sa) == (db, sb)
    np.testing.assert_array_equal(ba, bb)


def np_bn(x, rm, rv, w, b, eps):
    c = x.shape[1]
    shape = (1, c) + (1,) * (x.ndim - 2)
    rm, rv = rm.reshape(shape), rv.reshape(shape)
    w = np.ones(shape, np.float32) if w is None else w.reshape(shape)
    b = np.zeros(shape, np.float32) if b is None else b.reshape(shape)
    with np.errstate(invalid="ignore"):  # a negative variance's NaN
        return (x - rm) / np.sqrt(rv + eps) * w + b


def inputs(shape):
    x = randn(*shape)
    x.flat[0] = -0.0  # with a zero mean, -0.0 - 0 * scale is -0.0, and adding the bias +0.0
    x.flat[1] = np.inf
    x.flat[2] = np.nan
    return x


@pytest.mark.parametrize("shape", [(2, 4, 3, 3), (5, 4), (2, 4, 6), (2, 4, 2, 3, 3), (0, 4, 2)])
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("stat_shape", ["channel", "c", "1c11"])
@pytest.mark.parametrize("affine", ["none", "weight", "bias", "both"])
def test_functional_same_bits_as_general(general, shape, dtype, stat_shape, affine):
    c = shape[1]
    sshape = {"channel": (1, c) + (1,) * (len(shape) - 2), "c": (c,), "1c11": (1, c, 1, 1)}[
        stat_shape
    ]
    x = (
        mge.Tensor(inputs(shape)).astype(dtype)
        if np.prod(shape) >= 3
        else mge.Tensor(randn(*shape))
    )
    x = x.astype(dtype)
    rm = np.zeros(c, np.float32)
    rm[1:] = randn(c - 1)
    rv = np.abs(randn(c)) + 0.1
    rv[-1] = -1.0  # a NaN scale: left unmultiplied by a missing weight, its bits are the same
    w = randn(c) if affine in ("weight", "both") else None
    b = randn(c) if affine in ("bias", "both") else None

    def t(a):
        return None if a is None else mge.Tensor(a.reshape(sshape)).astype(dtype)

    args = (x, t(rm), t(rv), t(w), t(b))
    for eps in (1e-5, 0.1):
        fast = F.nn.batch_norm(*args, training=False, eps=eps)
        slow = general(lambda eps=eps: F.nn.batch_norm(*args, training=False, eps=eps))
        assert_same(fast, slow)
        if dtype == "float32" and np.prod(shape):
            ref = np_bn(x.numpy(), rm, rv, w, b, eps)
            np.testing.assert_allclose(fast.numpy(), ref, rtol=1e-5, atol=1e-6)
            if b is None:
                # the general path's +0.0 bias turns the -0.0 at flat[0] into +0.0
                assert not np.signbit(fast.numpy().flat[0])
        out, m2, v2 = F.nn.batch_norm(*args, training=False, eps=eps, inplace=False)
        assert_same(out, slow)
        assert m2 is args[1] and v2 is args[2]


def test_functional_mixed_and_converted_arguments_take_the_general_path(general):
    x = mge.Tensor(inputs((2, 3, 2, 2)))
    rm, rv = randn(1, 3, 1, 1), np.abs(randn(1, 3, 1, 1)) + 0.5
    w, b = randn(3), randn(3)
    cases = [
        # float16 statistics for a float32 input: promoted by the general path
        (x, mge.Tensor(rm).astype("float16"), mge.Tensor(rv), None, None),
        (x, mge.Tensor(rm), mge.Tensor(rv), mge.Tensor(w).astype("float16"), None),
        # arrays and lists, which the general path converts
        (x, rm, rv, w, b),
        (x, rm.ravel().tolist(), rv.ravel().tolist(), None, None),
        (x.numpy(), mge.Tensor(rm), mge.Tensor(rv), None, None),
        # float16 input, float32 statistics
        (x.astype("float16"), mge.Tensor(rm), mge.Tensor(rv), mge.Tensor(w), mge.Tensor(b)),
    ]
    for args in cases:
        fast = F.nn.batch_norm(*args, training=False)
        slow = general(lambda args=args: F.nn.batch_norm(*args, training=False))
        assert_same(fast, slow)


@pytest.mark.parametrize(
    "call, err",
    [
        (lambda x, s: F.nn.batch_norm(x, s, s[:2], training=False), "one element per channel"),
        (lambda x, s: F.nn.batch_norm(x, s[:2], s[:2], training=False), "one element per"),
        (lambda x, s: F.nn.batch_norm(x, s, s, s[:2], training=False), "weight"),
        (lambda x, s: F.nn.batch_norm(x, s, s, None, s[:1], training=False), "bias"),
        (lambda x, s: F.nn.batch_norm(x, s, None, training=False), "give both"),
        (lambda x, s: F.nn.batch_norm(x, training=False), "required when not training"),
        (lambda x, s: F.nn.batch_norm(x[0, 0, 0], s, s, training=False), "at least 2 dims"),
        (lambda x, s: F.nn.batch_norm(x.astype("int32"), s, s, training=False), "float"),
        (lambda x, s: F.nn.batch_norm(x, s.astype("int32"), s, training=False), "float"),
        (lambda x, s: F.nn.batch_norm(x, s, s, param_dim="dim_x"), "param_dim"),
    ],
)
def test_functional_errors_are_the_general_paths(general, call, err):
    x, s = mge.Tensor(randn(2, 3, 2, 2)), mge.Tensor(np.ones(3, np.float32))
    with pytest.raises(Exception, match=err) as fast:
        call(x, s)
    with pytest.raises(Exception, match=err) as slow:
        general(lambda: call(x, s))
    assert type(fast.value) is type(slow.value) and str(fast.value) == str(slow.value)


def trained(module, shape, steps=2):
    for _ in range(steps):
        module(mge.Tensor(randn(*shape) * 3 + 1))
    module.eval()
    if module.affine:
        module.weight._reset(mge.Tensor(randn(*module.weight.shape)))
        module.bias._reset(mge.Tensor(randn(*module.bias.shape)))
    return module


MODULES = [
    (M.BatchNorm2d, (2, 4, 3, 3), {}),
    (M.BatchNorm2d, (2, 4, 3, 3), {"affine": False}),
    (M.BatchNorm2d, (2, 4, 3, 3), {"eps": 0.1, "momentum": 0.5}),
    (M.BatchNorm2d, (2, 4, 3, 3), {"param_dim": "dim_c"}),
    (M.BatchNorm2d, (2, 4, 3, 3), {"param_dim": "dim_c", "affine": False}),
    (M.BatchNorm2d, (2, 4, 3, 3), {"compute_mode": "float32"}),
    (M.BatchNorm2d, (2, 4, 3, 3), {"freeze": True}),
    (M.BatchNorm2d, (2, 4, 3, 3), {"track_running_stats": False}),
    (M.BatchNorm1d, (5, 4), {}),
    (M.BatchNorm1d, (5, 4), {"affine": False}),
    (M.BatchNorm1d, (2, 4, 6), {}),
    (M.BatchNorm1d, (2, 4, 6), {"affine": False, "param_dim": "dim_c"}),
    (M.SyncBatchNorm, (2, 4, 3, 3), {}),
]


@pytest.mark.parametrize("cls, shape, kw", MODULES)
def test_module_eval_same_bits_as_general(general, cls, shape, kw):
    m = trained(cls(shape[1], **kw), shape)
    for dtype in ("float32", "float16"):
        x = mge.Tensor(inputs(shape)).astype(dtype)
        assert_same(m(x), general(lambda x=x: m(x)))
    x = inputs(shape)
    if m.track_running_stats:
        ref = np_bn(
            x,
            m.running_mean.numpy(),
            m.running_var.numpy(),
            m.weight.numpy() if m.affine else None,
            m.bias.numpy() if m.affine else None,
            m.eps,
        )
        np.testing.assert_allclose(m(mge.Tensor(x)).numpy(), ref, rtol=1e-5, atol=1e-5)
    m.train()  # training is unchanged: the fast path is for eval only
    stats = (m.running_mean, m.running_var)
    before = [None if s is None else s.numpy() for s in stats]
    m(mge.Tensor(x))
    if m.track_running_stats and not m.freeze:
        assert not np.array_equal(before[0], m.running_mean.numpy())


def test_module_eval_errors_are_the_general_paths(general):
    m = M.BatchNorm2d(4)
    m.eval()
    for x in (mge.Tensor(randn(2, 3, 2, 2)), mge.Tensor(randn(2, 4, 2)), np.ones((2, 4, 2, 2))):
        errors = []
        for run in (lambda x=x: m(x), lambda x=x: general(lambda: m(x))):
            try:
                out = run()
                errors.append(("ok", out.numpy().tobytes()))
            except Exception as e:  # noqa: BLE001 - comparing the two paths' errors
                errors.append((type(e), str(e)))
        assert errors[0] == errors[1]
    m1 = M.BatchNorm1d(4, track_running_stats=False)
    m1.eval()
    m1.track_running_stats = True
    with pytest.raises(AssertionError, match="can not be initilized"):
        m1(mge.Tensor(randn(2, 4)))


def test_module_eval_gradients_same_as_general(general):
    for affine in (True, False):
        m = trained(M.BatchNorm2d(3, affine=affine), (2, 3, 2, 2))
        xv = randn(2, 3, 2, 2)

        def grads(m=m, xv=xv, affine=affine):
            x = mge.Tensor(xv)
            params = [x] + ([m.weight, m.bias] if affine else [])
            gm = GradManager().attach(params)
            with gm:
                y = m(x)
                gm.backward((y * y).sum())
            return [y] + [p.grad for p in params]

        for a, b in zip(grads(), general(grads)):
            assert_same(a, b)


def test_traced_eval_same_as_eager(general):
    m = trained(M.BatchNorm2d(4, affine=False), (2, 4, 3, 3))
    for symbolic in (False, True):

        @trace(symbolic=symbolic)
        def f(x):
            return m(x)

        for _ in range(3):
            xv = inputs((2, 4, 3, 3))
            assert_same(f(mge.Tensor(xv)), general(lambda xv=xv: m(mge.Tensor(xv))))


def test_autocast_takes_the_general_path(general):
    m = trained(M.BatchNorm2d(4), (2, 4, 3, 3))
    x = mge.Tensor(randn(2, 4, 3, 3))
    with amp.autocast(enabled=True):
        fast = m(x)
        slow = general(lambda: m(x))
    assert fast.dtype == np.float16
    assert_same(fast, slow)


def test_missing_weight_and_bias_fill_nothing_per_call(monkeypatch):
    x = mge.Tensor(randn(2, 4, 3, 3))
    rm, rv = mge.Tensor(np.zeros((1, 4, 1, 1), np.float32)), mge.Tensor(randn(1, 4, 1, 1) ** 2)
    m = M.BatchNorm2d(4, affine=False)
    m.eval()
    F.nn.batch_norm(x, rm, rv, training=False)  # the kept zero of float32 on x's device
    fills = []
    real = nn_mod._fill
    monkeypatch.setattr(nn_mod, "_fill", lambda *a: fills.append(a) or real(*a))
    outs = [F.nn.batch_norm(x, rm, rv, training=False) for _ in range(3)] + [m(x) for _ in range(3)]
    assert fills == []
    kept = [kept_scalar(0.0, "float32", device_name(x))]
    # the kept zero is an operand only: no call returns it, and it stays zero
    assert all(o is not k for o in outs for k in kept)
    assert all(k.numpy().tolist() == 0.0 and not np.signbit(k.numpy()) for k in kept)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("affine", [True, False])
@pytest.mark.parametrize("track", [True, False])
def test_low_precision_input_trains_with_float32_parameters(dtype, affine, track):
    # A float32 module fed a 16-bit input: batch statistics of the input, parameters in float32
    # (missing running statistics are filled in float32 then), the output in the input's dtype.
    m = M.BatchNorm2d(4, affine=affine, track_running_stats=track)
    xn = inputs((2, 4, 3, 3))
    x = mge.Tensor(xn).astype(dtype)
    y = m(x)
    assert y.dtype == np.dtype(x.dtype)
    x32 = x.astype("float32").numpy()
    mean, var = x32.mean((0, 2, 3), keepdims=True), x32.var((0, 2, 3), keepdims=True)
    tol = 2e-3 if dtype == "float16" else 2e-2
    np.testing.assert_allclose(
        y.astype("float32").numpy(), (x32 - mean) / np.sqrt(var + m.eps), rtol=tol, atol=tol
    )
    if track:
        assert m.running_mean.dtype == np.float32
