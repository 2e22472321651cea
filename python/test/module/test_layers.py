"""Each layer's forward against NumPy, its default initialisation, and its argument errors."""

import math

import numpy as np
import pytest

import megengine as mge
import megengine.functional as F
import megengine.module as M
from megengine.autodiff import GradManager

rng = np.random.default_rng(0)


def _rand(*shape):
    return rng.normal(size=shape).astype(np.float32)


def _t(a):
    return mge.Tensor(a)


def _close(got, want, rtol=1e-4, atol=1e-5):
    np.testing.assert_allclose(got.numpy() if hasattr(got, "numpy") else got, want, rtol, atol)


# --------------------------------------------------------------------------- NumPy references
def np_conv(x, w, b, stride, pad, dil, groups):
    """N-d cross-correlation; w is (OC, C / groups, k...)."""
    nd = x.ndim - 2
    x = np.pad(x, [(0, 0), (0, 0)] + [(p, p) for p in pad])
    k = w.shape[2:]
    out_sp = [(x.shape[2 + d] - dil[d] * (k[d] - 1) - 1) // stride[d] + 1 for d in range(nd)]
    oc, cin = w.shape[0], w.shape[1]
    cout = oc // groups
    out = np.zeros((x.shape[0], oc, *out_sp), np.float64)
    for g in range(groups):
        xs = x[:, g * cin : (g + 1) * cin]
        ws = w[g * cout : (g + 1) * cout]
        for kk in np.ndindex(*k):
            sl = tuple(
                slice(kk[d] * dil[d], kk[d] * dil[d] + stride[d] * (out_sp[d] - 1) + 1, stride[d])
                for d in range(nd)
            )
            patch = xs[(slice(None), slice(None)) + sl]
            out[:, g * cout : (g + 1) * cout] += np.einsum(
                "nc...,oc->no...", patch, ws[(slice(None), slice(None)) + kk]
            )
    if b is not None:
        out += b.reshape(1, oc, *([1] * nd))
    return out


def np_conv_transpose2d(x, w, b, stride, pad, out_pad, dil):
    """w is (IC, OC, kh, kw); the adjoint of np_conv."""
    n, _, h, wd = x.shape
    oc, (kh, kw) = w.shape[1], w.shape[2:]
    full = np.zeros(
        (
            n,
            oc,
            (h - 1) * stride[0] + dil[0] * (kh - 1) + 1 + out_pad[0],
            (wd - 1) * stride[1] + dil[1] * (kw - 1) + 1 + out_pad[1],
        )
    )
    for i in range(kh):
        for j in range(kw):
            full[
                :,
                :,
                i * dil[0] : i * dil[0] + stride[0] * (h - 1) + 1 : stride[0],
                j * dil[1] : j * dil[1] + stride[1] * (wd - 1) + 1 : stride[1],
            ] += np.einsum("nihw,io->nohw", x, w[:, :, i, j])
    out = full[:, :, pad[0] : full.shape[2] - pad[0], pad[1] : full.shape[3] - pad[1]]
    return out + (0 if b is None else b.reshape(1, oc, 1, 1))


def np_pool(x, k, s, p, mode):
    n, c, h, w = x.shape
    oh, ow = (h + 2 * p[0] - k[0]) // s[0] + 1, (w + 2 * p[1] - k[1]) // s[1] + 1
    fill = -np.inf if mode == "max" else 0.0
    xp = np.pad(x, [(0, 0), (0, 0), (p[0], p[0]), (p[1], p[1])], constant_values=fill)
    ones = np.pad(np.ones((h, w)), [(p[0], p[0]), (p[1], p[1])])
    out = np.zeros((n, c, oh, ow))
    for i in range(oh):
        for j in range(ow):
            win = xp[:, :, i * s[0] : i * s[0] + k[0], j * s[1] : j * s[1] + k[1]]
            if mode == "max":
                out[:, :, i, j] = win.max(axis=(2, 3))
            elif mode == "average":
                out[:, :, i, j] = win.sum(axis=(2, 3)) / (k[0] * k[1])
            else:
                cnt = ones[i * s[0] : i * s[0] + k[0], j * s[1] : j * s[1] + k[1]].sum()
                out[:, :, i, j] = win.sum(axis=(2, 3)) / cnt
    return out


def np_adaptive(x, oshp, fn):
    h, w = x.shape[2:]
    out = np.zeros(x.shape[:2] + tuple(oshp))
    for i in range(oshp[0]):
        for j in range(oshp[1]):
            h0, h1 = (i * h) // oshp[0], -((-(i + 1) * h) // oshp[0])
            w0, w1 = (j * w) // oshp[1], -((-(j + 1) * w) // oshp[1])
            out[:, :, i, j] = fn(x[:, :, h0:h1, w0:w1], axis=(2, 3))
    return out


def np_norm(x, axes, eps):
    mean = x.mean(axis=axes, keepdims=True)
    var = x.var(axis=axes, keepdims=True)
    return (x - mean) / np.sqrt(var + eps)


def np_sigmoid(x):
    return 1 / (1 + np.exp(-x))


# --------------------------------------------------------------------------- Linear
@pytest.mark.parametrize("bias", [True, False])
def test_linear(bias):
    m = M.Linear(5, 3, bias=bias)
    assert m.weight.shape == (5, 3)[::-1]
    assert (m.bias is None) == (not bias)
    x = _rand(4, 5)
    want = x @ m.weight.numpy().T + (m.bias.numpy() if bias else 0)
    _close(m(_t(x)), want)
    x3 = _rand(2, 4, 5)  # leading axes pass through
    _close(m(_t(x3)), x3 @ m.weight.numpy().T + (m.bias.numpy() if bias else 0))
    _close(m(_t(x).T.T), want)  # a non-contiguous view
    assert m(_t(np.zeros((0, 5), np.float32))).shape == (0, 3)
    assert repr(m) == f"Linear(in_features=5, out_features=3, bias={bias})"


def test_linear_default_init():
    m = M.Linear(400, 300)
    w = m.weight.numpy()
    assert abs(w.mean()) < 0.002 and abs(w.std() - math.sqrt(1 / 400)) < 0.002
    assert not m.bias.numpy().any()
    assert not np.array_equal(w, M.Linear(400, 300).weight.numpy())


def test_linear_gradient_against_closed_form():
    m = M.Linear(3, 2)
    x = _rand(4, 3)
    gm = GradManager().attach(m.parameters())
    with gm:
        gm.backward(m(_t(x)).sum())
    _close(m.weight.grad, np.ones((4, 2)).T @ x)
    _close(m.bias.grad, np.full(2, 4.0))


# --------------------------------------------------------------------------- convolutions
@pytest.mark.parametrize(
    "kw",
    [
        {},
        {"stride": 2, "padding": 1},
        {"stride": (1, 2), "padding": (2, 0), "dilation": (2, 1)},
        {"groups": 2, "padding": 1},
        {"bias": False},
    ],
)
def test_conv2d(kw):
    m = M.Conv2d(4, 6, 3, **kw)
    groups = kw.get("groups", 1)
    w = m.weight.numpy()
    if groups > 1:
        assert w.shape == (groups, 3, 2, 3, 3)
        w = w.reshape(6, 2, 3, 3)
    else:
        assert w.shape == (6, 4, 3, 3)
    b = None if m.bias is None else m.bias.numpy()
    if b is not None:
        assert b.shape == (1, 6, 1, 1)
    x = _rand(2, 4, 9, 8)
    want = np_conv(x, w, b, m.stride, m.padding, m.dilation, groups)
    _close(m(_t(x)), want)


def test_conv2d_convolution_mode_flips_the_kernel():
    m = M.Conv2d(2, 3, (2, 3), padding=1, conv_mode="convolution")
    x = _rand(2, 2, 5, 4)
    flipped = m.weight.numpy()[:, :, ::-1, ::-1]
    _close(m(_t(x)), np_conv(x, flipped, m.bias.numpy(), (1, 1), (1, 1), (1, 1), 1))


def test_conv_transpose2d_grouped():
    m = M.ConvTranspose2d(4, 6, 3, stride=2, groups=2)
    assert m.weight.shape == (2, 2, 3, 3, 3)
    x = _rand(1, 4, 3, 3)
    w = m.weight.numpy()
    halves = [
        np_conv_transpose2d(x[:, 2 * g : 2 * g + 2], w[g], None, (2, 2), (0, 0), (0, 0), (1, 1))
        for g in range(2)
    ]
    want = np.concatenate(halves, axis=1) + m.bias.numpy()
    _close(m(_t(x)), want)


def test_conv2d_padding_modes():
    for mode, np_mode in (("reflect", "reflect"), ("replicate", "edge")):
        m = M.Conv2d(2, 3, 3, padding=1, padding_mode=mode)
        x = _rand(1, 2, 5, 6)
        xp = np.pad(x, [(0, 0), (0, 0), (1, 1), (1, 1)], mode=np_mode)
        want = np_conv(xp, m.weight.numpy(), m.bias.numpy(), (1, 1), (0, 0), (1, 1), 1)
        _close(m(_t(x)), want)


def test_conv_defaults_and_init():
    m = M.Conv2d(16, 32, 3)
    assert (m.stride, m.padding, m.dilation, m.groups) == ((1, 1), (0, 0), (1, 1), 1)
    assert m.conv_mode == "cross_correlation" and m.compute_mode == "default"
    std = math.sqrt(1 / (16 * 9))
    assert abs(m.weight.numpy().std() - std) < 0.05 * std
    assert not m.bias.numpy().any()
    assert repr(m) == "Conv2d(16, 32, kernel_size=(3, 3))"  # defaults are not shown
    g = M.Conv2d(64, 64, 3, groups=4)  # MegEngine's fan_in counts every input channel
    std = math.sqrt(1 / (64 * 9))
    assert abs(g.weight.numpy().std() - std) < 0.05 * std


def test_conv_repr_shows_only_what_differs_from_the_defaults():
    # the strings MegEngine 1.13 prints for the same modules
    cases = {
        "Conv2d(3, 8, kernel_size=(3, 3), stride=(2, 2), padding=(1, 1))": M.Conv2d(
            3, 8, 3, stride=2, padding=1, padding_mode="reflect"
        ),
        "Conv2d(3, 8, kernel_size=(3, 3), dilation=(1, 2), bias=False)": M.Conv2d(
            3, 8, 3, dilation=(1, 2), bias=False
        ),
        "Conv3d(2, 4, kernel_size=(3, 3, 3), stride=(1, 2, 1))": M.Conv3d(
            2, 4, 3, stride=(1, 2, 1)
        ),
        "ConvTranspose2d(3, 8, kernel_size=(3, 3))": M.ConvTranspose2d(3, 8, 3),
        "ConvTranspose3d(3, 8, kernel_size=(3, 3, 3))": M.ConvTranspose3d(3, 8, 3),
        "LocalConv2d(3, 8, kernel_size=(3, 3), bias=False)": M.LocalConv2d(3, 8, 5, 5, 3),
        "ConvRelu2d(4, 8, kernel_size=(3, 3), groups=2)": M.ConvRelu2d(4, 8, 3, groups=2),
    }
    for want, m in cases.items():
        assert repr(m) == want


def test_conv_errors():
    with pytest.raises(ValueError, match="in_channels=3 is not divisible by groups=2"):
        M.Conv2d(3, 4, 3, groups=2)
    with pytest.raises(ValueError, match="out_channels=5 is not divisible by groups=2"):
        M.Conv2d(4, 5, 3, groups=2)
    with pytest.raises(ValueError, match="kernel_size needs 2 entries"):
        M.Conv2d(4, 4, (3, 3, 3))
    with pytest.raises(ValueError, match="padding_mode"):
        M.Conv2d(4, 4, 3, padding_mode="circular")


def test_conv1d_and_conv3d():
    m1 = M.Conv1d(3, 4, 3, stride=2, padding=1, dilation=1)
    assert m1.weight.shape == (4, 3, 3) and m1.bias.shape == (1, 4, 1)
    x1 = _rand(2, 3, 11)
    _close(m1(_t(x1)), np_conv(x1, m1.weight.numpy(), m1.bias.numpy(), (2,), (1,), (1,), 1))
    m3 = M.Conv3d(2, 3, (2, 3, 2), padding=(1, 0, 1))
    assert m3.weight.shape == (3, 2, 2, 3, 2) and m3.bias.shape == (1, 3, 1, 1, 1)
    x3 = _rand(1, 2, 4, 5, 3)
    want = np_conv(x3, m3.weight.numpy(), m3.bias.numpy(), (1, 1, 1), (1, 0, 1), (1, 1, 1), 1)
    _close(m3(_t(x3)), want)


@pytest.mark.parametrize(
    "kw", [{}, {"stride": 2, "padding": 1}, {"stride": 2, "output_padding": 1, "dilation": 2}]
)
def test_conv_transpose2d(kw):
    m = M.ConvTranspose2d(3, 5, 3, **kw)
    assert m.weight.shape == (3, 5, 3, 3) and m.bias.shape == (1, 5, 1, 1)
    x = _rand(2, 3, 4, 5)
    want = np_conv_transpose2d(
        x, m.weight.numpy(), m.bias.numpy(), m.stride, m.padding, m.output_padding, m.dilation
    )
    _close(m(_t(x)), want)
    big = M.ConvTranspose2d(64, 8, 3)
    std = math.sqrt(1 / (64 * 9))
    assert abs(big.weight.numpy().std() - std) < 0.05 * std


def test_conv_bn_modules():
    x = _rand(4, 3, 6, 6)
    for cls, relu in ((M.ConvBn2d, False), (M.ConvBnRelu2d, True)):
        m = cls(3, 5, 3, padding=1)
        assert sorted(n for n, _ in m.named_children()) == ["bn", "conv"]
        conv = np_conv(x, m.conv.weight.numpy(), m.conv.bias.numpy(), (1, 1), (1, 1), (1, 1), 1)
        want = np_norm(conv, (0, 2, 3), 1e-5)
        _close(m(_t(x)), np.maximum(want, 0) if relu else want, rtol=1e-3, atol=1e-4)
    m = M.ConvRelu2d(3, 5, 3)
    conv = np_conv(x, m.weight.numpy(), m.bias.numpy(), (1, 1), (0, 0), (1, 1), 1)
    _close(m(_t(x)), np.maximum(conv, 0))


# --------------------------------------------------------------------------- normalisation
def test_positional_arguments_bind_as_in_megengine():
    # MegEngine 1.13's parameter orders: what a positional call sets.
    m = M.ConvBn2d(1, 2, 3, 1, 1, 1, 1, False, "cross_correlation", "default", 1e-3, 0.5, False)
    assert (m.bn.eps, m.bn.momentum, m.bn.affine, m.conv.bias) == (1e-3, 0.5, False, None)
    m = M.ConvBnRelu2d(1, 2, 3, 1, 1, 1, 1, True, "cross_correlation", "default", 1e-3, 0.5)
    assert m.conv.padding_mode == "zeros" and m.bn.momentum == 0.5
    m = M.ConvBn2d(1, 2, 3, padding=1, padding_mode="reflect")
    assert m.conv.padding_mode == "reflect"
    a = M.MultiHeadAttention(8, 2, 0.0, 0.0, True, False, False, 6, 5)
    assert (a.kdim, a.vdim, a.reslink) == (6, 5, False)
    assert M.MultiHeadAttention(8, 2, reslink=True).reslink is True
    with pytest.raises(TypeError):
        M.MultiHeadAttention(8, 2, 0.0, 0.0, True, False, False, 6, 5, True)
    for cls in (M.ReLU, M.GELU, M.Sigmoid, M.SiLU, M.Identity, M.Concat):
        assert cls("layer").name == "layer" and cls(name="n").name == "n" and cls().name is None
    bn = M.BatchNorm2d(4, 1e-3, 0.5, True, True, False)
    assert (bn.eps, bn.momentum, bn.freeze) == (1e-3, 0.5, False)
    assert M.BatchNorm1d(4, param_dim="dim_c").weight.shape == (4,)
    with pytest.raises(TypeError):
        M.BatchNorm2d(4, 1e-5, 0.9, True, True, False, "default")


def test_batchnorm2d_training_eval_and_running_stats():
    m = M.BatchNorm2d(3)
    assert m.weight.shape == m.bias.shape == m.running_mean.shape == (1, 3, 1, 1)
    assert [n for n, _ in m.named_buffers()] == ["running_mean", "running_var"]
    M.init.uniform_(m.weight, 0.5, 2)
    M.init.normal_(m.bias)
    wt, bs = m.weight.numpy(), m.bias.numpy()
    x = _rand(4, 3, 5, 5) * 3 + 1
    rm_id = id(m.running_mean)
    _close(m(_t(x)), np_norm(x, (0, 2, 3), 1e-5) * wt + bs, rtol=1e-3, atol=1e-4)
    assert id(m.running_mean) == rm_id
    mean = x.mean(axis=(0, 2, 3)).reshape(1, 3, 1, 1)
    var = x.var(axis=(0, 2, 3), ddof=1).reshape(1, 3, 1, 1)
    _close(m.running_mean, 0.1 * mean, rtol=1e-4)
    _close(m.running_var, 0.9 + 0.1 * var, rtol=1e-4)
    m.eval()
    y = _rand(2, 3, 2, 2)
    want = (y - 0.1 * mean) / np.sqrt(0.9 + 0.1 * var + 1e-5) * wt + bs
    _close(m(_t(y)), want, rtol=1e-4)
    _close(m.running_mean, 0.1 * mean, rtol=1e-4)  # unchanged in eval


def test_batchnorm1d_and_options():
    m = M.BatchNorm1d(4, eps=1e-3, momentum=0.5, affine=False)
    assert m.weight is None and m.bias is None
    assert [n for n, _ in m.named_tensors()] == ["running_mean", "running_var"]
    x2 = _rand(8, 4)
    _close(m(_t(x2)), np_norm(x2, (0,), 1e-3), rtol=1e-3, atol=1e-4)
    _close(m.running_mean.numpy().ravel(), 0.5 * x2.mean(axis=0), rtol=1e-4)
    x3 = _rand(3, 4, 5)
    assert m(_t(x3)).shape == (3, 4, 5)
    _close(M.BatchNorm1d(4)(_t(x3)), np_norm(x3, (0, 2), 1e-5), rtol=1e-3, atol=1e-4)
    # no running statistics: batch statistics even in eval
    n = M.BatchNorm1d(4, track_running_stats=False)
    assert n.running_mean is None and list(n.named_buffers()) == []
    n.eval()
    _close(n(_t(x2)), np_norm(x2, (0,), 1e-5), rtol=1e-3, atol=1e-4)
    # freeze: running statistics even when training, and they stay
    f = M.BatchNorm1d(4, freeze=True)
    _close(f(_t(x2)), x2 / np.sqrt(1 + 1e-5), rtol=1e-4)
    assert not f.running_mean.numpy().any()
    with pytest.raises(ValueError, match=r"BatchNorm1d: expected a 2 or 3-D input"):
        m(_t(_rand(2, 4, 3, 3)))
    with pytest.raises(ValueError, match=r"has 3 channels, expected num_features=4"):
        m(_t(_rand(2, 3)))
    with pytest.raises(ValueError, match="BatchNorm2d: expected a 4-D input"):
        M.BatchNorm2d(4)(_t(x2))


@pytest.mark.parametrize("cls", [M.BatchNorm2d, M.SyncBatchNorm])
def test_batchnorm_tracking_switched_on_after_construction_is_refused(cls):
    # Built without running statistics, a layer has none to update or to evaluate with:
    # MegEngine 1.13 raises this AssertionError in training and in eval; normalising by the
    # batch instead would silently ignore the flag.
    m = cls(3, track_running_stats=False)
    m.track_running_stats = True
    x = _t(_rand(6, 3, 2, 2))
    for training in (True, False):
        m.train(training)
        with pytest.raises(AssertionError, match="can not be initilized to False"):
            m(x)
    m.track_running_stats = False  # switched back: batch statistics again
    _close(m(x), np_norm(x.numpy(), (0, 2, 3), 1e-5), rtol=1e-3, atol=1e-4)


def test_batchnorm_param_dim_c():
    a, c = M.BatchNorm2d(3), M.BatchNorm2d(3, param_dim="dim_c", compute_mode="default")
    assert c.weight.shape == c.running_mean.shape == (3,)
    x = _rand(4, 3, 2, 2)
    _close(c(_t(x)), a(_t(x)).numpy())
    _close(c.running_var, a.running_var.numpy().ravel())
    with pytest.raises(ValueError, match="param_dim must be"):
        M.BatchNorm2d(3, param_dim="dim_11c1")


def test_batchnorm_state_dict_round_trip():
    a = M.BatchNorm2d(3)
    a(_t(_rand(4, 3, 2, 2)))
    b = M.BatchNorm2d(3)
    b.load_state_dict(a.state_dict())
    a.eval()
    b.eval()
    y = _rand(2, 3, 2, 2)
    np.testing.assert_array_equal(a(_t(y)).numpy(), b(_t(y)).numpy())
    # MegEngine's rule: any shape of the right size loads (its state_dict flattens them)
    b.load_state_dict(dict(a.state_dict(), running_mean=np.zeros((1, 3, 1, 1), np.float32)))
    assert not b.running_mean.numpy().any()
    with pytest.raises(ValueError, match="'running_mean' has shape"):
        b.load_state_dict(dict(a.state_dict(), running_mean=np.zeros(4, np.float32)))


def test_layer_group_instance_norm():
    x = _rand(2, 6, 3, 4)
    ln = M.LayerNorm((3, 4))
    assert ln.weight.shape == (3, 4) and ln.normalized_shape == (3, 4)
    M.init.normal_(ln.weight)
    M.init.normal_(ln.bias)
    want = np_norm(x, (2, 3), 1e-5) * ln.weight.numpy() + ln.bias.numpy()
    _close(ln(_t(x)), want, rtol=1e-3, atol=1e-4)
    ln1 = M.LayerNorm(4, eps=1e-2, affine=False)
    assert ln1.weight is None
    _close(ln1(_t(x)), np_norm(x, (3,), 1e-2), rtol=1e-3, atol=1e-4)

    gn = M.GroupNorm(3, 6)
    assert gn.weight.shape == (6,)
    M.init.normal_(gn.weight)
    g = np_norm(x.reshape(2, 3, 2, 3, 4), (2, 3, 4), 1e-5).reshape(x.shape)
    want = g * gn.weight.numpy().reshape(1, 6, 1, 1) + gn.bias.numpy().reshape(1, 6, 1, 1)
    _close(gn(_t(x)), want, rtol=1e-3, atol=1e-4)
    with pytest.raises(ValueError, match="num_channels=6 is not divisible by num_groups=4"):
        M.GroupNorm(4, 6)

    inn = M.InstanceNorm(6, affine=False)
    assert inn.weight is None
    _close(inn(_t(x)), np_norm(x, (2, 3), 1e-5), rtol=1e-3, atol=1e-4)
    assert M.InstanceNorm(6).weight.shape == (6,)


# --------------------------------------------------------------------------- dropout, lookup
def test_general_norm_module_and_reset_parameters():
    m = M.GeneralNorm((2, 4), (0, -1))
    assert m.weight.shape == (2, 4) and m.bias.shape == (2, 4)
    x = _rand(2, 3, 4)
    m.weight._reset(_t(_rand(2, 4)))
    m.bias._reset(_t(_rand(2, 4)))
    want = np_norm(x, (0, 2), 1e-5) * m.weight.numpy()[:, None] + m.bias.numpy()[:, None]
    _close(m(_t(x)), want)
    with pytest.raises(ValueError, match=r"sizes \(2, 3\) on axes \(0, 1\)"):
        M.GeneralNorm((2, 4), (0, 1))(_t(x))
    with pytest.raises(ValueError, match="needs normalized_shape"):
        M.GeneralNorm(None, 1)
    with pytest.raises(ValueError, match="as many entries"):
        M.GeneralNorm((2, 3), 0)
    _close(M.GeneralNorm(None, (1, 2), affine=False)(_t(x)), np_norm(x, (1, 2), 1e-5))
    # every affine normalisation resets its weight to ones and its bias to zeros
    for norm in (m, M.LayerNorm(4), M.GroupNorm(1, 3), M.InstanceNorm(3)):
        norm.weight._reset(_t(_rand(*norm.weight.shape)))
        norm.bias._reset(_t(_rand(*norm.bias.shape)))
        norm.reset_parameters()
        assert (norm.weight.numpy() == 1).all() and (norm.bias.numpy() == 0).all()
    M.LayerNorm(4, affine=False).reset_parameters()  # nothing to reset


def test_local_response_norm_module():
    m = M.LocalResponseNorm(3, 1.0, 0.5, 1.5)
    assert (m.kernel_size, m.k, m.alpha, m.beta) == (3, 1.0, 0.5, 1.5)
    x = _rand(2, 4, 3, 3)
    sq = np.pad(x.astype(np.float64) ** 2, ((0, 0), (1, 1), (0, 0), (0, 0)))
    window = sq[:, :-2] + sq[:, 1:-1] + sq[:, 2:]
    _close(m(_t(x)), x / (1.0 + 0.5 * window) ** 1.5)
    d = M.LocalResponseNorm()
    assert (d.kernel_size, d.k, d.alpha, d.beta) == (5, 2.0, 1e-4, 0.75)


def test_dropout():
    m = M.Dropout(0.3)
    x = np.ones((200, 200), np.float32)
    y = m(_t(x)).numpy()
    kept = y != 0
    assert abs(kept.mean() - 0.7) < 0.01
    np.testing.assert_allclose(y[kept], 1 / 0.7, rtol=1e-5)
    m.eval()
    np.testing.assert_array_equal(m(_t(x)).numpy(), x)
    assert M.Dropout()(_t(x)).numpy().all()  # the default drops nothing
    with pytest.raises(ValueError, match=r"drop_prob must be in \[0, 1\)"):
        M.Dropout(1.0)


def test_embedding():
    m = M.Embedding(10, 4)
    assert m.weight.shape == (10, 4)
    idx = np.array([[1, 2, 9], [0, 0, 3]], np.int32)
    _close(m(_t(idx)), m.weight.numpy()[idx])
    big = M.Embedding(1000, 50)
    assert abs(big.weight.numpy().std() - 1) < 0.02
    table = _rand(5, 3)
    pre = M.Embedding.from_pretrained(table)
    _close(pre(_t(np.array([4, 0], np.int32))), table[[4, 0]])
    gm = GradManager().attach(m.weight)
    with gm:
        gm.backward(m(_t(np.array([1, 1, 2], np.int32))).sum())
    want = np.zeros((10, 4))
    want[1], want[2] = 2, 1
    _close(m.weight.grad, want)
    gm = GradManager().attach(pre.weight)  # from_pretrained freezes by default
    with gm:
        gm.backward(pre(_t(np.array([1], np.int32))).sum())
    assert pre.weight.grad is None
    with pytest.raises(ValueError, match="padding_idx is not supported"):
        M.Embedding(3, 2, padding_idx=0)
    with pytest.raises(ValueError, match=r"initial_weight has shape \(5, 3\), expected \(4, 3\)"):
        M.Embedding(4, 3, initial_weight=mge.Parameter(table))


def test_identity_concat_elemwise():
    x = _rand(2, 3)
    assert M.Identity()(_t(x)).numpy().tolist() == x.tolist()
    y = _rand(2, 1)
    _close(M.Concat()([_t(x), _t(y)], axis=1), np.concatenate([x, y], 1))
    _close(M.Elemwise("ADD")(_t(x), _t(y)), x + y)
    _close(M.Elemwise("mul")(_t(x), 2.0), x * 2)
    _close(M.Elemwise("fuse_add_relu")(_t(x), _t(y)), np.maximum(x + y, 0))
    _close(M.Elemwise("fuse_add_sigmoid")(_t(x), _t(y)), np_sigmoid(x + y))
    _close(M.Elemwise("relu")(_t(x)), np.maximum(x, 0))
    with pytest.raises(ValueError, match="unknown method 'frobnicate'"):
        M.Elemwise("frobnicate")


# --------------------------------------------------------------------------- pooling, shape
@pytest.mark.parametrize("k,s,p", [(2, None, 0), (3, 2, 1), ((3, 2), (1, 2), (1, 0))])
def test_pooling(k, s, p):
    x = _rand(2, 3, 7, 6)
    mx = M.MaxPool2d(k, s, p)
    pair = lambda v: v if isinstance(v, tuple) else (v, v)
    kk, ss, pp = pair(k), pair(s if s is not None else k), pair(p)
    _close(mx(_t(x)), np_pool(x, kk, ss, pp, "max"))
    _close(M.AvgPool2d(k, s, p)(_t(x)), np_pool(x, kk, ss, pp, "exclude"))
    _close(M.AvgPool2d(k, s, p, mode="average")(_t(x)), np_pool(x, kk, ss, pp, "average"))
    assert mx.stride == (s if s is not None else k)


@pytest.mark.parametrize("oshp", [1, (2, 3), (3, 2), (7, 6)])
def test_adaptive_pooling(oshp):
    x = _rand(2, 3, 7, 6)
    o = oshp if isinstance(oshp, tuple) else (oshp, oshp)
    _close(M.AdaptiveAvgPool2d(oshp)(_t(x)), np_adaptive(x, o, np.mean))
    _close(M.AdaptiveMaxPool2d(oshp)(_t(x)), np_adaptive(x, o, np.max))


def test_pad_and_pixel_shuffle():
    x = _rand(2, 3, 4)
    width = ((0, 0), (1, 2), (2, 1))
    _close(M.Pad(width, constant_val=1.5)(_t(x)), np.pad(x, width, constant_values=1.5))
    _close(M.Pad(width, mode="reflect")(_t(x)), np.pad(x, width, mode="reflect"))
    _close(M.Pad(width, mode="edge")(_t(x)), np.pad(x, width, mode="edge"))
    r = 2
    y = _rand(2, 3 * r * r, 4, 5)
    want = y.reshape(2, 3, r, r, 4, 5).transpose(0, 1, 4, 2, 5, 3).reshape(2, 3, 4 * r, 5 * r)
    _close(M.PixelShuffle(r)(_t(y)), want)


# --------------------------------------------------------------------------- activations
def test_activations():
    x = _rand(3, 4, 2)
    _close(M.ReLU()(_t(x)), np.maximum(x, 0))
    _close(M.Sigmoid()(_t(x)), np_sigmoid(x))
    _close(M.SiLU()(_t(x)), x * np_sigmoid(x))
    erf = np.vectorize(math.erf)
    _close(M.GELU()(_t(x)), x * 0.5 * (1 + erf(x / math.sqrt(2))))
    _close(M.LeakyReLU()(_t(x)), np.where(x > 0, x, 0.01 * x))
    _close(M.LeakyReLU(0.2)(_t(x)), np.where(x > 0, x, 0.2 * x))
    e = np.exp(x - x.max(axis=0, keepdims=True))
    _close(M.Softmax()(_t(x)), e / e.sum(axis=0, keepdims=True))  # MegEngine: axis 0 for 3-D
    x4 = _rand(2, 3, 2, 2)
    e = np.exp(x4 - x4.max(axis=1, keepdims=True))
    _close(M.Softmax()(_t(x4)), e / e.sum(axis=1, keepdims=True))  # and axis 1 for 4-D
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    _close(M.Softmax(axis=-1)(_t(x)), e / e.sum(axis=-1, keepdims=True))


def test_prelu():
    x = _rand(2, 3, 4)
    m = M.PReLU()
    assert m.weight.shape == (1,) and m.weight.numpy().tolist() == [0.25]
    _close(m(_t(x)), np.where(x > 0, x, 0.25 * x))
    pc = M.PReLU(3, init=0.1)
    assert pc.weight.shape == (1, 3, 1, 1)
    M.init.normal_(pc.weight)
    w = pc.weight.numpy().reshape(1, 3, 1)
    _close(pc(_t(x)), np.where(x > 0, x, w * x))
    gm = GradManager().attach(m.weight)
    with gm:
        gm.backward(m(_t(x)).sum())
    _close(m.weight.grad, [np.minimum(x, 0).sum()], rtol=1e-4)
    with pytest.raises(ValueError, match="does not have 3 channels"):
        pc(_t(_rand(2, 4)))


# --------------------------------------------------------------------------- recurrent
def np_rnn_cell(x, h, m, act):
    return act(
        x @ m.weight_ih.numpy().T
        + m.bias_ih.numpy()
        + h @ m.weight_hh.numpy().T
        + m.bias_hh.numpy()
    )


def np_lstm_cell(x, h, c, m):
    g = x @ m.weight_ih.numpy().T + m.bias_ih.numpy() + h @ m.weight_hh.numpy().T
    g = g + m.bias_hh.numpy()
    i, f, cand, o = np.split(g, 4, axis=1)
    c2 = np_sigmoid(f) * c + np_sigmoid(i) * np.tanh(cand)
    return np_sigmoid(o) * np.tanh(c2), c2


def test_rnn_and_lstm_cells():
    x, h, c = _rand(3, 5), _rand(3, 4), _rand(3, 4)
    cell = M.RNNCell(5, 4)
    assert cell.weight_ih.shape == (4, 5) and cell.weight_hh.shape == (4, 4)
    bound = 1 / math.sqrt(4)
    assert all(np.abs(p.numpy()).max() <= bound for p in cell.parameters())
    _close(cell(_t(x), _t(h)), np_rnn_cell(x, h, cell, np.tanh))
    _close(cell(_t(x)), np_rnn_cell(x, np.zeros((3, 4)), cell, np.tanh))
    relu = M.RNNCell(5, 4, bias=False, nonlinearity="relu")
    assert [n for n, _ in relu.named_parameters()] == ["weight_hh", "weight_ih"]
    assert not relu.bias_ih.numpy().any()
    _close(relu(_t(x), _t(h)), np_rnn_cell(x, h, relu, lambda v: np.maximum(v, 0)))
    lstm = M.LSTMCell(5, 4)
    assert lstm.weight_ih.shape == (16, 5)
    h2, c2 = lstm(_t(x), (_t(h), _t(c)))
    want_h, want_c = np_lstm_cell(x, h, c, lstm)
    _close(h2, want_h)
    _close(c2, want_c)
    with pytest.raises(ValueError, match=r"input must be \(batch, 5\), got \(3, 6\)"):
        cell(_t(_rand(3, 6)))
    with pytest.raises(ValueError, match=r"hx must be \(3, 4\)"):
        cell(_t(x), _t(_rand(2, 4)))
    with pytest.raises(ValueError, match="nonlinearity"):
        M.RNNCell(5, 4, nonlinearity="gelu")
    with pytest.raises(ValueError, match="nonlinearity"):
        M.RNN(5, 4, nonlinearity="gelu")
    # as MegEngine's RNN, the fourth positional argument is bias; nonlinearity is a keyword
    r = M.RNN(5, 4, 1, False, nonlinearity="relu")
    assert not r.bias and r.cells[0][0].nonlinearity == "relu"
    assert [n for n, _ in r.named_parameters()] == ["cells.0.0.weight_hh", "cells.0.0.weight_ih"]


def _np_run(cells, x, states, step, hidden, num_layers, dirs):
    """Reference multi-layer (bi)directional run; x is (L, N, F)."""
    seq = list(x)
    finals = []
    for layer in range(num_layers):
        outs = []
        for d in range(dirs):
            cell, st = cells[layer][d], states[layer * dirs + d]
            order = range(len(seq)) if d == 0 else reversed(range(len(seq)))
            out = [None] * len(seq)
            for t in order:
                st = step(seq[t], st, cell)
                out[t] = hidden(st)
            outs.append(out)
            finals.append(st)
        seq = [np.concatenate([o[t] for o in outs], axis=1) for t in range(len(seq))]
    return np.stack(seq), finals


@pytest.mark.parametrize("bidirectional,batch_first", [(False, False), (True, True)])
def test_rnn(bidirectional, batch_first):
    m = M.RNN(5, 4, num_layers=2, bidirectional=bidirectional, batch_first=batch_first)
    dirs = 2 if bidirectional else 1
    x = _rand(6, 3, 5)
    h0 = _rand(2 * dirs, 3, 4)
    inp = x.transpose(1, 0, 2) if batch_first else x
    out, hn = m(_t(inp), _t(h0))
    want, finals = _np_run(
        m.cells,
        x,
        list(h0),
        lambda xt, h, cell: np_rnn_cell(xt, h, cell, np.tanh),
        lambda s: s,
        2,
        dirs,
    )
    _close(out, want.transpose(1, 0, 2) if batch_first else want)
    _close(hn, np.stack(finals))
    assert len(list(m.parameters())) == 2 * dirs * 4
    names = [n for n, _ in m.named_parameters()]
    assert names[:4] == [
        "cells.0.0.bias_hh",
        "cells.0.0.bias_ih",
        "cells.0.0.weight_hh",
        "cells.0.0.weight_ih",
    ]


def test_lstm():
    m = M.LSTM(5, 4, num_layers=2, bidirectional=True)
    x = _rand(6, 3, 5)
    out, (hn, cn) = m(_t(x))
    zeros = [(np.zeros((3, 4)), np.zeros((3, 4)))] * 4
    want, finals = _np_run(
        m.cells,
        x,
        zeros,
        lambda xt, st, cell: np_lstm_cell(xt, st[0], st[1], cell),
        lambda s: s[0],
        2,
        2,
    )
    _close(out, want)
    _close(hn, np.stack([f[0] for f in finals]))
    _close(cn, np.stack([f[1] for f in finals]))
    with pytest.raises(ValueError, match=r"h_0 must be \(4, 3, 4\)"):
        m(_t(x), (_t(_rand(2, 3, 4)), _t(_rand(4, 3, 4))))
    with pytest.raises(ValueError, match="dropout must be"):
        M.LSTM(5, 4, dropout=1.5)
    with pytest.raises(ValueError, match="proj_size is not supported"):
        M.LSTM(5, 4, proj_size=2)


def test_rnn_and_lstm_megengine_methods():
    x = _rand(5, 2, 3)
    for m in (M.RNN(3, 4, 2, bidirectional=True), M.LSTM(3, 4, 2)):
        h0 = m.init_hidden(2)
        states = h0 if isinstance(h0, tuple) else (h0,)
        for s in states:
            assert s.shape == (m.num_layers * m.num_directions, 2, 4) and s.dtype == np.float32
            assert not s.numpy().any()
        # apply_op is forward on a time-first input, from a given state
        out, h = m.apply_op(_t(x), h0)
        want_out, want_h = m(_t(x))
        _close(out, want_out.numpy())
        _close(m.get_output_from_hidden(h), m.get_output_from_hidden(want_h).numpy())
        cell = m.create_cell(1)
        assert cell.input_size == m.num_directions * 4 and cell.hidden_size == 4
    lstm = M.LSTM(3, 4)
    h, c = lstm.init_hidden(1)
    assert lstm.get_output_from_hidden((h, c)) is h
    rnn = M.RNN(3, 4)
    h = rnn.init_hidden(1)
    assert rnn.get_output_from_hidden(h) is h


def test_lstm_trains_through_grad_manager():
    m = M.LSTM(3, 4)
    x = _t(_rand(5, 2, 3))
    gm = GradManager().attach(m.parameters())
    with gm:
        out, _ = m(x)
        gm.backward((out**2).sum())
    assert all(p.grad is not None and p.grad.shape == p.shape for p in m.parameters())


# --------------------------------------------------------------------------- attention
def np_mha(m, q, k, v, attn_mask=None, key_padding_mask=None):
    e, h = m.embed_dim, m.num_heads
    flat = m.io_weight_bias.numpy().ravel()
    ws, pos = [], 0
    for n_in in (e, m.kdim, m.vdim, e):
        ws.append(flat[pos : pos + e * n_in].reshape(e, n_in))
        pos += e * n_in
    bs = [flat[pos + i * e : pos + (i + 1) * e] for i in range(4)] if m.bias else [0] * 4
    n, lq, lk = q.shape[0], q.shape[1], k.shape[1]
    d = e // h

    def heads(t):
        return t.reshape(t.shape[0], t.shape[1], h, d).transpose(0, 2, 1, 3)

    qh = heads(q @ ws[0].T + bs[0])
    kh = heads(k @ ws[1].T + bs[1])
    vh = heads(v @ ws[2].T + bs[2])
    s = qh @ kh.transpose(0, 1, 3, 2) / math.sqrt(d)
    if attn_mask is not None:
        s = np.where(attn_mask, -np.inf, s)
    if key_padding_mask is not None:
        s = np.where(key_padding_mask[:, None, None, :], -np.inf, s)
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    o = (p @ vh).transpose(0, 2, 1, 3).reshape(n, lq, e)
    return o @ ws[3].T + bs[3], p.reshape(n * h, lq, lk)


def test_multi_head_attention():
    m = M.MultiHeadAttention(8, 2, kdim=6, vdim=5)
    assert m.io_weight_bias.shape == (1, (8 + 6 + 5 + 8) * 8 + 32)
    assert not m.io_weight_bias.numpy()[0, (8 + 6 + 5 + 8) * 8 :].any()
    q, k, v = _rand(2, 3, 8), _rand(2, 4, 6), _rand(2, 4, 5)
    out, weights = m(_t(q), _t(k), _t(v), need_weights=True)
    want, want_w = np_mha(m, q, k, v)
    _close(out, want)
    _close(weights, want_w)
    _, avg = m(_t(q), _t(k), _t(v), need_weights=True, average_attn_weights=True)
    _close(avg, want_w.reshape(2, 2, 3, 4).mean(1))
    assert m(_t(q), _t(k), _t(v))[1] is None
    mask = np.triu(np.ones((3, 4), bool), k=1)
    kpm = np.array([[False] * 4, [False, False, False, True]])
    got, _ = m(_t(q), _t(k), _t(v), attn_mask=_t(mask), key_padding_mask=_t(kpm))
    _close(got, np_mha(m, q, k, v, mask, kpm)[0])
    x = _rand(2, 3, 8)
    sq = M.MultiHeadAttention(8, 4, bias=False)
    causal = np.triu(np.ones((3, 3), bool), k=1)
    _close(sq(_t(x), _t(x), _t(x), is_causal=True)[0], np_mha(sq, x, x, x, causal)[0])
    assert repr(sq) == (
        "MultiHeadAttention(embed_dim=8, num_heads=4, attn_dropout=0.0, out_dropout=0.0, "
        "bias=False, kdim=8, vdim=8)"
    )
    with pytest.raises(ValueError, match="embed_dim=6 is not divisible by num_heads=4"):
        M.MultiHeadAttention(6, 4)
    with pytest.raises(ValueError, match="must be"):
        m(_t(q), _t(q), _t(v))


def test_multi_head_attention_functional():
    m = M.MultiHeadAttention(8, 2, kdim=6, vdim=5)
    q, k, v = _rand(2, 3, 8), _rand(2, 4, 6), _rand(2, 4, 5)
    w = m.io_weight_bias
    out, weights = F.nn.multi_head_attention(
        q, k, v, 8, 2, 0.0, 0.0, w, 8, 8, 8, 8, True, True, True, True, need_weights=True
    )
    want, want_w = np_mha(m, q, k, v)
    _close(out, want)
    _close(weights, want_w)
    assert F.multi_head_attention is F.nn.multi_head_attention
    # add_zero_attn and is_causal together: the zero step is never masked
    z = M.MultiHeadAttention(8, 2, bias=False, add_zero_attn=True)
    x = _rand(2, 3, 8)
    _got, p = z(_t(x), _t(x), _t(x), need_weights=True, is_causal=True)
    assert (
        p.shape == (4, 3, 4)
        and (p.numpy()[:, 0, 1:3] == 0).all()
        and (p.numpy()[:, :, 3] > 0).all()
    )
    bad = {
        "query": q,
        "key": k,
        "value": v,
        "embed_dim": 8,
        "num_heads": 2,
        "attn_drop": 0.0,
        "out_drop": 0.0,
    }
    with pytest.raises(ValueError, match="kproj_size=4 is not supported"):
        F.nn.multi_head_attention(**bad, io_weight_bias=w, kproj_size=4)
    with pytest.raises(ValueError, match="bias flags must agree"):
        F.nn.multi_head_attention(**bad, io_weight_bias=w, qbias=True)
    with pytest.raises(ValueError, match="bias_k and bias_v"):
        F.nn.multi_head_attention(**bad, io_weight_bias=w, bias_k=_t(_rand(1, 1, 8)))
    with pytest.raises(ValueError, match=r"io_weight_bias has \d+ values"):
        F.nn.multi_head_attention(**bad, io_weight_bias=w)  # the biases are in w, flags say none


# --------------------------------------------------------------------------- edge inputs
def _eval(m):
    m.eval()
    return m


@pytest.mark.parametrize(
    "factory,out_shape",
    [
        (lambda: M.Conv2d(2, 3, 3), (0, 3, 3, 3)),
        (lambda: M.ConvTranspose2d(2, 3, 3), (0, 3, 7, 7)),
        (lambda: M.MaxPool2d(2), (0, 2, 2, 2)),
        (lambda: M.AvgPool2d(2), (0, 2, 2, 2)),
        (lambda: M.AdaptiveAvgPool2d(2), (0, 2, 2, 2)),
        (lambda: _eval(M.BatchNorm2d(2)), (0, 2, 5, 5)),
        (lambda: M.LayerNorm(5), (0, 2, 5, 5)),
        (lambda: M.GroupNorm(1, 2), (0, 2, 5, 5)),
        (lambda: M.PReLU(2), (0, 2, 5, 5)),
    ],
)
def test_empty_batch(factory, out_shape):
    out = factory()(_t(np.zeros((0, 2, 5, 5), np.float32)))
    assert out.shape == out_shape


def test_non_contiguous_inputs():
    x = _rand(2, 5, 6, 3)  # (N, W, H, C): a transposed view is NCHW
    view = _t(x).transpose(0, 3, 2, 1)
    xc = np.ascontiguousarray(x.transpose(0, 3, 2, 1))
    for m in (M.Conv2d(3, 4, 3, padding=1), M.MaxPool2d(2), _eval(M.BatchNorm2d(3))):
        np.testing.assert_allclose(m(view).numpy(), m(_t(xc)).numpy(), rtol=1e-6, atol=1e-6)
    lstm = M.LSTM(3, 2, batch_first=True)
    seq = _rand(4, 2, 3)
    np.testing.assert_allclose(
        lstm(_t(seq).transpose(1, 0, 2))[0].numpy(),
        lstm(_t(np.ascontiguousarray(seq.transpose(1, 0, 2))))[0].numpy(),
        rtol=1e-6,
    )


@pytest.mark.parametrize("cls", [M.BatchNorm2d, M.SyncBatchNorm])
def test_frozen_batchnorm_is_a_fixed_affine_map_without_gradients(cls):
    # MegEngine's freeze=True (the zoo's "FrozenBN" backbones): running statistics in train
    # mode too, and weight/bias detached, so SGD with weight decay leaves them alone.
    rng = np.random.RandomState(0)
    bn = cls(3, freeze=True)
    mean, var = rng.randn(1, 3, 1, 1), rng.uniform(0.5, 2, (1, 3, 1, 1))
    w, b = rng.randn(1, 3, 1, 1), rng.randn(1, 3, 1, 1)
    mean, var, w, b = (a.astype(np.float32) for a in (mean, var, w, b))
    bn.load_state_dict({"running_mean": mean, "running_var": var, "weight": w, "bias": b})
    x = rng.randn(2, 3, 4, 5).astype(np.float32)
    xt = mge.Parameter(x)
    gm = GradManager().attach([xt, bn.weight, bn.bias])
    import megengine.optimizer as optim

    opt = optim.SGD(bn.parameters(), lr=0.1, momentum=0.9, weight_decay=0.1)
    bn.train()
    with gm:
        y = bn(xt)
        gm.backward((y * y).sum())
    expect = (x - mean) / np.sqrt(var + 1e-5) * w + b
    _close(y, expect, rtol=1e-5, atol=1e-5)
    assert bn.weight.grad is None and bn.bias.grad is None
    _close(xt.grad, 2 * expect * w / np.sqrt(var + 1e-5), rtol=1e-4, atol=1e-5)
    opt.step()
    _close(bn.weight, w, rtol=0, atol=0)
    _close(bn.running_mean, mean, rtol=0, atol=0)
