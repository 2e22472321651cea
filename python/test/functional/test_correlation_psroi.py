"""F.vision.correlation, F.deformable_psroi_pooling and M.DeformablePSROIPooling against NumPy
references written here (FlowNet's padded-window formulation; MegDNN's sample geometry per
sample), finite-difference gradients, edge shapes, bad input, and MegEngine 1.13's own outputs
and gradients (fixtures/megengine_1_13/correlation_psroi.npz, written by
fixtures/make_correlation_psroi_fixtures.py; this test never imports MegEngine).

MegEngine 1.13's gradient of correlation for data1 reads data2 at the transposed displacement
(its finite differences disagree); NeoMeg's is the true gradient, checked against finite
differences, and against MegEngine's only where one displacement makes the two agree."""

import json
import math
import os

import numpy as np
import pytest
from gradcheck import check_grad

import megengine as mge
import megengine.functional as F
import megengine.module as M
from megengine.autodiff import GradManager

rng = np.random.default_rng(3)
FIXTURES = os.path.join(os.path.dirname(__file__), "..", "fixtures", "megengine_1_13")


def randn(*shape):
    return rng.normal(size=shape).astype(np.float32)


# ----------------------------------------------------------------------------- references


def correlation_ref(
    a, b, kernel_size=1, max_displacement=1, stride1=1, stride2=1, pad_size=0, is_multiply=True
):
    """FlowNet's formulation: zero-pad both, window corners at (y, x) * stride1 + md."""
    a, b = (
        np.pad(t.astype(np.float64), ((0, 0), (0, 0), (pad_size,) * 2, (pad_size,) * 2))
        for t in (a, b)
    )
    n, c, ph, pw = a.shape
    k, md = kernel_size, max_displacement
    border = md + (k - 1) // 2
    oh = math.ceil((ph - 2 * border) / stride1)
    ow = math.ceil((pw - 2 * border) / stride1)
    r = md // stride2
    side = 2 * r + 1
    out = np.zeros((n, side * side, oh, ow))
    for d in range(side * side):
        dy, dx = (d // side - r) * stride2, (d % side - r) * stride2
        for i in range(oh):
            for j in range(ow):
                y1, x1 = i * stride1 + md, j * stride1 + md
                wa = a[:, :, y1 : y1 + k, x1 : x1 + k]
                y2, x2 = y1 + dy, x1 + dx
                wb = np.zeros_like(wa)
                ys, xs = max(y2, 0), max(x2, 0)
                ye, xe = min(y2 + k, ph), min(x2 + k, pw)
                if ys < ye and xs < xe:
                    wb[:, :, ys - y2 : ye - y2, xs - x2 : xe - x2] = b[:, :, ys:ye, xs:xe]
                t = wa * wb if is_multiply else np.abs(wa - wb)
                out[:, d, i, j] = t.sum(axis=(1, 2, 3)) / (k * k * c)
    return out.astype(np.float32)


def psroi_ref(
    x,
    rois,
    trans,
    no_trans,
    part_size,
    pooled_h,
    pooled_w,
    sample_per_part,
    spatial_scale,
    trans_std=0.1,
):
    """Per sample, MegDNN's geometry in float32, the bilinear value in float64."""
    f = np.float32

    def rnd(v):  # C's round: halves away from zero (np.round takes them to even)
        return f(np.sign(v) * np.floor(abs(v) + f(0.5)))

    _, c, h, w = x.shape
    out = np.zeros((len(rois), c, pooled_h, pooled_w))
    s = f(spatial_scale)
    for k, row in enumerate(rois.astype(np.float32)):
        b = int(row[0])
        x0, y0 = f(rnd(row[1]) * s - f(0.5)), f(rnd(row[2]) * s - f(0.5))
        rw = max(f((rnd(row[3]) + f(1)) * s - f(0.5)) - x0, f(0.1))
        rh = max(f((rnd(row[4]) + f(1)) * s - f(0.5)) - y0, f(0.1))
        bw, bh = f(rw / f(pooled_w)), f(rh / f(pooled_h))
        for ph in range(pooled_h):
            for pw in range(pooled_w):
                tx = ty = f(0)
                if not no_trans:
                    i = int(np.floor(f(ph) / f(pooled_h) * f(part_size)))
                    j = int(np.floor(f(pw) / f(pooled_w) * f(part_size)))
                    tx, ty = (
                        f(trans[k, 0, i, j] * f(trans_std)),
                        f(trans[k, 1, i, j] * f(trans_std)),
                    )
                ws = f(f(f(pw) * bw + x0) + f(tx * rw))
                hs = f(f(f(ph) * bh + y0) + f(ty * rh))
                vals = []
                for iy in range(sample_per_part):
                    for ix in range(sample_per_part):
                        sx = f(ws + f(ix) * f(bw / f(sample_per_part)))
                        sy = f(hs + f(iy) * f(bh / f(sample_per_part)))
                        if sx < -0.5 or sx > w - 0.5 or sy < -0.5 or sy > h - 0.5:
                            continue
                        sx, sy = min(max(sx, 0), w - 1), min(max(sy, 0), h - 1)
                        x_lo, y_lo = int(np.floor(sx)), int(np.floor(sy))
                        x_hi, y_hi = int(np.ceil(sx)), int(np.ceil(sy))
                        ax, ay = float(sx) - x_lo, float(sy) - y_lo
                        img = x[b].astype(np.float64)
                        vals.append(
                            (1 - ay) * (1 - ax) * img[:, y_lo, x_lo]
                            + ay * (1 - ax) * img[:, y_hi, x_lo]
                            + (1 - ay) * ax * img[:, y_lo, x_hi]
                            + ay * ax * img[:, y_hi, x_hi]
                        )
                if vals:
                    out[k, :, ph, pw] = np.mean(vals, axis=0)
    return out.astype(np.float32)


CORR_PARAMS = [
    {},
    {"kernel_size": 3, "max_displacement": 2, "pad_size": 2},
    {
        "kernel_size": 3,
        "max_displacement": 4,
        "stride1": 2,
        "stride2": 2,
        "pad_size": 3,
        "is_multiply": False,
    },
    {"max_displacement": 2, "stride1": 3, "pad_size": 1},
    {"kernel_size": 5, "max_displacement": 0, "pad_size": 2},
]

ROIS = np.array(
    [
        [0, 1.2, 0.5, 6.3, 5.1],
        [1, -2, -1, 3, 4],
        [1, 5.5, 4, 11, 9.5],
        [0.6, 2, 3, 7.5, 7.5],
        [1, 3, 2, 3.4, 2.6],
        [0, 14, 12, 16, 15],
    ],
    np.float32,
)


# ----------------------------------------------------------------------------- correlation


@pytest.mark.parametrize("kw", CORR_PARAMS)
def test_correlation_matches_reference(kw):
    a, b = randn(2, 3, 7, 8), randn(2, 3, 7, 8)
    out = F.vision.correlation(a, b, **kw)
    np.testing.assert_allclose(out.numpy(), correlation_ref(a, b, **kw), rtol=1e-5, atol=1e-6)


def test_correlation_positional_arguments_and_f_nn():
    a, b = randn(1, 2, 6, 6), randn(1, 2, 6, 6)
    got = F.vision.correlation(a, b, 3, 2, 1, 1, 2, False)
    want = correlation_ref(a, b, 3, 2, 1, 1, 2, False)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-6)
    assert F.nn.correlation is F.vision.correlation
    assert not hasattr(F, "correlation")  # as MegEngine's F


def _kink_free(shape, lo, hi):
    mag = rng.uniform(lo, hi, shape)
    return np.where(rng.random(shape) < 0.5, -mag, mag).astype(np.float32)


@pytest.mark.parametrize("kw", CORR_PARAMS)
def test_correlation_gradients(kw):
    # |a - b|, |a| and |b| stay above 0.1: the finite differences never cross a kink.
    a, b = _kink_free((1, 2, 6, 7), 0.5, 1.0), _kink_free((1, 2, 6, 7), 0.1, 0.3)
    check_grad(lambda x, y: F.vision.correlation(x, y, **kw), a, b, eps=1e-2)


def test_correlation_edge_shapes():
    # A 1x1 image padded to a 3x3 window: one output pixel per displacement.
    a = np.array([0.5, -2], np.float32).reshape(1, 2, 1, 1)
    b = np.array([4, 3], np.float32).reshape(1, 2, 1, 1)
    out = F.vision.correlation(a, b, kernel_size=3, pad_size=2).numpy()
    assert out.shape == (1, 9, 1, 1)
    want = np.zeros(9, np.float32)
    want[4] = (0.5 * 4 - 2 * 3) / 18
    np.testing.assert_allclose(out.ravel(), want, atol=1e-7)
    empty = F.vision.correlation(
        np.zeros((0, 2, 5, 5), np.float32), np.zeros((0, 2, 5, 5), np.float32)
    )
    assert empty.shape == (0, 9, 3, 3)


def test_correlation_bad_input():
    x = randn(1, 2, 5, 5)
    with pytest.raises(ValueError, match="kernel_size must be odd"):
        F.vision.correlation(x, x, kernel_size=2)
    with pytest.raises(ValueError, match="one shape"):
        F.vision.correlation(x, randn(1, 2, 5, 6))
    with pytest.raises(ValueError, match="4-dim"):
        F.vision.correlation(randn(2, 5, 5), randn(2, 5, 5))
    with pytest.raises(ValueError, match="stride1 must be an integer >= 1"):
        F.vision.correlation(x, x, stride1=0)
    with pytest.raises(TypeError, match="float tensor"):
        F.vision.correlation(x.astype(np.int32), x.astype(np.int32))
    with pytest.raises(Exception, match="smaller than the window"):
        F.vision.correlation(x, x, kernel_size=3, max_displacement=2)


# ----------------------------------------------------------------------------- psroi pooling

PSROI_PARAMS = [
    (True, 3, 3, 3, 2, 1.0, 0.1),
    (False, 3, 3, 3, 2, 1.0, 0.1),
    (False, 2, 2, 2, 3, 0.5, 0.3),
    (True, 1, 2, 3, 1, 0.7, 0.1),
]


@pytest.mark.parametrize("args", PSROI_PARAMS)
def test_deformable_psroi_pooling_matches_reference(args):
    x = randn(2, 3, 9, 10)
    trans = rng.uniform(-1, 1, (6, 2, args[2], args[3])).astype(np.float32)
    out = F.deformable_psroi_pooling(x, ROIS, trans, *args)
    np.testing.assert_allclose(out.numpy(), psroi_ref(x, ROIS, trans, *args), rtol=1e-5, atol=1e-6)
    module = M.DeformablePSROIPooling(*args)
    np.testing.assert_array_equal(module(x, ROIS, trans).numpy(), out.numpy())
    assert F.nn.deformable_psroi_pooling is F.deformable_psroi_pooling


def test_deformable_psroi_pooling_gradients():
    x = randn(2, 3, 9, 10)
    rois = np.array([[0, 2, 1, 6, 5], [1, 3, 2, 7, 6], [0.6, 1, 2, 5, 7]], np.float32)
    trans = rng.uniform(-0.3, 0.3, (3, 2, 3, 3)).astype(np.float32)
    check_grad(lambda a: F.deformable_psroi_pooling(a, rois, trans, False, 3, 3, 3, 2, 1.0), x)
    # Samples stay inside the image; a small step keeps them inside one pixel cell.
    check_grad(
        lambda t: F.deformable_psroi_pooling(x, rois, t, False, 3, 3, 3, 2, 1.0), trans, eps=1e-3
    )
    # no_trans: trans gets no gradient, as in MegEngine.
    xt, tt = mge.Parameter(x), mge.Parameter(trans)
    gm = GradManager().attach([xt, tt])
    with gm:
        gm.backward(F.deformable_psroi_pooling(xt, rois, tt, True, 3, 3, 3, 2, 1.0).sum())
    assert xt.grad is not None and tt.grad is None


def test_deformable_psroi_pooling_bad_input():
    x, trans = randn(2, 3, 9, 10), randn(6, 2, 3, 3)
    with pytest.raises(ValueError, match="part_size 2 must equal pooled_h 3"):
        F.deformable_psroi_pooling(x, ROIS, trans, False, 2, 3, 3, 2, 1.0)
    with pytest.raises(ValueError, match=r"rois must have shape \(K, 5\)"):
        F.deformable_psroi_pooling(x, ROIS[:, :4], trans, True, 3, 3, 3, 2, 1.0)
    with pytest.raises(ValueError, match="trans must be a 4-dim"):
        F.deformable_psroi_pooling(x, ROIS, trans[0], True, 3, 3, 3, 2, 1.0)
    with pytest.raises(ValueError, match="sample_per_part must be an integer >= 1"):
        F.deformable_psroi_pooling(x, ROIS, trans, True, 3, 3, 3, 0, 1.0)
    with pytest.raises(Exception, match=r"trans must be \(at least K = 6, 2, 3, 3\)"):
        F.deformable_psroi_pooling(x, ROIS, trans[:4], False, 3, 3, 3, 2, 1.0)
    with pytest.raises(IndexError, match="is not an image of the batch"):
        F.deformable_psroi_pooling(x, ROIS * [[3, 1, 1, 1, 1]], trans, True, 3, 3, 3, 2, 1.0)


# ----------------------------------------------------------------------------- MegEngine 1.13

FIXTURE = np.load(os.path.join(FIXTURES, "correlation_psroi.npz"))
with open(os.path.join(FIXTURES, "correlation_psroi.json")) as _f:
    CASES = json.load(_f)


def _grads(fn, arrays, w):
    params = [mge.Parameter(a) for a in arrays]
    gm = GradManager().attach(params)
    with gm:
        out = fn(*params)
        gm.backward((out * mge.Tensor(w)).sum())
    return out.numpy(), [p.grad for p in params]


@pytest.mark.parametrize("name", sorted(CASES["correlation"]))
def test_correlation_matches_megengine_1_13(name):
    kw = CASES["correlation"][name]
    a, b = FIXTURE["inputs.data1"], FIXTURE["inputs.data2"]
    out, (g1, g2) = _grads(
        lambda x, y: F.vision.correlation(x, y, **kw), [a, b], FIXTURE[f"{name}.w"]
    )
    np.testing.assert_allclose(out, FIXTURE[f"{name}.out"], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(g2.numpy(), FIXTURE[f"{name}.grad_data2"], rtol=1e-5, atol=1e-6)
    if f"{name}.grad_data1" in FIXTURE:
        np.testing.assert_allclose(g1.numpy(), FIXTURE[f"{name}.grad_data1"], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", sorted(CASES["deformable_psroi_pooling"]))
def test_deformable_psroi_pooling_matches_megengine_1_13(name):
    args = CASES["deformable_psroi_pooling"][name]
    trans = FIXTURE["inputs.trans3"] if args[2] == 3 else FIXTURE["inputs.trans2"]
    rois = FIXTURE["inputs.rois"]
    out, (gx, gt) = _grads(
        lambda x, t: F.deformable_psroi_pooling(x, rois, t, *args),
        [FIXTURE["inputs.feat"], trans],
        FIXTURE[f"{name}.w"],
    )
    np.testing.assert_allclose(out, FIXTURE[f"{name}.out"], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(gx.numpy(), FIXTURE[f"{name}.grad_feat"], rtol=1e-5, atol=1e-6)
    if f"{name}.grad_trans" in FIXTURE:
        np.testing.assert_allclose(gt.numpy(), FIXTURE[f"{name}.grad_trans"], rtol=1e-5, atol=1e-5)
    else:
        assert gt is None
