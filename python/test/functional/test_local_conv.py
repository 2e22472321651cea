"""F.local_conv2d and M.LocalConv2d against a NumPy loop over output positions (each with its
own filter), groups, stride, padding, dilation, errors and gradients."""

import numpy as np
import pytest
from gradcheck import check_grad

import megengine as mge
import megengine.functional as F
import megengine.module as M

rng = np.random.default_rng(11)


def local_ref(x, w, stride, padding, dilation):
    g, oh, ow, icg, kh, kw, ocg = w.shape
    (sh, sw), (ph, pw), (dh, dw) = stride, padding, dilation
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    out = np.zeros((x.shape[0], g * ocg, oh, ow))
    for gi, y, xx in np.ndindex(g, oh, ow):
        rows = slice(y * sh, y * sh + dh * (kh - 1) + 1, dh)
        cols = slice(xx * sw, xx * sw + dw * (kw - 1) + 1, dw)
        patch = xp[:, gi * icg : (gi + 1) * icg, rows, cols]  # (N, ICg, KH, KW)
        out[:, gi * ocg : (gi + 1) * ocg, y, xx] = np.einsum("ncij,cijo->no", patch, w[gi, y, xx])
    return out


@pytest.mark.parametrize(
    "groups,stride,padding,dilation", [(1, (1, 1), (0, 0), (1, 1)), (2, (2, 1), (1, 0), (1, 2))]
)
def test_local_conv2d(groups, stride, padding, dilation):
    x = rng.normal(size=(2, 4, 6, 7)).astype(np.float32)
    kh, kw = 3, 2
    oh = (6 + 2 * padding[0] - dilation[0] * (kh - 1) - 1) // stride[0] + 1
    ow = (7 + 2 * padding[1] - dilation[1] * (kw - 1) - 1) // stride[1] + 1
    w = rng.normal(size=(groups, oh, ow, 4 // groups, kh, kw, 6 // groups)).astype(np.float32)
    b = rng.normal(size=(1, 6, 1, 1)).astype(np.float32)
    got = F.local_conv2d(x, w, b, stride, padding, dilation)
    want = local_ref(x, w, stride, padding, dilation) + b
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-4, atol=1e-5)


def test_local_conv2d_errors_and_grad():
    x, w = np.ones((1, 2, 4, 4), np.float32), np.ones((1, 2, 2, 2, 3, 3, 1), np.float32)
    with pytest.raises(ValueError, match="weight must have 7 dims"):
        F.local_conv2d(x, w[0])
    with pytest.raises(ValueError, match="has 2 channels"):
        F.local_conv2d(x, np.ones((1, 2, 2, 3, 3, 3, 1), np.float32))
    with pytest.raises(ValueError, match="filters for 3x3"):
        F.local_conv2d(x, np.ones((1, 3, 3, 2, 3, 3, 1), np.float32))
    with pytest.raises(ValueError, match="cross_correlation"):
        F.local_conv2d(x, w, conv_mode="convolution")
    check_grad(
        lambda x, w: F.nn.local_conv2d(x, w, None, 1, 1),
        rng.normal(size=(1, 2, 3, 3)).astype(np.float32),
        rng.normal(size=(2, 4, 4, 1, 2, 2, 1)).astype(np.float32),
        wrt=(0, 1),
    )


def test_local_conv2d_module():
    m = M.LocalConv2d(4, 6, 6, 7, (3, 2), (2, 1), (1, 0), groups=2)
    assert m.weight.shape == (2, 3, 6, 2, 3, 2, 3) and m.bias is None
    std = np.sqrt(1 / (64 * 9))  # N(0, 1 / fan_in) as MegEngine's
    assert abs(M.LocalConv2d(64, 8, 8, 8, 3).weight.numpy().std() - std) < 0.05 * std
    x = rng.normal(size=(2, 4, 6, 7)).astype(np.float32)
    want = local_ref(x, m.weight.numpy(), (2, 1), (1, 0), (1, 1))
    np.testing.assert_allclose(m(mge.Tensor(x)).numpy(), want, rtol=1e-4, atol=1e-5)
    with pytest.raises(ValueError, match="divisible by groups"):
        M.LocalConv2d(3, 4, 5, 5, 3, groups=2)
