"""F.sliding_window against a direct NumPy loop, F.sliding_window_transpose as its adjoint
(<sw(x), y> = <x, swt(y)>) and against a NumPy scatter, errors, gradients, and the modules."""

import numpy as np
import pytest
from gradcheck import check_grad

import megengine as mge
import megengine.functional as F
import megengine.module as M

rng = np.random.default_rng(7)

CASES = [
    ((2, 3, 5, 6), (2, 3), (1, 0), (2, 1), (1, 2)),
    ((1, 2, 4, 4), 3, 1, 1, 1),
    ((1, 1, 7, 5), (3, 1), (2, 1), (3, 2), (2, 1)),
    ((2, 1, 3, 3), 3, 0, 1, 1),  # one window
]


def pair(v):
    return tuple(v) if isinstance(v, tuple) else (v, v)


def windows_ref(x, k, p, s, d):
    (kh, kw), (ph, pw), (sh, sw), (dh, dw) = map(pair, (k, p, s, d))
    xp = np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    oh = (xp.shape[2] - dh * (kh - 1) - 1) // sh + 1
    ow = (xp.shape[3] - dw * (kw - 1) - 1) // sw + 1
    out = np.zeros(x.shape[:2] + (oh, ow, kh, kw), x.dtype)
    for a, b, i, j in np.ndindex(oh, ow, kh, kw):
        out[:, :, a, b, i, j] = xp[:, :, a * sh + i * dh, b * sw + j * dw]
    return out


def scatter_ref(y, size, p, s, d, acc=np.float64):
    (ph, pw), (sh, sw), (dh, dw) = map(pair, (p, s, d))
    full = np.zeros(y.shape[:2] + (size[0] + 2 * ph, size[1] + 2 * pw), acc)
    for a, b, i, j in np.ndindex(*y.shape[2:]):
        full[:, :, a * sh + i * dh, b * sw + j * dw] += y[:, :, a, b, i, j]
    return full[:, :, ph : ph + size[0], pw : pw + size[1]]


@pytest.mark.parametrize("shape,k,p,s,d", CASES)
def test_sliding_window_and_its_transpose(shape, k, p, s, d):
    x = rng.normal(size=shape).astype(np.float32)
    got = F.sliding_window(x, k, p, s, d).numpy()
    np.testing.assert_array_equal(got, windows_ref(x, k, p, s, d))
    y = rng.normal(size=got.shape).astype(np.float32)
    back = F.nn.sliding_window_transpose(y, shape[2:], k, p, s, d).numpy()
    np.testing.assert_allclose(back, scatter_ref(y, shape[2:], p, s, d), rtol=1e-5, atol=1e-6)
    # Summed in float32 in window order, as MegEngine 1.13's kernel (and its test, which
    # compares exactly) does: equal bit for bit.
    np.testing.assert_array_equal(back, scatter_ref(y, shape[2:], p, s, d, np.float32))
    # adjoint: <sw(x), y> = <x, swt(y)>
    np.testing.assert_allclose((got * y).sum(), (x * back).sum(), rtol=1e-4)


def test_sliding_window_keeps_dtype_and_infinities():
    x = np.arange(16, dtype=np.int32).reshape(1, 1, 4, 4)
    got = F.sliding_window(x, 2, stride=2)
    assert got.dtype == np.int32 and got.shape == (1, 1, 2, 2, 2, 2)
    np.testing.assert_array_equal(got.numpy(), windows_ref(x, 2, 0, 2, 1))
    y = np.zeros((1, 1, 2, 2, 2, 2), np.float32)
    y[0, 0, 0, 0, 1, 1] = np.inf  # the adjoint adds: an infinity stays one, no NaN spreads
    back = F.sliding_window_transpose(y, 3, 2).numpy()
    assert back[0, 0, 1, 1] == np.inf and np.isfinite(np.delete(back.ravel(), 4)).all()


def test_sliding_window_errors():
    x = np.ones((1, 1, 3, 3), np.float32)
    with pytest.raises(ValueError, match="sliding_window: inp must have 4 dims"):
        F.sliding_window(x[0], 2)
    with pytest.raises(ValueError, match="holds no"):
        F.sliding_window(x, 4)
    with pytest.raises(ValueError, match="stride must be an int or two ints >= 1"):
        F.sliding_window(x, 2, stride=0)
    with pytest.raises(ValueError, match="kernel_size"):
        F.sliding_window(x, (2, 2, 2))
    with pytest.raises(ValueError, match="inp must have 6 dims"):
        F.sliding_window_transpose(x, 3, 2)
    with pytest.raises(ValueError, match="does not hold"):
        F.sliding_window_transpose(np.ones((1, 1, 2, 2, 2, 2), np.float32), 4, 2)


def test_sliding_window_grads():
    check_grad(
        lambda x: F.sliding_window(x, (2, 3), (1, 0), (2, 1), (1, 2)),
        rng.normal(size=(1, 2, 5, 6)).astype(np.float32),
    )
    check_grad(
        lambda y: F.sliding_window_transpose(y, (5, 6), (2, 3), (1, 0), (2, 1), (1, 2)),
        rng.normal(size=(1, 2, 3, 2, 2, 3)).astype(np.float32),
    )


def test_sliding_window_modules():
    x = mge.Tensor(rng.normal(size=(2, 3, 5, 5)).astype(np.float32))
    m = M.SlidingWindow(3, 1, 2, 1)
    w = m(x)
    np.testing.assert_array_equal(w.numpy(), F.sliding_window(x, 3, 1, 2, 1).numpy())
    t = M.SlidingWindowTranspose((5, 5), 3, 1, 2, 1)
    np.testing.assert_array_equal(t(w).numpy(), F.sliding_window_transpose(w, 5, 3, 1, 2).numpy())
