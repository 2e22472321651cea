"""Fake quantization (the FakeQuant, TQT and LSQ operators through fake_quant_tensor,
tqt_forward, lsq_forward and the FakeQuantize/TQT/LSQ modules): values and gradients against a
NumPy transcription of MegEngine 1.13's kernels, MegEngine's own printed values, finite
differences where the function is differentiable (the scale of clamped elements), per-channel
scales, and bad input."""

import numpy as np
import pytest

import megengine as mge
from megengine.autodiff import GradManager
from megengine.quantization import (
    LSQ,
    TQT,
    FakeQuantize,
    QuantMode,
    create_qparams,
    fake_quant_bias,
    fake_quant_tensor,
)
from megengine.quantization.utils import lsq_forward, tqt_forward

X = np.array(
    [-3.0, -1.26, -0.75, -0.25, 0.25, 0.5, 0.75, 1.25, 1.5, 2.5, 6.0, -7.0], dtype=np.float32
)
DY = np.arange(1, 13, dtype=np.float32)


def rnd(v):
    # C's roundf: half away from zero (np.round rounds half to even)
    return np.sign(v) * np.floor(np.abs(v) + np.float32(0.5))


def np_fake_quant(x, s, zp, qmin, qmax, dy):
    q = rnd(x / s) + zp
    y = (np.clip(q, qmin, qmax) - zp) * s
    return y, np.where((q >= qmin) & (q <= qmax), dy, 0)


def np_tqt(x, log2s, qmin, qmax, dy):
    t = np.float32(2.0) ** log2s
    scaled = x / t
    r = np.clip(rnd(scaled), qmin, qmax)
    clipped = (scaled < qmin - 0.5) | (scaled > qmax + 0.5)
    ds = np.where(clipped, r, r - scaled) * dy * t * np.log(2)
    return r * t, np.where(clipped, 0, dy), ds


def np_lsq(x, s, zp, gs, qmin, qmax, dy):
    v = x / s + zp
    y = (rnd(np.clip(v, qmin, qmax)) - zp) * s
    small, big = v < qmin, v > qmax
    ds = np.where(small, qmin, np.where(big, qmax, rnd(v) - v)) * gs * dy
    return y, np.where(small | big, 0, dy), ds


def grads(fn, x, *params):
    xs = mge.Parameter(x)
    ps = [mge.Parameter(p) for p in params]
    gm = GradManager().attach([xs, *ps])
    with gm:
        y = fn(xs, *ps)
        gm.backward(y, mge.Tensor(DY if y.shape == DY.shape else np.ones(y.shape, np.float32)))
    return y.numpy(), xs.grad.numpy(), [p.grad for p in ps]


def test_fake_quant_matches_megengine():
    # printed by MegEngine 1.13: apply(builtin.FakeQuant(qmin=-4, qmax=3), x, 0.5, 1)
    q = create_qparams(QuantMode.ASYMMERTIC, "qint4", mge.Tensor([0.5]), mge.Tensor([1.0]))
    assert (q.dtype_meta.qmin, q.dtype_meta.qmax) == (-8, 7)
    meta = q.dtype_meta._replace(qmin=-4, qmax=3)
    q.dtype_meta = meta
    y, gx, _ = grads(lambda x: fake_quant_tensor(x, q), X)
    np.testing.assert_array_equal(y, [-2.5, -1.5, -1, -0.5, 0.5, 0.5, 1, 1, 1, 1, 1, -2.5])
    np.testing.assert_array_equal(gx, [0, 2, 3, 4, 5, 6, 7, 0, 0, 0, 0, 0])


def test_tqt_lsq_match_megengine():
    y, gx, (gs,) = grads(lambda x, s: tqt_forward(-4, 3, x, s), X, np.float32([-1.0]))
    np.testing.assert_array_equal(y, [-2, -1.5, -1, -0.5, 0.5, 0.5, 1, 1.5, 1.5, 1.5, 1.5, -2])
    np.testing.assert_array_equal(gx, [0, 2, 3, 4, 5, 6, 7, 8, 9, 0, 0, 0])
    np.testing.assert_allclose(gs.numpy(), [5.7323284], rtol=1e-6)
    y, gx, (gs,) = grads(
        lambda x, s: lsq_forward(-4, 3, x, s, mge.Tensor([1.0]), mge.Tensor([0.25])),
        X,
        np.float32([0.5]),
    )
    np.testing.assert_array_equal(y, [-2.5, -1.5, -1, 0, 0.5, 0.5, 1, 1, 1, 1, 1, -2.5])
    np.testing.assert_array_equal(gx, [0, 2, 3, 4, 5, 6, 7, 0, 0, 0, 0, 0])
    np.testing.assert_allclose(gs.numpy(), [16.885], rtol=1e-6)


@pytest.mark.parametrize("dtype", ["qint8", "quint8", "qint4", "qint8_narrow"])
@pytest.mark.parametrize("mode", [QuantMode.SYMMERTIC, QuantMode.ASYMMERTIC])
def test_fake_quant_tensor_against_numpy(dtype, mode):
    rng = np.random.RandomState(0)
    x = (rng.randn(4, 5, 6) * 3).astype(np.float32)
    dy = rng.randn(*x.shape).astype(np.float32)
    s, zp = np.float32(0.05), np.float32(3.0)
    q = create_qparams(mode, dtype, mge.Tensor(s), mge.Tensor(zp))
    xt = mge.Parameter(x)
    gm = GradManager().attach(xt)
    with gm:
        y = fake_quant_tensor(xt, q)
        gm.backward(y, mge.Tensor(dy))
    meta = q.dtype_meta
    z = zp if mode == QuantMode.ASYMMERTIC else np.float32(0)
    want, want_g = np_fake_quant(x, s, z, meta.qmin, meta.qmax, dy)
    np.testing.assert_allclose(y.numpy(), want, rtol=0, atol=1e-6)
    np.testing.assert_array_equal(xt.grad.numpy(), want_g)


def test_per_channel_scale_tqt_lsq_against_numpy():
    rng = np.random.RandomState(1)
    x = (rng.randn(3, 4, 5) * 2).astype(np.float32)
    dy = rng.randn(*x.shape).astype(np.float32)
    log2s = np.float32([-4, -3, -2]).reshape(3, 1, 1)
    xt, st = mge.Parameter(x), mge.Parameter(log2s)
    gm = GradManager().attach([xt, st])
    with gm:
        y = tqt_forward(-128, 127, xt, st)
        gm.backward(y, mge.Tensor(dy))
    want, want_gx, want_gs = np_tqt(x, log2s, -128, 127, dy)
    np.testing.assert_allclose(y.numpy(), want, atol=1e-6)
    np.testing.assert_array_equal(xt.grad.numpy(), want_gx)
    np.testing.assert_allclose(st.grad.numpy(), want_gs.sum((1, 2), keepdims=True), rtol=1e-4)

    step = np.float32([0.02, 0.05, 0.1]).reshape(3, 1, 1)
    xt, st = mge.Parameter(x), mge.Parameter(step)
    gm = GradManager().attach([xt, st])
    with gm:
        y = lsq_forward(-8, 7, xt, st, mge.Tensor([2.0]), mge.Tensor([0.5]))
        gm.backward(y, mge.Tensor(dy))
    want, want_gx, want_gs = np_lsq(x, step, 2.0, 0.5, -8, 7, dy)
    np.testing.assert_allclose(y.numpy(), want, atol=1e-6)
    np.testing.assert_array_equal(xt.grad.numpy(), want_gx)
    np.testing.assert_allclose(st.grad.numpy(), want_gs.sum((1, 2), keepdims=True), rtol=1e-4)


def _fd(f, v, eps=1e-3):
    return (f(v + eps) - f(v - eps)) / (2 * eps)


def test_scale_gradient_of_clamped_elements_is_the_derivative():
    # Where every element is clamped the outputs are qmin/qmax times the step: smooth in it.
    x = np.float32([-50.0, 40.0, 100.0, -7.0])

    def tqt_sum(s):
        return float(tqt_forward(-4, 3, mge.Tensor(x), mge.Tensor([s])).sum())

    _, _, (g,) = grads(lambda xx, s: tqt_forward(-4, 3, xx, s).sum(), x, np.float32([0.3]))
    np.testing.assert_allclose(g.numpy()[0], _fd(tqt_sum, 0.3), rtol=1e-3)

    def lsq_sum(s):
        return float(lsq_forward(-4, 3, mge.Tensor(x), mge.Tensor([s])).sum())

    _, _, (g,) = grads(lambda xx, s: lsq_forward(-4, 3, xx, s).sum(), x, np.float32([0.5]))
    np.testing.assert_allclose(g.numpy()[0], _fd(lsq_sum, 0.5), rtol=1e-3)


def test_modules():
    x = mge.Tensor(X)
    fq = FakeQuantize("qint8")
    q = create_qparams(dtype_meta="qint8", scale=mge.Tensor(0.5))
    np.testing.assert_array_equal(fq(x, q).numpy(), np_fake_quant(X, 0.5, 0, -128, 127, X)[0])
    fq.disable()
    assert fq(x, q) is x
    with pytest.raises(AssertionError, match="dtype is not equal"):
        FakeQuantize("quint8")(x, q)
    with pytest.raises(ValueError, match="unknown dtype"):
        FakeQuantize("qint9")

    tqt = TQT("qint8")
    tqt.set_qparams(q)
    assert float(tqt.scale) == -1.0
    np.testing.assert_array_equal(tqt(x).numpy(), np_tqt(X, -1.0, -128, 127, X)[0])
    assert float(tqt.get_qparams().scale) == 0.5
    with pytest.raises(AssertionError, match="only symmetric"):
        tqt.set_qparams(create_qparams(QuantMode.ASYMMERTIC, "quint8", mge.Tensor(1.0)))

    lsq = LSQ("quint8")
    lsq.set_qparams(
        create_qparams(QuantMode.ASYMMERTIC, "quint8", mge.Tensor(0.5), mge.Tensor(3.0))
    )
    np.testing.assert_allclose(float(lsq.step_size), 0.5 - 1e-5, rtol=1e-6)
    step = abs(np.float32(lsq.step_size.numpy())) + np.float32(1e-5)
    np.testing.assert_allclose(
        lsq(x).numpy(), np_lsq(X, step, 3.0, 1.0, 0, 255, X)[0], rtol=1e-6, atol=1e-6
    )
    assert sorted(lsq.state_dict()) == ["eps", "grad_scale", "step_size", "zero_point"]


def test_fake_quant_bias():
    x, w = mge.Tensor([1.0]), mge.Tensor([1.0])
    bias = mge.Tensor([0.123, -5.0])
    assert fake_quant_bias(bias, x, w) is bias  # no scales yet
    x.qparams.update(create_qparams(dtype_meta="qint8", scale=mge.Tensor(0.1)))
    w.qparams.update(create_qparams(dtype_meta="qint8_narrow", scale=mge.Tensor(0.2)))
    b = fake_quant_bias(bias, x, w)
    np.testing.assert_allclose(b.numpy(), [0.12, -5.0], rtol=1e-6)
    assert b.qparams.dtype_meta.name == "qint32"
    np.testing.assert_allclose(float(b.qparams.scale), 0.02, rtol=1e-6)
    x.qparams.update(create_qparams(QuantMode.ASYMMERTIC, "quint8", mge.Tensor(0.1)))
    assert fake_quant_bias(bias, x, w) is bias  # asymmetric: left alone, as MegEngine


def test_bad_input():
    q = create_qparams(dtype_meta="qint8", scale=mge.Tensor(np.ones(4, np.float32)))
    with pytest.raises(Exception, match="scale .* does not broadcast to src"):
        fake_quant_tensor(mge.Tensor(np.ones((2, 3), np.float32)), q)
    with pytest.raises(Exception, match="qmin 3 is above qmax -4"):
        tqt_forward(3, -4, mge.Tensor([1.0]), mge.Tensor([0.0]))
