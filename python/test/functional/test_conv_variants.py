"""F.nn.deformable_conv2d / F.nn.region_restricted_conv and their modules: against NumPy
references written here, finite differences, the plain convolution they reduce to, MegEngine
1.13's outputs and gradients (fixtures/megengine_1_13/conv_variants, made by
fixtures/make_conv_variants_fixtures.py), bad input and edge shapes."""

import os

import numpy as np
import pytest
from gradcheck import check_grad

import megengine as mge
import megengine.functional as F
import megengine.module as M
from megengine.autodiff import GradManager

FIXTURES = os.path.join(
    os.path.dirname(__file__), "..", "fixtures", "megengine_1_13", "conv_variants"
)


def randn(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype("float32")


def _pair(v):
    return (v, v) if isinstance(v, int) else tuple(v)


def _dense_weight(w, groups):
    return w.reshape((-1,) + w.shape[2:]) if w.ndim == 5 else w


def _bilinear(plane, h, w):
    """MegEngine's rule: 0 outside (-1, H) x (-1, W); taps off the plane read 0."""
    H, W = plane.shape
    if not (h > -1 and w > -1 and h < H and w < W):
        return 0.0
    h0, w0 = int(np.floor(h)), int(np.floor(w))
    lh, lw = h - h0, w - w0
    v = 0.0
    for r, wr in ((h0, 1 - lh), (h0 + 1, lh)):
        for c, wc in ((w0, 1 - lw), (w0 + 1, lw)):
            if 0 <= r < H and 0 <= c < W:
                v += wr * wc * plane[r, c]
    return v


def deformable_ref(x, w, offset, mask, stride=1, padding=0, dilation=1, groups=1):
    x, offset, mask = (np.asarray(a, np.float64) for a in (x, offset, mask))
    w = _dense_weight(np.asarray(w, np.float64), groups)
    (sh, sw), (ph, pw), (dh, dw) = _pair(stride), _pair(padding), _pair(dilation)
    n, ic, _, _ = x.shape
    oc, icg, kh, kw = w.shape
    taps = kh * kw
    dg = offset.shape[1] // (2 * taps)
    oh, ow = offset.shape[2:]
    ocg = oc // groups
    out = np.zeros((n, oc, oh, ow))
    for b in range(n):
        for c in range(ic):
            d = c // (ic // dg)
            g = c // icg
            for k in range(taps):
                i, j = divmod(k, kw)
                for y in range(oh):
                    for z in range(ow):
                        hh = y * sh - ph + i * dh + offset[b, 2 * (d * taps + k), y, z]
                        ww = z * sw - pw + j * dw + offset[b, 2 * (d * taps + k) + 1, y, z]
                        s = mask[b, d * taps + k, y, z] * _bilinear(x[b, c], hh, ww)
                        out[b, g * ocg : (g + 1) * ocg, y, z] += (
                            s * w[g * ocg : (g + 1) * ocg, c % icg, i, j]
                        )
    return out


def region_ref(x, w, rin, rout, stride=1, padding=0, dilation=1, groups=1):
    x, w = np.asarray(x, np.float64), _dense_weight(np.asarray(w, np.float64), groups)
    (sh, sw), (ph, pw), (dh, dw) = _pair(stride), _pair(padding), _pair(dilation)
    n, _, H, W = x.shape
    oc, icg, kh, kw = w.shape
    oh, ow = rout.shape[1:]
    ocg = oc // groups
    out = np.zeros((n, oc, oh, ow))
    for b in range(n):
        for o in range(oc):
            g = o // ocg
            for y in range(oh):
                for z in range(ow):
                    for i in range(kh):
                        for j in range(kw):
                            r, c = y * sh - ph + i * dh, z * sw - pw + j * dw
                            if 0 <= r < H and 0 <= c < W and rin[b, r, c] == rout[b, y, z]:
                                out[b, o, y, z] += (
                                    x[b, g * icg : (g + 1) * icg, r, c] @ w[o, :, i, j]
                                )
    return out


def _out_size(size, k, s, p, d):
    return (size + 2 * p - d * (k - 1) - 1) // s + 1


def _deform_inputs(n, ic, oc, h, w, k, stride, padding, dilation, groups, dg, seed, reach=2.5):
    rng = np.random.default_rng(seed)
    (kh, kw), (sh, sw), (ph, pw), (dh, dw) = (_pair(v) for v in (k, stride, padding, dilation))
    oh, ow = _out_size(h, kh, sh, ph, dh), _out_size(w, kw, sw, pw, dw)
    x = rng.standard_normal((n, ic, h, w)).astype("float32")
    wt = rng.standard_normal((oc, ic // groups, kh, kw)).astype("float32")
    # Integer parts plus fractions in [0.2, 0.8]: no sample point near a kink of the bilinear
    # interpolation (an integer coordinate), which finite differences would straddle.
    whole = rng.integers(-int(reach), int(reach) + 1, (n, 2 * dg * kh * kw, oh, ow))
    offset = (whole + rng.uniform(0.2, 0.8, whole.shape)).astype("float32")
    mask = rng.uniform(0, 1, (n, dg * kh * kw, oh, ow)).astype("float32")
    return x, wt, offset, mask


DEFORM_CASES = [
    # n, ic, oc, h, w, k, stride, padding, dilation, groups, dg
    (1, 1, 1, 4, 5, 3, 1, 0, 1, 1, 1),
    (2, 4, 6, 5, 6, (2, 3), (1, 2), (1, 0), (2, 1), 2, 2),
    (1, 4, 2, 6, 4, 3, 2, 1, 1, 1, 4),
    (1, 2, 2, 3, 3, 1, 1, 2, 1, 2, 1),
]


@pytest.mark.parametrize("case", DEFORM_CASES)
def test_deformable_matches_numpy(case):
    stride, padding, dilation, groups = case[6:10]
    x, wt, offset, mask = _deform_inputs(*case, seed=1)
    y = F.nn.deformable_conv2d(x, wt, offset, mask, None, stride, padding, dilation, groups)
    ref = deformable_ref(x, wt, offset, mask, stride, padding, dilation, groups)
    np.testing.assert_allclose(y.numpy(), ref, rtol=1e-5, atol=1e-5)


def test_deformable_zero_offset_unit_mask_is_conv2d():
    x, wt, offset, mask = _deform_inputs(2, 4, 6, 7, 6, 3, (2, 1), 1, (1, 2), 2, 2, seed=2)
    w5 = wt.reshape(2, 3, 2, 3, 3)
    y = F.nn.deformable_conv2d(
        x, w5, np.zeros_like(offset), np.ones_like(mask), None, (2, 1), 1, (1, 2), 2
    )
    want = F.conv2d(x, w5, None, (2, 1), 1, (1, 2), 2)
    np.testing.assert_allclose(y.numpy(), want.numpy(), rtol=1e-5, atol=1e-5)


def test_deformable_integer_offsets_shift_the_input():
    # Every tap moved by (+1, -2) reads the input shifted by that much (zeros where it leaves).
    # No padding: a tap in the padding would read the image once shifted.
    x, wt, offset, mask = _deform_inputs(1, 2, 3, 8, 9, 3, 1, 0, 1, 1, 1, seed=3)
    offset[:, 0::2] = 1
    offset[:, 1::2] = -2
    y = F.nn.deformable_conv2d(x, wt, offset, np.ones_like(mask))
    shifted = np.zeros_like(x)
    shifted[:, :, :-1, 2:] = x[:, :, 1:, :-2]
    np.testing.assert_allclose(y.numpy(), F.conv2d(shifted, wt).numpy(), rtol=1e-5, atol=1e-5)


def test_deformable_grad_finite_differences():
    x, wt, offset, mask = _deform_inputs(1, 4, 2, 5, 5, (2, 3), 1, 1, 1, 2, 2, seed=4)
    b = randn(1, 2, 1, 1, seed=5)

    def fn(x, wt, offset, mask, b):
        return F.nn.deformable_conv2d(x, wt, offset, mask, b, padding=1, groups=2)

    # Along one coordinate the bilinear sample is linear within a cell, and no sample point is
    # within 0.2 of a cell's edge: the default step stays inside its cell.
    check_grad(fn, x, wt, offset, mask, b)


def test_deformable_module_matches_functional_and_megengine_keys():
    m = M.DeformableConv2d(4, 6, (3, 3), (1, 2), (1, 1), (2, 1), 2)
    d = np.load(os.path.join(FIXTURES, "deformable_conv2d.npz"))
    keys = [f"{k}:{tuple(v.shape)}" for k, v in sorted(m.state_dict().items())]
    assert keys == list(d["keys"])
    m.load_state_dict({"weight": d["weight"], "bias": d["bias"]})
    y = m(d["inp"], d["offset"], d["mask"])
    np.testing.assert_allclose(y.numpy(), d["y"], rtol=1e-5, atol=1e-5)


def test_deformable_matches_megengine():
    d = np.load(os.path.join(FIXTURES, "deformable_conv2d.npz"))
    names = ["inp", "weight", "offset", "mask", "bias"]
    params = [mge.Parameter(d[k]) for k in names]
    kw = {k: tuple(d["kw_" + k].tolist()) for k in ("stride", "padding", "dilation")}
    gm = GradManager().attach(params)
    with gm:
        y = F.nn.deformable_conv2d(*params, groups=int(d["kw_groups"]), **kw)
        gm.backward((y * mge.Tensor(d["dy"])).sum())
    # Max differences measured: y 1.7e-6, gradients up to 2.4e-6 (MegEngine sums in float32).
    np.testing.assert_allclose(y.numpy(), d["y"], rtol=1e-5, atol=1e-5)
    for k, p in zip(names, params):
        np.testing.assert_allclose(p.grad.numpy(), d["grad_" + k], rtol=1e-4, atol=1e-5, err_msg=k)


def test_deformable_bad_input():
    x, wt, offset, mask = _deform_inputs(1, 2, 2, 5, 5, 3, 1, 0, 1, 1, 1, seed=6)
    with pytest.raises(ValueError, match="cross_correlation"):
        F.nn.deformable_conv2d(x, wt, offset, mask, conv_mode="convolution")
    with pytest.raises(ValueError, match="4 dims"):
        F.nn.deformable_conv2d(x[0], wt, offset, mask)
    with pytest.raises(Exception, match="offset must have 2 \\* deformable_group"):
        F.nn.deformable_conv2d(x, wt, offset[:, :5], mask)
    with pytest.raises(Exception, match="mask must have deformable_group"):
        F.nn.deformable_conv2d(x, wt, offset, mask[:, :4])
    with pytest.raises(Exception, match="offset and mask must be \\(N, C, OH, OW\\)"):
        F.nn.deformable_conv2d(x, wt, offset[:, :, :2], mask[:, :, :2])
    with pytest.raises(Exception, match="deformable_group 4 must divide"):
        F.nn.deformable_conv2d(
            x, wt, np.concatenate([offset] * 4, 1), np.concatenate([mask] * 4, 1)
        )
    with pytest.raises(TypeError, match="float"):
        F.nn.deformable_conv2d(x.astype("int32"), wt, offset, mask)


def test_deformable_edge_shapes():
    # An empty batch; a 1x1 image whose every tap falls outside but the first.
    x, wt, offset, mask = _deform_inputs(0, 2, 3, 4, 4, 3, 1, 1, 1, 1, 1, seed=7)
    assert F.nn.deformable_conv2d(x, wt, offset, mask, padding=1).shape == (0, 3, 4, 4)
    x, wt, offset, mask = _deform_inputs(1, 1, 1, 1, 1, 3, 1, 1, 1, 1, 1, seed=8)
    y = F.nn.deformable_conv2d(x, wt, offset, mask, padding=1)
    np.testing.assert_allclose(y.numpy(), deformable_ref(x, wt, offset, mask, padding=1), atol=1e-6)
    # Points on the edge of the sampled range: h = -1 and h = H read 0, h = -0.5 half the edge.
    x = np.ones((1, 1, 2, 2), "float32")
    off = np.zeros((1, 2, 2, 2), "float32")
    off[0, 0] = [[-1, -0.5], [1, 0.5]]
    y = F.nn.deformable_conv2d(
        x, np.ones((1, 1, 1, 1), "float32"), off, np.ones((1, 1, 2, 2), "float32")
    )
    np.testing.assert_allclose(y.numpy()[0, 0], [[0, 0.5], [0, 0.5]])


RR_CASES = [
    # n, ic, oc, h, w, k, stride, padding, dilation, groups
    (1, 1, 1, 4, 5, 3, 1, 1, 1, 1),
    (2, 4, 6, 6, 5, (2, 3), (2, 1), (1, 2), (1, 2), 2),
    (1, 3, 3, 5, 5, 3, 1, 0, 1, 3),
]


def _rr_inputs(n, ic, oc, h, w, k, stride, padding, dilation, groups, seed, rdtype="int32"):
    rng = np.random.default_rng(seed)
    (kh, kw), (sh, sw), (ph, pw), (dh, dw) = (_pair(v) for v in (k, stride, padding, dilation))
    oh, ow = _out_size(h, kh, sh, ph, dh), _out_size(w, kw, sw, pw, dw)
    x = rng.standard_normal((n, ic, h, w)).astype("float32")
    wt = rng.standard_normal((groups, oc // groups, ic // groups, kh, kw)).astype("float32")
    rin = rng.integers(0, 3, (n, h, w)).astype(rdtype)
    rout = rng.integers(0, 3, (n, oh, ow)).astype(rdtype)
    return x, wt, rin, rout


@pytest.mark.parametrize("case", RR_CASES)
@pytest.mark.parametrize("rdtype", ["int32", "uint8"])
def test_region_restricted_matches_numpy(case, rdtype):
    x, wt, rin, rout = _rr_inputs(*case, seed=11, rdtype=rdtype)
    stride, padding, dilation, groups = case[6:]
    y = F.nn.region_restricted_conv(x, wt, rin, rout, None, stride, padding, dilation, groups)
    ref = region_ref(x, wt, rin, rout, stride, padding, dilation, groups)
    np.testing.assert_allclose(y.numpy(), ref, rtol=1e-5, atol=1e-5)


def test_region_restricted_one_region_is_conv2d():
    x, wt, rin, rout = _rr_inputs(2, 4, 6, 6, 5, 3, 1, 1, 1, 2, seed=12)
    y = F.nn.region_restricted_conv(
        x, wt, np.zeros_like(rin), np.zeros_like(rout), padding=1, groups=2
    )
    np.testing.assert_allclose(
        y.numpy(), F.conv2d(x, wt, padding=1, groups=2).numpy(), rtol=1e-5, atol=1e-5
    )


def test_region_restricted_grad_finite_differences():
    x, wt, rin, rout = _rr_inputs(1, 4, 2, 4, 5, 3, (1, 2), 1, 1, 2, seed=13)
    b = randn(1, 2, 1, 1, seed=14)

    def fn(x, wt, b):
        return F.nn.region_restricted_conv(x, wt, rin, rout, b, (1, 2), 1, 1, 2)

    check_grad(fn, x, wt, b, eps=1e-2)


@pytest.mark.parametrize("rdtype", ["int32", "uint8"])
def test_region_restricted_matches_megengine(rdtype):
    d = np.load(os.path.join(FIXTURES, f"region_restricted_conv_{rdtype}.npz"))
    m = M.RegionRestrictedConv(4, 4, 3, 2, padding=1)
    keys = [f"{k}:{tuple(v.shape)}" for k, v in sorted(m.state_dict().items())]
    assert keys == list(d["keys"])
    params = [mge.Parameter(d[k]) for k in ("inp", "weight", "bias")]
    gm = GradManager().attach(params)
    with gm:
        y = m.calc_conv(params[0], params[1], d["rin"], d["rout"], params[2])
        gm.backward((y * mge.Tensor(d["dy"])).sum())
    np.testing.assert_allclose(y.numpy(), d["y"], rtol=1e-5, atol=1e-5)
    for k, p in zip(("inp", "weight", "bias"), params):
        np.testing.assert_allclose(p.grad.numpy(), d["grad_" + k], rtol=1e-5, atol=1e-5, err_msg=k)


def test_region_restricted_bad_input():
    x, wt, rin, rout = _rr_inputs(1, 2, 2, 4, 4, 3, 1, 1, 1, 2, seed=15)
    with pytest.raises(TypeError, match="int32 or uint8"):
        F.nn.region_restricted_conv(x, wt, rin.astype("float32"), rout, padding=1, groups=2)
    with pytest.raises(TypeError, match="one dtype"):
        F.nn.region_restricted_conv(x, wt, rin, rout.astype("uint8"), padding=1, groups=2)
    with pytest.raises(ValueError, match="groups must be >= 1"):
        F.nn.region_restricted_conv(x, wt, rin, rout, padding=1, groups=0)
    with pytest.raises(Exception, match="rout must be \\(N, OH, OW\\)"):
        F.nn.region_restricted_conv(x, wt, rin, rout, groups=2)
    with pytest.raises(Exception, match="rin must be \\(N, IH, IW\\)"):
        F.nn.region_restricted_conv(x, wt, rin[:, :3], rout, padding=1, groups=2)
    with pytest.raises(ValueError, match="cross_correlation"):
        F.nn.region_restricted_conv(x, wt, rin, rout, padding=1, groups=2, conv_mode="convolution")


def test_region_restricted_module():
    m = M.RegionRestrictedConv(2, 4, 3, groups=2, padding=(1, 2))
    assert m.weight.shape == (2, 2, 1, 3, 3)
    assert m.get_pad_width() == ((0, 0), (0, 0), (1, 1), (2, 2))
    x, _, rin, _ = _rr_inputs(1, 2, 4, 4, 5, 3, 1, (1, 2), 1, 2, seed=16)
    rout = np.random.default_rng(0).integers(0, 3, (1, 4, 7)).astype("int32")
    y = m(x, rin, rout)
    ref = region_ref(x, m.weight.numpy(), rin, rout, 1, (1, 2), 1, 2) + m.bias.numpy()
    np.testing.assert_allclose(y.numpy(), ref, rtol=1e-5, atol=1e-5)
