"""A traced graph reads slices and transposes in place, as eager mode does: ``x[1:4, 2:7]``,
``x[::-2]``, ``x.T`` of an input, a captured constant or an intermediate, fed to elementwise
ops, matmul and reduce, run as no step of their own (no copy); results equal NumPy's on every
call. A view that is itself returned is copied into storage of its own."""

import numpy as np

import megengine as mge
import megengine.functional as F
from megengine.jit import trace

VIEW_STEPS = {"Subtensor", "Dimshuffle", "Broadcast"}


def _step_types(fn):
    return [s["type"] for s in fn._session.profile()]


def _calls(fn, shape, seed, n=3):
    rng = np.random.default_rng(seed)
    for _ in range(n):
        x = rng.standard_normal(shape).astype("float32")
        yield x, [o.numpy() for o in fn(mge.Tensor(x))]


def test_slices_at_offsets_and_transposes_run_as_no_step():
    c = np.arange(6 * 8, dtype="float32").reshape(6, 8) * 0.25 - 5
    const = mge.Tensor(c)

    @trace(symbolic=True, profiling=True)
    def f(x):
        e = F.exp(x * 0.5)
        a = x[1:4, 2:7] * 2 + const[::-2, 6:1:-1]  # an input and a constant, at offsets
        m = F.matmul(x[:, 1:5].T, e[:, 1::2])  # a transpose of a slice; an arena var's slice
        r = F.sum(e[1:, ::-3], axis=1)  # reversed columns at an offset
        w = (e.T[1:5][::-1, 2:]) * x[2:6, :4].T  # views of views: a slice of a transposed slice
        return a, m, r, w

    for x, (a, m, r, w) in _calls(f, (6, 8), seed=0):
        e = np.exp(x * 0.5)
        np.testing.assert_allclose(a, x[1:4, 2:7] * 2 + c[::-2, 6:1:-1], rtol=1e-6)
        np.testing.assert_allclose(m, x[:, 1:5].T @ e[:, 1::2], rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(r, e[1:, ::-3].sum(axis=1), rtol=1e-5)
        np.testing.assert_allclose(w, e.T[1:5][::-1, 2:] * x[2:6, :4].T, rtol=1e-6)
    types = _step_types(f)
    assert types and not VIEW_STEPS & set(types), types


def test_a_view_read_while_its_buffer_could_be_reused_in_place():
    @trace(symbolic=True)
    def f(x):
        e = F.exp(x)
        y = e + e[::-1]  # e dies here: y may not overwrite it while the reversal is read
        d = e[1:] - e[:-1]
        return y * y, d * 3

    for x, (y, d) in _calls(f, (16, 32), seed=1):
        e = np.exp(x)
        np.testing.assert_allclose(y, (e + e[::-1]) ** 2, rtol=1e-5)
        np.testing.assert_allclose(d, (e[1:] - e[:-1]) * 3, rtol=1e-5, atol=1e-6)


def test_a_returned_view_has_storage_of_its_own():
    @trace(symbolic=True, profiling=True)
    def f(x):
        e = -x
        return e[1:, ::-2], e[:, 1:3].sum()

    kept = []
    for x, (v, s) in _calls(f, (5, 6), seed=2):
        np.testing.assert_array_equal(v, (-x)[1:, ::-2])
        np.testing.assert_allclose(s, (-x)[:, 1:3].sum(), rtol=1e-5)
        kept.append((x, v))
    for x, v in kept:  # later calls did not write into an earlier call's result
        np.testing.assert_array_equal(v, (-x)[1:, ::-2])
    assert _step_types(f).count("Subtensor") == 1  # the returned view's copy, nothing else


def _conv_nchw(x, w, pad):
    """Cross-correlation of stride 1 in float64, NumPy's: the reference."""
    o, _, kh, kw = w.shape
    xp = np.pad(x.astype("float64"), ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh, ow = xp.shape[2] - kh + 1, xp.shape[3] - kw + 1
    out = np.zeros((x.shape[0], o, oh, ow))
    for i in range(kh):
        for j in range(kw):
            out += np.einsum("nchw,oc->nohw", xp[:, :, i : i + oh, j : j + ow], w[:, :, i, j])
    return out


def test_a_transposed_nhwc_batch_is_read_in_place_by_a_convolution():
    # The transpose has channels-last strides; the convolution reads it as it is (the x86 kernel
    # reorders it for its own kernel), with no copy step; odd channels, and a batch of one.
    w = np.random.default_rng(4).standard_normal((4, 5, 3, 3)).astype("float32")
    filt = mge.Tensor(w)

    @trace(symbolic=True, profiling=True)
    def f(x):
        return (F.conv2d(x.transpose(0, 3, 1, 2), filt, padding=1),)

    for shape in [(2, 6, 7, 5), (1, 6, 7, 5)]:
        for x, (y,) in _calls(f, shape, seed=3):
            want = _conv_nchw(x.transpose(0, 3, 1, 2), w, 1)
            np.testing.assert_allclose(y, want, rtol=1e-4, atol=1e-4)
    types = _step_types(f)
    assert types and not VIEW_STEPS & set(types), types
