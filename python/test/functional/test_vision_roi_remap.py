"""F.vision.roi_align, roi_pooling and remap against NumPy references written here (per-sample,
per-bin and per-pixel loops), finite-difference gradients, edge shapes, bad input, and MegEngine
1.13's own outputs and gradients (fixtures/megengine_1_13/vision_ops, written by
fixtures/make_vision_op_fixtures.py; this test never imports MegEngine)."""

import json
import math
import os

import numpy as np
import pytest
from gradcheck import check_grad
from opencv_border import fold

import megengine as mge
import megengine.functional as F
from megengine.autodiff import GradManager

rng = np.random.default_rng(1)
FIXTURES = os.path.join(os.path.dirname(__file__), "..", "fixtures", "megengine_1_13", "vision_ops")


def randn(*shape):
    return rng.normal(size=shape).astype(np.float32)


# ----------------------------------------------------------------------------- references


def bilinear_zero(img, y, x):
    """img (C, H, W) at (y, x), each of the four pixels around it weighted by 1 - distance, a
    pixel outside reading 0 (MegEngine's roi_align rule)."""
    h, w = img.shape[1:]
    v = np.zeros(img.shape[0])
    for r in (math.floor(y), math.floor(y) + 1):
        for q in (math.floor(x), math.floor(x) + 1):
            if 0 <= r < h and 0 <= q < w:
                v += (1 - abs(y - r)) * (1 - abs(x - q)) * img[:, r, q]
    return v


def roi_align_ref(x, rois, out_hw, mode="average", scale=1.0, points=2, aligned=True):
    x = x.astype(np.float64)
    ph_n, pw_n = (out_hw, out_hw) if isinstance(out_hw, int) else out_hw
    sh, sw = (points, points) if isinstance(points, int) else points
    off = 0.5 if aligned else 0.0
    out = np.zeros((len(rois), x.shape[1], ph_n, pw_n))
    for k, (b, x1, y1, x2, y2) in enumerate(rois.astype(np.float64)):
        x1, y1, x2, y2 = (v * scale - off for v in (x1, y1, x2, y2))
        bh, bw = max(y2 - y1, 0) / ph_n, max(x2 - x1, 0) / pw_n
        gh = sh or max(1, math.ceil(bh))
        gw = sw or max(1, math.ceil(bw))
        for ph in range(ph_n):
            for pw in range(pw_n):
                vals = [
                    bilinear_zero(
                        x[int(b)],
                        y1 + bh * (ph + (iy + 0.5) / gh),
                        x1 + bw * (pw + (ix + 0.5) / gw),
                    )
                    for iy in range(gh)
                    for ix in range(gw)
                ]
                vals = np.stack(vals)
                out[k, :, ph, pw] = vals.max(0) if mode == "max" else vals.mean(0)
    return out


def roi_pooling_ref(x, rois, out_hw, mode="max", scale=1.0):
    """MegDNN's integer bins (in exact arithmetic: the rois used here keep float32 exact)."""
    x = x.astype(np.float64)
    ph_n, pw_n = (out_hw, out_hw) if isinstance(out_hw, int) else out_hw
    h, w = x.shape[2:]
    out = np.zeros((len(rois), x.shape[1], ph_n, pw_n))

    def rnd(v):  # halves away from zero, as C's round
        return int(math.floor(abs(v) + 0.5) * (1 if v >= 0 else -1))

    for k, (b, x1, y1, x2, y2) in enumerate(rois.astype(np.float64)):
        x0, y0 = rnd(x1 * scale), rnd(y1 * scale)
        ew, eh = max(rnd(x2 * scale) - x0 + 1, 1), max(rnd(y2 * scale) - y0 + 1, 1)
        for ph in range(ph_n):
            hs = min(max(math.floor(ph * eh / ph_n) + y0, 0), h)
            he = min(max(math.ceil((ph + 1) * eh / ph_n) + y0, 0), h)
            for pw in range(pw_n):
                ws = min(max(math.floor(pw * ew / pw_n) + x0, 0), w)
                we = min(max(math.ceil((pw + 1) * ew / pw_n) + x0, 0), w)
                patch = x[int(b), :, hs:he, ws:we].reshape(x.shape[1], -1)
                if patch.shape[1]:
                    out[k, :, ph, pw] = patch.max(1) if mode == "max" else patch.mean(1)
    return out


def remap_ref(x, map_xy, mode="replicate", scalar=0.0, interp="linear"):
    x, map_xy = x.astype(np.float64), map_xy.astype(np.float64)
    n, c, ih, iw = x.shape
    oh, ow = map_xy.shape[1:3]
    out = np.zeros((n, c, oh, ow))

    def tap(b, r, q):
        fr, fq = fold(int(r), ih, mode), fold(int(q), iw, mode)
        return scalar if fr is None or fq is None else x[b, :, fr, fq]

    for b in range(n):
        for h in range(oh):
            for w in range(ow):
                px, py = map_xy[b, h, w]
                if interp == "nearest":
                    out[b, :, h, w] = tap(b, np.rint(py), np.rint(px))
                    continue
                for r in (math.floor(py), math.floor(py) + 1):
                    for q in (math.floor(px), math.floor(px) + 1):
                        out[b, :, h, w] += (1 - abs(py - r)) * (1 - abs(px - q)) * tap(b, r, q)
    return out


# Rois over a (3, C, 7, 6) feature: inside, past each edge, inverted (empty), entirely outside,
# and a fractional batch column (truncated).
ROIS = np.array(
    [
        [0, 1.2, 0.5, 4.3, 5.1],
        [2, -2, -1.5, 3, 8],
        [1, 5, 4, 1, 2],
        [1, 9, 10, 12, 11.5],
        [2.7, 0, 0, 5.5, 6.5],
    ],
    np.float32,
)
POOL_ROIS = np.array(
    [[0, 1, 0, 4, 5], [2, -2, -1, 3, 8], [1, 5, 4, 1, 2], [1, 9, 10, 12, 11], [2.7, 0, 0, 5, 6]],
    np.float32,
)


# ----------------------------------------------------------------------------- roi_align


@pytest.mark.parametrize("mode", ["average", "max"])
@pytest.mark.parametrize("aligned", [True, False])
@pytest.mark.parametrize("points", [2, (1, 3), 0, (0, 2)])
def test_roi_align_matches_reference(mode, aligned, points):
    x = randn(3, 2, 7, 6)
    kw = {"mode": mode, "spatial_scale": 0.75, "sample_points": points, "aligned": aligned}
    out = F.vision.roi_align(x, ROIS, (2, 3), **kw)
    assert out.shape == (5, 2, 2, 3) and out.dtype == np.float32
    ref = roi_align_ref(x, ROIS, (2, 3), mode, 0.75, points, aligned)
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-5, atol=1e-6)


def test_roi_align_known_values_and_dtypes():
    x = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    rois = np.array([[0, 0, 0, 2, 2], [0, 1, 1, 3, 4]], np.float32)
    assert F.vision.roi_align(x, rois, (1, 2)).numpy().tolist() == [
        [[[1.875, 3.0]]],
        [[[9.0, 10.0]]],
    ]
    # MegEngine computes in float32: other dtypes (and float64 rois) are converted.
    half = F.vision.roi_align(x.astype(np.float16), rois.astype(np.float64), (1, 2))
    assert half.dtype == np.float32 and half.numpy().tolist() == [[[[1.875, 3.0]]], [[[9.0, 10.0]]]]


def test_roi_align_edge_shapes():
    x = randn(2, 3, 4, 4)
    assert F.vision.roi_align(x, np.zeros((0, 5), np.float32), 2).shape == (0, 3, 2, 2)
    far = F.vision.roi_align(x, [[1, 10, 10, 14, 12]], 2)
    assert np.all(far.numpy() == 0)
    one = F.vision.roi_align(x, [[1, 1, 1, 2, 3]], 1, mode="max", sample_points=1, aligned=False)
    np.testing.assert_allclose(one.numpy()[0, :, 0, 0], bilinear_zero(x[1], 2, 1.5), rtol=1e-6)
    assert F.vision.roi_align(x, [[0, 0, 0, 2, 2]], (0, 3)).shape == (1, 3, 0, 3)


@pytest.mark.parametrize("points", [2, 0])
def test_roi_align_grad(points):
    x = randn(3, 2, 7, 6)
    check_grad(
        lambda a: F.vision.roi_align(a, ROIS, (2, 3), spatial_scale=0.75, sample_points=points),
        x,
    )
    # max: the argmax sample's taps take the gradient (random data: no near ties).
    check_grad(lambda a: F.vision.roi_align(a, ROIS[:2], 2, mode="max", sample_points=1), x)


def test_roi_align_errors():
    x = randn(2, 1, 4, 4)
    rois = np.array([[0, 0, 0, 2, 2]], np.float32)
    with pytest.raises(ValueError, match="roi_align: inp must be a 4-dim"):
        F.vision.roi_align(x[0], rois, 2)
    with pytest.raises(ValueError, match=r"roi_align: rois must have shape \(K, 5\)"):
        F.vision.roi_align(x, rois[:, :4], 2)
    with pytest.raises(ValueError, match="roi_align: mode must be 'max' or 'average'"):
        F.vision.roi_align(x, rois, 2, mode="min")
    with pytest.raises(ValueError, match="roi_align: sample_points must not be negative"):
        F.vision.roi_align(x, rois, 2, sample_points=-1)
    with pytest.raises(ValueError, match="roi_align: output_shape needs 2 values"):
        F.vision.roi_align(x, rois, (1, 2, 3))
    with pytest.raises(IndexError, match=r"rois\[0, 0\] = 2 is not an image of the batch \[0, 2\)"):
        F.vision.roi_align(x, [[2, 0, 0, 1, 1]], 2).numpy()


# ----------------------------------------------------------------------------- roi_pooling


@pytest.mark.parametrize("mode", ["max", "average"])
@pytest.mark.parametrize("scale", [1.0, 0.5])
@pytest.mark.parametrize("out_hw", [(2, 3), 1, (3, 2)])
def test_roi_pooling_matches_reference(mode, scale, out_hw):
    x = randn(3, 2, 7, 6)
    out = F.vision.roi_pooling(x, POOL_ROIS, out_hw, mode=mode, scale=scale)
    ref = roi_pooling_ref(x, POOL_ROIS, out_hw, mode, scale)
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-6, atol=1e-7)


def test_roi_pooling_known_values_edges_and_dtype():
    x = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    rois = np.array([[0, 0, 0, 2, 2], [0, 1, 1, 3, 4]], np.float32)
    assert F.vision.roi_pooling(x, rois, (1, 2)).numpy().tolist() == [
        [[[9.0, 10.0]]],
        [[[14.0, 15.0]]],
    ]
    half = F.vision.roi_pooling(x.astype(np.float16), rois, 2, mode="average")
    assert half.dtype == np.float16
    assert half.numpy()[1, 0].tolist() == [[7.5, 8.5], [13.5, 14.5]]
    assert F.vision.roi_pooling(x, np.zeros((0, 5), np.float32), 2).shape == (0, 1, 2, 2)
    # A roi beyond the image: empty bins pool to 0.
    assert np.all(F.vision.roi_pooling(x, [[0, 5, 5, 8, 8]], 2).numpy() == 0)
    assert F.vision.roi_pooling(x, [[0, 0, 0, 3, 3]], 1).numpy().ravel().tolist() == [15.0]


@pytest.mark.parametrize("mode", ["max", "average"])
def test_roi_pooling_grad(mode):
    # Values 0.1 apart: no step of the differences (0.01) changes a bin's argmax.
    x = (rng.permutation(3 * 2 * 7 * 6).reshape(3, 2, 7, 6) * 0.1).astype(np.float32)
    check_grad(lambda a: F.vision.roi_pooling(a, POOL_ROIS, (3, 2), mode=mode, scale=0.5), x)


def test_roi_pooling_errors():
    x = randn(2, 1, 4, 4)
    rois = np.array([[0, 0, 0, 2, 2]], np.float32)
    with pytest.raises(TypeError, match="roi_pooling: inp must be a float tensor"):
        F.vision.roi_pooling(x.astype(np.int32), rois, 2)
    with pytest.raises(ValueError, match="roi_pooling: mode must be 'max' or 'average'"):
        F.vision.roi_pooling(x, rois, 2, mode="sum")
    with pytest.raises(ValueError, match="roi_pooling: output_shape must not be negative"):
        F.vision.roi_pooling(x, rois, (-1, 2))
    with pytest.raises(IndexError, match=r"rois\[0, 0\] = -1 is not an image"):
        F.vision.roi_pooling(x, [[-1, 0, 0, 1, 1]], 2).numpy()


# ----------------------------------------------------------------------------- remap

MODES = ["replicate", "reflect", "reflect_101", "wrap", "constant"]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("interp", ["linear", "nearest"])
def test_remap_matches_reference(mode, interp):
    x = randn(2, 3, 5, 6)
    map_xy = rng.uniform(-3, 9, (2, 4, 7, 2)).astype(np.float32)
    out = F.vision.remap(x, map_xy, border_mode=mode, scalar=0.5, interp_mode=interp)
    ref = remap_ref(x, map_xy, mode, 0.5, interp)
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-5, atol=1e-6)


def test_remap_known_values_exports_and_edges():
    inp = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    map_xy = np.array([[[1.0, 0.0], [0.0, 1.0]], [[0.0, 1.0], [0.0, 1.0]]], np.float32)
    out = F.vision.remap(inp, map_xy.reshape(1, 2, 2, 2))
    assert out.numpy().tolist() == [[[[1.0, 4.0], [4.0, 4.0]]]]  # MegEngine's example
    assert F.remap is F.vision.remap and F.nn.remap is F.vision.remap
    # Nearest rounds halves to even; a non-finite point reads scalar in constant mode.
    pts = np.array([[[[1.5, 1.5], [2.5, 0.5], [np.nan, 0]]]], np.float32)
    near = F.vision.remap(inp, pts, "constant", 7.0, "NEAREST")
    assert near.numpy().tolist() == [[[[10.0, 2.0, 7.0]]]]
    assert F.vision.remap(inp, np.zeros((1, 0, 3, 2), np.float32)).shape == (1, 1, 0, 3)
    one = F.vision.remap(randn(2, 3, 1, 1), rng.uniform(-2, 2, (2, 1, 1, 2)).astype(np.float32))
    assert one.shape == (2, 3, 1, 1)
    half = F.vision.remap(inp.astype(np.float16), map_xy.reshape(1, 2, 2, 2))
    assert half.dtype == np.float16 and half.numpy().tolist() == [[[[1.0, 4.0], [4.0, 4.0]]]]


@pytest.mark.parametrize("mode", ["replicate", "reflect_101", "wrap", "constant"])
def test_remap_grad(mode):
    x = randn(2, 2, 5, 4)
    map_xy = rng.uniform(-2, 6, (2, 3, 4, 2)).astype(np.float32)

    def fn(a, m):
        return F.vision.remap(a, m, border_mode=mode, scalar=0.25)

    check_grad(fn, x, map_xy, wrt=(0,))
    # The map's gradient against central differences of the float64 reference with small steps
    # (float32 steps would straddle the kinks at whole pixels).
    w = rng.normal(size=(2, 2, 3, 4))
    m = mge.Parameter(map_xy)
    gm = GradManager().attach([m])
    with gm:
        gm.backward((fn(mge.Tensor(x), m) * mge.Tensor(w.astype(np.float32))).sum())
    num = np.zeros(map_xy.shape)
    eps = 1e-6
    for i in np.ndindex(num.shape):
        mp, mm = map_xy.astype(np.float64), map_xy.astype(np.float64)
        mp[i] += eps
        mm[i] -= eps
        diff = remap_ref(x, mp, mode, 0.25) - remap_ref(x, mm, mode, 0.25)
        num[i] = (w * diff).sum() / (2 * eps)
    np.testing.assert_allclose(m.grad.numpy(), num, rtol=1e-3, atol=1e-3)


def test_remap_errors():
    x = randn(2, 1, 4, 4)
    m = np.zeros((2, 3, 3, 2), np.float32)
    with pytest.raises(ValueError, match=r"remap: map_xy must have shape \(2, o_h, o_w, 2\)"):
        F.vision.remap(x, m[:1])
    with pytest.raises(ValueError, match="remap: border_mode must be one of"):
        F.vision.remap(x, m, border_mode="transparent")
    with pytest.raises(ValueError, match="remap: interp_mode must be 'linear' or 'nearest'"):
        F.vision.remap(x, m, interp_mode="cubic")
    with pytest.raises(TypeError, match="remap: inp must be a float tensor"):
        F.vision.remap(x.astype(np.int32), m)
    with pytest.raises(ValueError, match="remap: inp must be a 4-dim"):
        F.vision.remap(x[0], m)


# ----------------------------------------------------------------------------- MegEngine 1.13


def _fixture(name):
    return np.load(os.path.join(FIXTURES, name + ".npy"))


with open(os.path.join(FIXTURES, "cases.json")) as _f:
    CASES = json.load(_f)

# Largest difference from MegEngine 1.13 allowed per op: float32 rounding of the same sums
# (MegEngine adds its samples in float32, these kernels in double).
MEGENGINE_ATOL = {"roi_align": 2e-6, "roi_pooling": 1e-6, "remap": 4e-6}


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_megengine_1_13(name):
    case = CASES[name]
    fn = getattr(F.vision, case["fn"])
    arrays = {a: _fixture(f"inputs.{a}") for a in case["args"]}
    params = {a: mge.Parameter(v) for a, v in arrays.items()}
    kwargs = dict(case["kwargs"])
    for k, v in kwargs.items():
        if isinstance(v, list):
            kwargs[k] = tuple(v)
    gm = GradManager().attach([params[a] for a in case["wrt"]])
    with gm:
        out = fn(*[params[a] for a in case["args"]], **kwargs)
        if case["wrt"]:
            gm.backward((out * mge.Tensor(_fixture(f"inputs.{case['w']}"))).sum())
    atol = MEGENGINE_ATOL[case["fn"]]
    np.testing.assert_allclose(out.numpy(), _fixture(f"{name}.out"), rtol=0, atol=atol)
    for a in case["wrt"]:
        np.testing.assert_allclose(
            params[a].grad.numpy(), _fixture(f"{name}.grad_{a}"), rtol=1e-5, atol=4 * atol
        )
