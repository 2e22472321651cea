"""F.nn against NumPy references: random inputs, edge shapes (0-d, empty, non-contiguous views),
errors, and gradients against finite differences (through the backward rules of elemwise,
indexing, convolution, pooling, normalisation, softmax and dropout)."""

import itertools

import numpy as np
import pytest
from gradcheck import check_grad

import megengine as mge
import megengine.functional as F
from megengine.autodiff import GradManager

rng = np.random.default_rng(0)


def randn(*shape):
    return rng.normal(size=shape).astype(np.float32)


# ----------------------------------------------------------------------------- references


def conv_ref(x, w, stride, padding, dilation, groups, flip=False):
    nd = x.ndim - 2
    if flip:
        w = w[(slice(None), slice(None)) + (slice(None, None, -1),) * nd]
    xp = np.pad(x, [(0, 0), (0, 0)] + [(p, p) for p in padding])
    n, _c = x.shape[:2]
    oc, icg = w.shape[:2]
    ks = w.shape[2:]
    outs = [(xp.shape[2 + i] - dilation[i] * (ks[i] - 1) - 1) // stride[i] + 1 for i in range(nd)]
    y = np.zeros((n, oc, *outs), np.float64)
    ocg = oc // groups
    for g in range(groups):
        xg = xp[:, g * icg : (g + 1) * icg]
        wg = w[g * ocg : (g + 1) * ocg]
        for k in itertools.product(*[range(s) for s in ks]):
            sl = tuple(
                slice(
                    k[i] * dilation[i],
                    k[i] * dilation[i] + stride[i] * (outs[i] - 1) + 1,
                    stride[i],
                )
                for i in range(nd)
            )
            patch = xg[(slice(None), slice(None)) + sl]
            y[:, g * ocg : (g + 1) * ocg] += np.einsum("nc...,oc->no...", patch, wg[(...,) + k])
    return y


def conv_transpose_ref(x, w, stride, padding, dilation, groups, output_padding):
    # Scatter-add of every input element times the filter, then the padding cropped.
    nd = x.ndim - 2
    n, ic = x.shape[:2]
    sp, ks = x.shape[2:], w.shape[2:]
    icg, ocg = ic // groups, w.shape[1]
    outs = [
        (sp[i] - 1) * stride[i] + dilation[i] * (ks[i] - 1) + 1 + output_padding[i]
        for i in range(nd)
    ]
    full = np.zeros((n, ocg * groups, *outs), np.float64)
    for g in range(groups):
        xg = x[:, g * icg : (g + 1) * icg]
        wg = w[g * icg : (g + 1) * icg]
        for k in itertools.product(*[range(s) for s in ks]):
            contrib = np.einsum("nc...,co->no...", xg, wg[(...,) + k])
            sl = tuple(
                slice(
                    k[i] * dilation[i], k[i] * dilation[i] + stride[i] * (sp[i] - 1) + 1, stride[i]
                )
                for i in range(nd)
            )
            full[(slice(None), slice(g * ocg, (g + 1) * ocg)) + sl] += contrib
    crop = tuple(slice(p, o - p) for p, o in zip(padding, outs))
    return full[(slice(None), slice(None)) + crop]


def pool_ref(x, k, s, p, mode):
    n, c, h, w = x.shape
    oh, ow = (h + 2 * p[0] - k[0]) // s[0] + 1, (w + 2 * p[1] - k[1]) // s[1] + 1
    y = np.zeros((n, c, oh, ow), np.float64)
    for i, j in itertools.product(range(oh), range(ow)):
        r0, c0 = i * s[0] - p[0], j * s[1] - p[1]
        r1, c1 = r0 + k[0], c0 + k[1]
        win = x[:, :, max(r0, 0) : min(r1, h), max(c0, 0) : min(c1, w)]
        if mode == "max":
            y[:, :, i, j] = win.max(axis=(2, 3))
        elif mode == "average":
            y[:, :, i, j] = win.sum(axis=(2, 3)) / (k[0] * k[1])
        else:
            y[:, :, i, j] = win.mean(axis=(2, 3))
    return y


def adaptive_window(i, size, out):
    # MegEngine's: one length at a stride of size // out; an output larger than its input
    # (undefined in MegEngine) covers [floor(i * size / out), ceil((i + 1) * size / out)).
    if size >= out:
        stride = size // out
        return i * stride, i * stride + size - (out - 1) * stride
    return (i * size) // out, -((-(i + 1) * size) // out)


def adaptive_ref(x, oshp, fn):
    n, c, h, w = x.shape
    y = np.zeros((n, c) + oshp, np.float64)
    for i, j in itertools.product(range(oshp[0]), range(oshp[1])):
        r0, r1 = adaptive_window(i, h, oshp[0])
        c0, c1 = adaptive_window(j, w, oshp[1])
        y[:, :, i, j] = fn(x[:, :, r0:r1, c0:c1], axis=(2, 3))
    return y


def linear_coords(o, i, align_corners):
    """Per output index of a linear resize from i to o: the two source indices and the weight
    of the second."""
    d = np.arange(o, dtype=np.float64)
    if align_corners:
        src = d * (i - 1) / (o - 1) if o > 1 else np.zeros(o)
    else:
        src = np.clip((d + 0.5) * i / o - 0.5, 0, None)
    lo = np.minimum(np.floor(src).astype(int), i - 1)
    return lo, np.minimum(lo + 1, i - 1), src - lo


def bilinear_ref(x, oh, ow, align_corners):
    _n, _c, h, w = x.shape
    r0, r1, fr = linear_coords(oh, h, align_corners)
    c0, c1, fc = linear_coords(ow, w, align_corners)
    top = x[:, :, r0][:, :, :, c0] * (1 - fc) + x[:, :, r0][:, :, :, c1] * fc
    bot = x[:, :, r1][:, :, :, c0] * (1 - fc) + x[:, :, r1][:, :, :, c1] * fc
    return top * (1 - fr[:, None]) + bot * fr[:, None]


def softmax_ref(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


# ----------------------------------------------------------------------------- activations


def test_elemwise_activations_are_exported_in_nn():
    for name in ["relu", "relu6", "sigmoid", "gelu", "silu", "hswish", "hsigmoid", "softplus"]:
        assert getattr(F.nn, name) is getattr(F, name)
    x = randn(3, 4)
    np.testing.assert_allclose(F.nn.logsigmoid(x).numpy(), -np.logaddexp(0, -x), rtol=1e-5)


def test_hsigmoid_and_hswish_give_megengines_float_results_to_the_bit():
    # MegEngine 1.13 computes relu6(x + 3) / 6 and (x * relu6(x + 3)) * (1 / 6) in float32; the
    # double formulas round differently for about one input in eight. Inputs where they do (and
    # the kinks), as float32 bits, with MegEngine's outputs as float32 bits.
    x = np.array(
        [1052843810, 1066064446, 1067323630, 3200609762, 1065907855, 1061886487, 3200969150,
         1050746983, 1077270252, 1040050213, 3207071793, 3222050920, 3225419776, 1077936128,
         3229614080, 1084227584, 0],
        np.uint32,
    ).view(np.float32)  # fmt: skip
    hsigmoid = [
        1058019309, 1059997888, 1060417616, 1054808155, 1059945691, 1059183023, 1054748256,
        1057844574, 1064909299, 1057311275, 1053293893, 1040782400, 0, 1065353216, 0, 1065353216,
        1056964608,
    ]  # fmt: skip
    hswish = [
        1046046496, 1060966295, 1063199114, 3190558080, 1060697434, 1056991260, 3190823798,
        1043466078, 1076954934, 1032074028, 3196273820, 3197538654, 2147483648, 1077936128,
        2147483648, 1084227584, 0,
    ]  # fmt: skip
    for n in (x.size, 1000 * x.size):  # a short run (the masked tail) and a long one
        xt = mge.Tensor(np.resize(x, n))
        assert F.hsigmoid(xt).numpy().view(np.uint32).tolist() == np.resize(hsigmoid, n).tolist()
        assert F.hswish(xt).numpy().view(np.uint32).tolist() == np.resize(hswish, n).tolist()
    # NumPy's float32 formula, MegEngine's own test of hsigmoid
    r = np.random.default_rng(42).standard_normal(4096).astype(np.float32) * 4
    want = np.minimum(np.maximum(r + 3, 0), 6) / 6
    np.testing.assert_array_equal(F.hsigmoid(mge.Tensor(r)).numpy(), want)
    assert np.isnan(F.hsigmoid(mge.Tensor([np.nan])).numpy()[0])


def test_gelu_and_its_gradient_are_relatively_accurate_in_the_tails():
    import math

    # The float32 kernels promise 7 float ULPs (relative 8.3e-7 at most) everywhere, including the
    # negative tail, where x * Phi(x) is tiny and 1 + erf(x / sqrt(2)) in float would keep no
    # digit, and the gradient's root at x = -0.7517915 (below -13 the results are subnormal and
    # come from the double formula). Reference: math.erfc and math.exp in double.
    x = np.concatenate(
        [
            np.linspace(-13, 13, 20001, dtype=np.float32),
            np.float32(-0.7517915) + np.arange(-50, 51, dtype=np.float32) * np.float32(6e-8),
            np.array([0.0, -0.0, 1e-30, -1e-30, 30.0, -20.0], np.float32),
        ]
    )
    xd = x.astype(np.float64)
    cdf = np.array([0.5 * math.erfc(-v / math.sqrt(2)) for v in xd])
    pdf = np.exp(-0.5 * xd * xd) / math.sqrt(2 * math.pi)
    xt = mge.Tensor(x)
    gm = GradManager().attach([xt])
    with gm:
        y = F.nn.gelu(xt)
        gm.backward(y, F.ones_like(y))
    tiny = np.abs(x) > 13  # subnormal or zero results: compare absolutely
    want = (xd * cdf).astype(np.float32)
    np.testing.assert_allclose(y.numpy()[~tiny], want[~tiny], rtol=1e-6, atol=0)
    np.testing.assert_allclose(y.numpy()[tiny], want[tiny], rtol=0, atol=1e-44)
    grad = (cdf + xd * pdf).astype(np.float32)
    np.testing.assert_allclose(xt.grad.numpy()[~tiny], grad[~tiny], rtol=1e-6, atol=0)
    np.testing.assert_allclose(xt.grad.numpy()[tiny], grad[tiny], rtol=0, atol=1e-44)


def test_leaky_relu_and_prelu_gradient_at_zero():
    from megengine.autodiff import GradManager

    # MegEngine 1.13 (PRELU) gives x's gradient 1 at 0 and -0, the slope's only from x < 0;
    # max(x, 0) + slope * min(x, 0) gave 1 + slope there, both branches passing the tie.
    x = mge.Parameter(np.array([-1.0, 0.0, -0.0, 2.0], np.float32))
    s = mge.Parameter(np.array([0.1], np.float32))
    gm = GradManager().attach([x, s])
    with gm:
        gm.backward((F.leaky_relu(x, 0.1) + F.prelu(x, s)).sum())
    np.testing.assert_allclose(x.grad.numpy(), [0.2, 2.0, 2.0, 2.0], rtol=1e-6)
    np.testing.assert_allclose(s.grad.numpy(), [-1.0])


@pytest.mark.parametrize("shape", [(), (0,), (3, 4), (2, 3, 4)])
def test_leaky_relu_and_prelu(shape):
    x = randn(*shape)
    np.testing.assert_allclose(F.leaky_relu(x, 0.2).numpy(), np.where(x > 0, x, 0.2 * x), rtol=1e-6)
    np.testing.assert_allclose(F.leaky_relu(x).numpy(), np.where(x > 0, x, 0.01 * x), rtol=1e-6)
    if len(shape) >= 2:
        w = rng.uniform(0, 1, (1, shape[1]) + (1,) * (len(shape) - 2)).astype(np.float32)
        np.testing.assert_allclose(F.prelu(x, w).numpy(), np.where(x > 0, x, w * x), rtol=1e-6)


def test_activation_keyword_names_are_megengine_s():
    x = np.array([-2.0, 0.0, 3.0], np.float32)
    np.testing.assert_allclose(F.prelu(x=x, y=0.5).numpy(), [-1.0, 0.0, 3.0])
    np.testing.assert_allclose(F.softplus(inp=x).numpy(), np.logaddexp(0, x), rtol=1e-6)
    np.testing.assert_allclose(F.logsigmoid(inp=x).numpy(), -np.logaddexp(0, -x), rtol=1e-6)
    with pytest.raises(TypeError):
        F.prelu(inp=x, weight=0.5)


@pytest.mark.parametrize("dtype", ["float32", "float16"])
@pytest.mark.parametrize("slope", [0.01, -0.5, 2.0])
def test_leaky_relu_and_prelu_are_the_select_bit_for_bit(dtype, slope):
    from megengine.autodiff import GradManager

    # One Elemwise PRELU on floats: x < 0 ? x * slope : x, as the select it replaced gives it
    # (signed zeros, NaN, infinities, subnormals, slopes outside [0, 1]), past the threading
    # grain, the slope per channel; x's gradient 1 at 0, the slope's summed over x < 0.
    special = [np.nan, np.inf, -np.inf, 0.0, -0.0, -1e-45, 3.0, -3.0, 1e-7]
    x = np.concatenate([special, randn(2 * 64 * 1031 - len(special))]).astype(dtype)
    x = x.reshape(2, 64, 1031, 1)
    s = np.full(64, slope, dtype)
    s[::3] = -0.25
    s4 = s.reshape(1, 64, 1, 1)
    want = np.where(x < 0, x * np.asarray(slope, dtype), x)
    got = F.leaky_relu(x, slope).numpy()
    assert got.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(np.signbit(got), np.signbit(want))
    want = np.where(x < 0, x * s4, x)
    got = F.prelu(x, s4).numpy()
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(np.signbit(got), np.signbit(want))
    xf = np.nan_to_num(x, posinf=0, neginf=0)  # finite sums for the slope's gradient
    xt, st = mge.Parameter(xf), mge.Parameter(s4)
    gm = GradManager().attach([xt, st])
    with gm:
        gm.backward(F.prelu(xt, st).sum())
    np.testing.assert_array_equal(xt.grad.numpy(), np.where(xf < 0, s4, np.ones_like(xf)))
    sg = np.where(xf < 0, xf, 0).astype(np.float64).sum(axis=(0, 2, 3)).reshape(1, 64, 1, 1)
    np.testing.assert_allclose(st.grad.numpy().astype(np.float64), sg, rtol=1e-2, atol=1e-2)


def test_leaky_relu_of_integers_keeps_its_dtype_rule():
    x = np.array([-3, 0, 5], np.int32)
    y = F.leaky_relu(x, 0.5)
    assert y.dtype == np.float32
    np.testing.assert_array_equal(y.numpy(), [-1.5, 0.0, 5.0])


def test_leaky_relu_prelu_grad():
    x = randn(3, 4)
    x[np.abs(x) < 0.05] = 0.3
    check_grad(lambda a: F.leaky_relu(a, 0.1), x)
    check_grad(F.prelu, x, np.full((1, 4), 0.25, np.float32), wrt=(0, 1))


@pytest.mark.parametrize("shape,axis", [((5,), 0), ((3, 4), 1), ((3, 4), 0), ((2, 3, 4), -1)])
def test_softmax_logsoftmax(shape, axis):
    x = randn(*shape) * 3
    np.testing.assert_allclose(F.softmax(x, axis).numpy(), softmax_ref(x, axis), rtol=1e-5)
    np.testing.assert_allclose(
        F.logsoftmax(x, axis).numpy(), np.log(softmax_ref(x, axis)), rtol=1e-5, atol=1e-5
    )


def test_softmax_default_axis_large_values_and_views():
    x = randn(2, 3, 4)
    np.testing.assert_allclose(F.softmax(x).numpy(), softmax_ref(x, 0), rtol=1e-5)  # 3-D: 0
    x4 = randn(2, 3, 2, 2)
    np.testing.assert_allclose(F.softmax(x4).numpy(), softmax_ref(x4, 1), rtol=1e-5)
    big = np.array([[1000.0, 1001.0], [-1000.0, -1000.0]], np.float32)
    np.testing.assert_allclose(F.softmax(big, 1).numpy(), softmax_ref(big, 1), rtol=1e-5)
    t = mge.Tensor(randn(4, 3))
    np.testing.assert_allclose(F.softmax(t.T, 1).numpy(), softmax_ref(t.numpy().T, 1), rtol=1e-5)
    assert F.softmax(mge.Tensor(2.0)).numpy() == 1.0
    assert F.softmax(np.zeros((2, 0), np.float32), 1).shape == (2, 0)
    ls = F.logsoftmax(x, (1, 2)).numpy()
    ref = x - np.log(np.exp(x).sum(axis=(1, 2), keepdims=True))
    np.testing.assert_allclose(ls, ref, rtol=1e-5, atol=1e-5)


def test_softmax_errors():
    with pytest.raises(ValueError, match="softmax: axis 2"):
        F.softmax(randn(2, 3), 2)
    with pytest.raises(TypeError, match="softmax: inp must be a float"):
        F.softmax(mge.Tensor([1, 2]), 0)


def test_softmax_grad():
    check_grad(lambda a: F.softmax(a, 1), randn(2, 4))


def test_logsoftmax_grad():
    check_grad(lambda a: F.logsoftmax(a, 1), randn(2, 4))


@pytest.mark.parametrize("axis,keepdims", [(1, False), (0, True), ((0, 2), False), (-1, True)])
def test_logsumexp(axis, keepdims):
    x = randn(3, 4, 5) * 5
    ref = np.log(np.exp(x.astype(np.float64)).sum(axis=axis, keepdims=keepdims))
    np.testing.assert_allclose(F.logsumexp(x, axis, keepdims).numpy(), ref, rtol=1e-5)


def test_logsumexp_extremes_and_grad():
    x = np.array([[1000.0, 1000.0], [-np.inf, -np.inf], [-np.inf, 0.0]], np.float32)
    out = F.logsumexp(x, 1).numpy()
    np.testing.assert_allclose(out, [1000.0 + np.log(2), -np.inf, 0.0], rtol=1e-6)
    check_grad(lambda a: F.logsumexp(a, 1), randn(3, 4))


@pytest.mark.parametrize("dtype", ["int32", "int16", "int8", "uint8"])
def test_logsumexp_of_integers_is_float32(dtype):
    # MegEngine 1.13 gives F.logsumexp(int32 [1, 2, 3, 0], 0) == 3.4401896 (float32)
    out = F.logsumexp(mge.tensor(np.array([1, 2, 3, 0], dtype)), 0)
    assert out.dtype == np.float32
    np.testing.assert_allclose(out.numpy(), np.float32(3.4401896), rtol=1e-6)
    with pytest.raises(TypeError, match="logsumexp: inp must be a float tensor, got dtype bool"):
        F.logsumexp(mge.tensor([True, False]), 0)


# ----------------------------------------------------------------------------- linear, conv


@pytest.mark.parametrize("shape", [(4, 3), (2, 5, 3), (3,), (0, 3)])
def test_linear(shape):
    x, w, b = randn(*shape), randn(2, 3), randn(2)
    np.testing.assert_allclose(F.linear(x, w, b).numpy(), x @ w.T + b, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(F.linear(x, w).numpy(), x @ w.T, rtol=1e-5, atol=1e-5)


def test_linear_errors_and_grad():
    with pytest.raises(ValueError, match=r"linear: inp \(4, 3\) does not match weight \(2, 4\)"):
        F.linear(randn(4, 3), randn(2, 4))
    with pytest.raises(TypeError, match="linear: inp must be a float"):
        F.linear(mge.Tensor([[1, 2]]), randn(2, 2))
    check_grad(F.linear, randn(2, 3, 3), randn(2, 3), randn(2), wrt=(0, 1, 2))


CONV2D_CASES = [
    {"stride": 1, "padding": 0, "dilation": 1, "groups": 1},
    {"stride": 2, "padding": 1, "dilation": 1, "groups": 1},
    {"stride": (1, 2), "padding": (2, 0), "dilation": (2, 1), "groups": 1},
    {"stride": 1, "padding": 1, "dilation": 1, "groups": 2},
]


@pytest.mark.parametrize("kw", CONV2D_CASES)
def test_conv2d(kw):
    g = kw["groups"]
    x, w, b = randn(2, 4, 7, 6), randn(6, 4 // g, 3, 2), randn(1, 6, 1, 1)
    wt = w if g == 1 else w.reshape(g, 6 // g, 4 // g, 3, 2)
    out = F.conv2d(x, wt, b, **kw).numpy()
    t = lambda v: (v, v) if isinstance(v, int) else v
    ref = conv_ref(x, w, t(kw["stride"]), t(kw["padding"]), t(kw["dilation"]), g) + b
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-4)


def test_conv_mode_conv1d_conv3d_and_views():
    x, w = randn(1, 2, 5, 5), randn(3, 2, 3, 3)
    out = F.conv2d(x, w, conv_mode="convolution").numpy()
    ref = conv_ref(x, w, (1, 1), (0, 0), (1, 1), 1, flip=True)
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-4)
    x1, w1 = randn(2, 4, 9), randn(4, 2, 3)
    out = F.conv1d(x1, w1, randn(1, 4, 1) * 0, stride=2, padding=1, groups=2).numpy()
    np.testing.assert_allclose(out, conv_ref(x1, w1, (2,), (1,), (1,), 2), rtol=1e-4, atol=1e-4)
    x3, w3 = randn(1, 2, 4, 5, 3), randn(2, 2, 2, 3, 2)
    out = F.conv3d(x3, w3, padding=(1, 0, 1), dilation=(1, 2, 1)).numpy()
    ref = conv_ref(x3, w3, (1, 1, 1), (1, 0, 1), (1, 2, 1), 1)
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-4)
    xt = mge.Tensor(randn(5, 5, 2, 1)).transpose(3, 2, 1, 0)  # a non-contiguous view
    np.testing.assert_allclose(
        F.conv2d(xt, w).numpy(), conv_ref(xt.numpy(), w, (1, 1), (0, 0), (1, 1), 1), rtol=1e-4
    )
    assert F.conv2d(np.zeros((0, 2, 5, 5), np.float32), w).shape == (0, 3, 3, 3)


def test_conv2d_sees_weights_updated_in_place():
    # The x86 kernels keep a filter reordered between calls while its value stays; an optimizer
    # step (Tensor._reset), set_value and a freed weight whose memory a new one reuses must all
    # give the new values.
    import megengine.optimizer as optim

    x = randn(2, 3, 6, 6)
    w = mge.Parameter(randn(4, 3, 3, 3))
    opt = optim.SGD([w], lr=0.5)
    gm = GradManager().attach([w])
    for step in range(4):
        for _ in range(3):  # the same value: reordered once, then read from the cache
            out = F.conv2d(x, w, padding=1).numpy()
            ref = conv_ref(x, w.numpy(), (1, 1), (1, 1), (1, 1), 1)
            np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-4)
        with gm:
            gm.backward(F.conv2d(x, w, padding=1).sum())
        opt.step().clear_grad()
    with pytest.warns(DeprecationWarning):
        w.set_value(randn(4, 3, 3, 3))
    for _ in range(3):
        ref = conv_ref(x, w.numpy(), (1, 1), (1, 1), (1, 1), 1)
        np.testing.assert_allclose(F.conv2d(x, w, padding=1).numpy(), ref, rtol=1e-4, atol=1e-4)
    for _ in range(3):  # a new tensor each time, likely at the address the last one freed
        wv = randn(4, 3, 3, 3)
        ref = conv_ref(x, wv, (1, 1), (1, 1), (1, 1), 1)
        for _ in range(3):
            out = F.conv2d(x, mge.Tensor(wv), padding=1).numpy()
            np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-4)


def test_conv_errors():
    with pytest.raises(ValueError, match=r"conv2d: inp \(1, 3, 5, 5\) has 3 channels"):
        F.conv2d(randn(1, 3, 5, 5), randn(2, 2, 3, 3))
    with pytest.raises(ValueError, match="conv2d: inp must have 4 dims"):
        F.conv2d(randn(3, 5, 5), randn(2, 3, 3, 3))
    with pytest.raises(ValueError, match="smaller than the dilated kernel"):
        F.conv2d(randn(1, 1, 2, 2), randn(1, 1, 3, 3))
    with pytest.raises(ValueError, match="conv1d: stride"):
        F.conv1d(randn(1, 1, 5), randn(1, 1, 3), stride=0)
    with pytest.raises(ValueError, match="conv_mode"):
        F.conv2d(randn(1, 1, 3, 3), randn(1, 1, 3, 3), conv_mode="bad")
    with pytest.raises(TypeError, match="conv2d: inp must be a float"):
        F.conv2d(mge.Tensor(np.ones((1, 1, 3, 3), np.int32)), np.ones((1, 1, 3, 3), np.int32))
    with pytest.raises(ValueError, match="grouped weight"):
        F.conv2d(randn(1, 4, 3, 3), randn(3, 2, 2, 1, 1), groups=2)


def test_conv_promotes_integer_operands_to_the_float_one():
    # MegEngine's promotion: an integer image convolves in the filter's float dtype, an
    # integer filter in the image's.
    img = np.arange(2 * 2 * 4 * 5).reshape(2, 2, 4, 5).astype(np.int32)
    w = randn(3, 2, 2, 2)
    out = F.conv2d(mge.Tensor(img), mge.Tensor(w), padding=1)
    assert out.dtype == np.float32
    ref = conv_ref(img.astype(np.float32), w, (1, 1), (1, 1), (1, 1), 1)
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-5, atol=1e-4)
    wi = np.arange(3 * 2 * 2 * 2).reshape(3, 2, 2, 2).astype(np.int32) - 12
    x = randn(2, 2, 4, 5)
    out = F.conv2d(mge.Tensor(x), mge.Tensor(wi))
    ref = conv_ref(x, wi.astype(np.float32), (1, 1), (0, 0), (1, 1), 1)
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-5, atol=1e-4)
    seq = F.conv1d(
        mge.Tensor(np.ones((1, 1, 4), np.uint8)), mge.Tensor(np.ones((1, 1, 2), np.float32))
    )
    assert seq.dtype == np.float32 and seq.numpy().tolist() == [[[2.0, 2.0, 2.0]]]
    vol = np.ones((1, 1, 2, 2, 2), np.int16)
    out = F.conv3d(mge.Tensor(vol), mge.Tensor(np.full((1, 1, 2, 2, 2), 0.5, np.float32)))
    assert out.dtype == np.float32 and out.numpy().tolist() == [[[[[4.0]]]]]


def test_conv2d_grad():
    check_grad(
        lambda x, w: F.conv2d(x, w, stride=2, padding=1),
        randn(1, 2, 5, 4),
        randn(3, 2, 3, 3),
        wrt=(0, 1),
    )


@pytest.mark.parametrize(
    "stride,padding,dilation,groups,output_padding",
    [(1, 0, 1, 1, 0), (2, 1, 1, 1, 0), (2, 1, 1, 2, 1), ((2, 3), (0, 1), (1, 2), 1, (1, 2))],
)
def test_conv_transpose2d(stride, padding, dilation, groups, output_padding):
    t = lambda v: (v, v) if isinstance(v, int) else v
    x, w = randn(2, 4, 3, 4), randn(4, 6 // groups, 3, 2)
    b = randn(1, 6, 1, 1)
    wt = w if groups == 1 else w.reshape(groups, 4 // groups, 6 // groups, 3, 2)
    out = F.conv_transpose2d(x, wt, b, stride, padding, output_padding, dilation, groups).numpy()
    ref = conv_transpose_ref(x, w, t(stride), t(padding), t(dilation), groups, t(output_padding))
    np.testing.assert_allclose(out, ref + b, rtol=1e-4, atol=1e-4)


def test_conv_transpose2d_is_conv2d_input_gradient_and_errors():
    with pytest.raises(ValueError, match="output_padding"):
        F.conv_transpose2d(randn(1, 1, 3, 3), randn(1, 1, 2, 2), stride=1, output_padding=1)
    with pytest.raises(ValueError, match=r"conv_transpose2d: inp \(1, 2, 3, 3\) has 2 channels"):
        F.conv_transpose2d(randn(1, 2, 3, 3), randn(3, 1, 2, 2))
    check_grad(
        lambda x: F.conv_transpose2d(x, np.ones((2, 1, 2, 2), np.float32), stride=2),
        randn(1, 2, 2, 2),
    )


@pytest.mark.parametrize(
    "stride,padding,dilation,groups,output_padding",
    [(1, 0, 1, 1, 0), (2, 1, 1, 2, 1), ((1, 2, 3), (0, 1, 1), (2, 1, 1), 1, (1, 1, 2))],
)
def test_conv_transpose3d(stride, padding, dilation, groups, output_padding):
    t = lambda v: (v,) * 3 if isinstance(v, int) else v
    x, w = randn(2, 4, 2, 3, 2), randn(4, 6 // groups, 2, 3, 2)
    b = randn(1, 6, 1, 1, 1)
    wt = w if groups == 1 else w.reshape(groups, 4 // groups, 6 // groups, 2, 3, 2)
    out = F.conv_transpose3d(x, wt, b, stride, padding, output_padding, dilation, groups)
    ref = conv_transpose_ref(x, w, t(stride), t(padding), t(dilation), groups, t(output_padding))
    np.testing.assert_allclose(out.numpy(), ref + b, rtol=1e-4, atol=1e-4)
    assert F.nn.conv_transpose3d is F.conv_transpose3d


def test_conv_transpose3d_is_conv3d_input_gradient_and_errors():
    with pytest.raises(ValueError, match="conv_transpose3d: inp must have 5 dims"):
        F.conv_transpose3d(randn(1, 1, 3, 3), randn(1, 1, 2, 2, 2))
    with pytest.raises(ValueError, match="output_padding"):
        F.conv_transpose3d(randn(1, 1, 2, 2, 2), randn(1, 1, 2, 2, 2), output_padding=1)
    with pytest.raises(ValueError, match="empty output"):
        F.conv_transpose3d(randn(1, 1, 1, 1, 1), randn(1, 1, 1, 1, 1), padding=1)
    # conv_transpose3d(dy, w) is conv3d's gradient with respect to its input
    x, w, dy = randn(1, 2, 4, 6, 4), randn(3, 2, 2, 3, 2), randn(1, 3, 2, 2, 2)
    xt = mge.Tensor(x)
    gm = GradManager().attach([xt])
    with gm:
        gm.backward(F.conv3d(xt, w, stride=2), mge.Tensor(dy))
    dx = F.conv_transpose3d(dy, w, stride=2, output_padding=(0, 1, 0))
    np.testing.assert_allclose(dx.numpy(), xt.grad.numpy(), rtol=1e-4, atol=1e-5)
    check_grad(
        lambda x, w: F.conv_transpose3d(x, w, stride=(1, 2, 1), padding=(0, 1, 0)),
        randn(1, 2, 2, 2, 3),
        randn(2, 1, 2, 3, 2),
        wrt=(0, 1),
    )


# ----------------------------------------------------------------------------- pooling


@pytest.mark.parametrize("k,s,p", [(2, None, 0), (3, 1, 1), ((3, 2), (2, 1), (1, 0)), (2, 3, 1)])
def test_pooling(k, s, p):
    t = lambda v: (v, v) if isinstance(v, int) else v
    x = randn(2, 3, 7, 6)
    kk, ss, pp = t(k), t(s if s is not None else k), t(p)
    np.testing.assert_allclose(F.max_pool2d(x, k, s, p).numpy(), pool_ref(x, kk, ss, pp, "max"))
    for mode in ["average", "average_count_exclude_padding"]:
        np.testing.assert_allclose(
            F.avg_pool2d(x, k, s, p, mode=mode).numpy(),
            pool_ref(x, kk, ss, pp, mode),
            rtol=1e-5,
            atol=1e-6,
        )
    np.testing.assert_allclose(
        F.avg_pool2d(x, k, s, p).numpy(), pool_ref(x, kk, ss, pp, "exclude"), rtol=1e-5, atol=1e-6
    )


def test_pooling_errors_and_views():
    with pytest.raises(ValueError, match="max_pool2d: padding"):
        F.max_pool2d(randn(1, 1, 4, 4), 2, padding=2)
    with pytest.raises(ValueError, match="avg_pool2d: inp must have 4 dims"):
        F.avg_pool2d(randn(4, 4), 2)
    with pytest.raises(ValueError, match="avg_pool2d: mode"):
        F.avg_pool2d(randn(1, 1, 4, 4), 2, mode="sum")
    with pytest.raises(ValueError, match="smaller than kernel_size"):
        F.max_pool2d(randn(1, 1, 1, 4), 2)
    xt = mge.Tensor(randn(6, 5, 2, 1)).transpose(3, 2, 1, 0)
    np.testing.assert_allclose(
        F.max_pool2d(xt, 2).numpy(), pool_ref(xt.numpy(), (2, 2), (2, 2), (0, 0), "max")
    )
    assert F.max_pool2d(np.zeros((0, 2, 4, 4), np.float32), 2).shape == (0, 2, 2, 2)


def test_pooling_grad():
    x = rng.permutation(40).reshape(1, 2, 5, 4).astype(np.float32)  # distinct: max is unique
    check_grad(lambda a: F.max_pool2d(a, 2, 1), x)
    check_grad(lambda a: F.avg_pool2d(a, 3, 2, 1), randn(1, 2, 5, 4))


@pytest.mark.parametrize("oshp", [1, (2, 3), (3, 2), (5, 4), (4, 6)])
def test_adaptive_pooling(oshp):
    x = randn(2, 3, 5, 4)
    o = (oshp, oshp) if isinstance(oshp, int) else oshp
    np.testing.assert_allclose(
        F.adaptive_max_pool2d(x, oshp).numpy(), adaptive_ref(x, o, np.max), rtol=1e-6
    )
    np.testing.assert_allclose(
        F.adaptive_avg_pool2d(x, oshp).numpy(), adaptive_ref(x, o, np.mean), rtol=1e-5, atol=1e-6
    )


def test_adaptive_pooling_errors_and_grad():
    with pytest.raises(ValueError, match="adaptive_avg_pool2d: oshp"):
        F.adaptive_avg_pool2d(randn(1, 1, 4, 4), (0, 2))
    with pytest.raises(ValueError, match="adaptive_max_pool2d: inp must have 4 dims"):
        F.adaptive_max_pool2d(randn(1, 4, 4), 2)
    check_grad(lambda a: F.adaptive_avg_pool2d(a, (2, 3)), randn(1, 2, 5, 4))


# ----------------------------------------------------------------------------- normalisation


def bn_train_ref(x, w, b, eps):
    axes = (0,) + tuple(range(2, x.ndim))
    m = x.mean(axis=axes, keepdims=True)
    v = x.var(axis=axes, keepdims=True)
    return (x - m) / np.sqrt(v + eps) * w + b, m, x.var(axis=axes, ddof=1, keepdims=True)


@pytest.mark.parametrize("shape", [(4, 3), (2, 3, 4, 5), (2, 3, 2, 2, 2)])
def test_batch_norm_training_updates_running_stats(shape):
    x = randn(*shape) * 2 + 1
    c = shape[1]
    cs = (1, c) + (1,) * (len(shape) - 2)
    w, b = randn(*cs), randn(*cs)
    rm0, rv0 = randn(*cs), rng.uniform(0.5, 2, cs).astype(np.float32)
    rm, rv = mge.Tensor(rm0), mge.Tensor(rv0)
    out = F.batch_norm(x, rm, rv, w, b, training=True, momentum=0.8, eps=1e-3)
    ref, m, v = bn_train_ref(x.astype(np.float64), w, b, 1e-3)
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(rm.numpy(), rm0 * 0.8 + m * 0.2, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(rv.numpy(), rv0 * 0.8 + v * 0.2, rtol=1e-5, atol=1e-6)
    # inplace=False leaves the given tensors alone and returns the new statistics.
    rm2, rv2 = mge.Tensor(rm0.reshape(c)), mge.Tensor(rv0.reshape(c))
    out2, nm, nv = F.batch_norm(
        x, rm2, rv2, w, b, training=True, momentum=0.8, eps=1e-3, inplace=False
    )
    np.testing.assert_allclose(out2.numpy(), ref, rtol=1e-4, atol=1e-4)
    np.testing.assert_array_equal(rm2.numpy(), rm0.reshape(c))
    assert nm.shape == (c,) and nv.shape == (c,)
    np.testing.assert_allclose(nm.numpy(), (rm0 * 0.8 + m * 0.2).reshape(c), rtol=1e-5, atol=1e-6)


def test_batch_norm_inference_and_no_stats():
    x = randn(3, 2, 4)
    rm, rv = randn(2), rng.uniform(0.5, 2, 2).astype(np.float32)
    w, b = randn(1, 2, 1), randn(1, 2, 1)
    out = F.batch_norm(x, rm, rv, w, b, eps=1e-2).numpy()
    ref = (x - rm[:, None]) / np.sqrt(rv[:, None] + 1e-2) * w + b
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5)
    out, m, v = F.batch_norm(x, rm, rv, inplace=False)
    assert m is rm and v is rv
    out = F.batch_norm(x, training=True)
    np.testing.assert_allclose(out.numpy(), bn_train_ref(x, 1, 0, 1e-5)[0], rtol=1e-4, atol=1e-4)
    xt = mge.Tensor(randn(4, 2, 3)).transpose(2, 1, 0)
    ref = bn_train_ref(xt.numpy(), 1, 0, 1e-5)[0]
    np.testing.assert_allclose(F.batch_norm(xt, training=True).numpy(), ref, rtol=1e-4, atol=1e-4)


def test_batch_norm_trains_on_one_value_per_channel_as_megengine():
    # MegEngine 1.13's results: the output is the bias, the running mean moves, the running
    # variance takes the unbiased variance 0 / 0 (NaN); x and weight get 0 gradients, bias the
    # sum of dy
    x = mge.Tensor(np.arange(3, 7, dtype=np.float32).reshape(1, 4, 1, 1))
    rm = mge.Tensor(np.zeros((1, 4, 1, 1), np.float32))
    rv = mge.Tensor(np.ones((1, 4, 1, 1), np.float32))
    w = mge.Parameter(np.full((1, 4, 1, 1), 2, np.float32))
    b = mge.Parameter(np.full((1, 4, 1, 1), 0.5, np.float32))
    gm = GradManager().attach([x, w, b])
    with gm:
        y = F.batch_norm(x, rm, rv, w, b, training=True, inplace=True)
        gm.backward(y.sum())
    assert y.numpy().ravel().tolist() == [0.5] * 4
    np.testing.assert_allclose(rm.numpy().ravel(), [0.3, 0.4, 0.5, 0.6], rtol=1e-6)
    assert np.isnan(rv.numpy()).all()
    assert x.grad.numpy().ravel().tolist() == [0.0] * 4
    assert w.grad.numpy().ravel().tolist() == [0.0] * 4
    assert b.grad.numpy().ravel().tolist() == [1.0] * 4
    bn = mge.module.BatchNorm1d(3)
    assert bn(mge.Tensor([[1.0, 2.0, 3.0]])).numpy().tolist() == [[0.0, 0.0, 0.0]]
    np.testing.assert_allclose(bn.running_mean.numpy().ravel(), [0.1, 0.2, 0.3], rtol=1e-6)
    assert np.isnan(bn.running_var.numpy()).all()


def test_batch_norm_errors():
    with pytest.raises(ValueError, match="batch_norm: running_mean and running_var are required"):
        F.batch_norm(randn(2, 3))
    with pytest.raises(ValueError, match=r"batch_norm: running_mean \(4,\) does not have one"):
        F.batch_norm(randn(2, 3), randn(4), randn(4))
    with pytest.raises(ValueError, match="batch_norm: inp must have at least 2 dims"):
        F.batch_norm(randn(3), randn(3), randn(3))
    with pytest.raises(TypeError, match="batch_norm: inplace=True updates running_mean"):
        F.batch_norm(randn(2, 3), np.zeros(3, np.float32), np.ones(3, np.float32), training=True)
    with pytest.raises(TypeError, match="batch_norm: inp must be a float"):
        F.batch_norm(mge.Tensor([[1, 2]]), training=True)


def test_batch_norm_grad():
    rm, rv = np.zeros(3, np.float32), np.ones(3, np.float32)
    check_grad(
        lambda x, w, b: F.batch_norm(x, mge.Tensor(rm), mge.Tensor(rv), w, b, eps=0.5),
        randn(2, 3, 2),
        randn(1, 3, 1),
        randn(1, 3, 1),
        wrt=(0, 1, 2),
    )
    check_grad(
        lambda x, w, b: F.batch_norm(x, weight=w, bias=b, training=True),
        randn(4, 3),
        randn(1, 3),
        randn(1, 3),
        wrt=(0, 1, 2),
        rtol=5e-2,
        atol=5e-3,
    )


def ln_ref(x, k, eps):
    axes = tuple(range(x.ndim - k, x.ndim))
    m = x.mean(axis=axes, keepdims=True)
    return (x - m) / np.sqrt(x.var(axis=axes, keepdims=True) + eps)


def gn_ref(x, g, eps):
    n, _c = x.shape[:2]
    xg = x.reshape(n, g, -1)
    y = (xg - xg.mean(-1, keepdims=True)) / np.sqrt(xg.var(-1, keepdims=True) + eps)
    return y.reshape(x.shape)


@pytest.mark.parametrize("shape,ns", [((4, 5), 5), ((2, 3, 4), (3, 4)), ((2, 3, 4), 4)])
def test_layer_norm(shape, ns):
    x = randn(*shape) * 3
    k = 1 if isinstance(ns, int) else len(ns)
    np.testing.assert_allclose(
        F.layer_norm(x, ns, False).numpy(), ln_ref(x, k, 1e-5), rtol=1e-4, atol=1e-4
    )
    w, b = randn(*shape[len(shape) - k :]), randn(*shape[len(shape) - k :])
    np.testing.assert_allclose(
        F.layer_norm(x, ns, True, w, b, eps=1e-3).numpy(),
        ln_ref(x, k, 1e-3) * w + b,
        rtol=1e-4,
        atol=1e-4,
    )


@pytest.mark.parametrize("shape,groups", [((2, 6, 3), 3), ((2, 4, 2, 3), 1), ((3, 4), 2)])
def test_group_and_instance_norm(shape, groups):
    x = randn(*shape) * 2
    c = shape[1]
    cs = (1, c) + (1,) * (len(shape) - 2)
    w, b = randn(c), randn(c)
    np.testing.assert_allclose(
        F.group_norm(x, groups, False).numpy(), gn_ref(x, groups, 1e-5), rtol=1e-4, atol=1e-4
    )
    np.testing.assert_allclose(
        F.group_norm(x, groups, True, w, b).numpy(),
        gn_ref(x, groups, 1e-5) * w.reshape(cs) + b.reshape(cs),
        rtol=1e-4,
        atol=1e-4,
    )
    if len(shape) > 2:
        np.testing.assert_allclose(
            F.instance_norm(x, True, w.reshape(cs), b, eps=1e-3).numpy(),
            gn_ref(x, c, 1e-3) * w.reshape(cs) + b.reshape(cs),
            rtol=1e-4,
            atol=1e-4,
        )


def test_norm_errors():
    with pytest.raises(ValueError, match=r"layer_norm: inp \(2, 3\) does not end with"):
        F.layer_norm(randn(2, 3), (2,), False)
    with pytest.raises(ValueError, match="layer_norm: affine=True needs weight and bias"):
        F.layer_norm(randn(2, 3), 3, True)
    with pytest.raises(TypeError, match="affine"):
        F.layer_norm(randn(2, 3), 3)  # affine is required, as in MegEngine
    with pytest.raises(ValueError, match=r"layer_norm: weight \(2,\)"):
        F.layer_norm(randn(2, 3), 3, True, randn(2), randn(3))
    with pytest.raises(ValueError, match="group_norm: num_groups=4 does not divide"):
        F.group_norm(randn(2, 6, 3), 4, False)
    with pytest.raises(ValueError, match=r"group_norm: weight \(4,\)"):
        F.group_norm(randn(2, 6, 3), 3, True, randn(4), randn(6))
    with pytest.raises(TypeError, match="instance_norm: affine must be a bool"):
        F.instance_norm(randn(2, 3, 4), randn(3))


def test_layer_group_norm_grad():
    check_grad(
        lambda x, w, b: F.layer_norm(x, 4, True, w, b),
        randn(3, 4),
        randn(4),
        randn(4),
        wrt=(0, 1, 2),
        rtol=5e-2,
        atol=5e-3,
    )
    check_grad(
        lambda x, w, b: F.group_norm(x, 2, True, w, b),
        randn(2, 4, 3),
        randn(4),
        randn(4),
        wrt=(0, 1, 2),
        rtol=5e-2,
        atol=5e-3,
    )


@pytest.mark.parametrize("axes", [(0, 1), (1, 3), (-1,), (0, 2, 3), 2])
def test_general_norm(axes):
    x = randn(2, 3, 4, 5)
    ax = tuple(a % 4 for a in ((axes,) if isinstance(axes, int) else axes))
    sizes = tuple(x.shape[a] for a in ax)
    w, b = randn(*sizes), randn(*sizes)
    x64 = x.astype(np.float64)
    norm = (x64 - x64.mean(ax, keepdims=True)) / np.sqrt(x64.var(ax, keepdims=True) + 1e-5)
    shape = [x.shape[i] if i in ax else 1 for i in range(4)]
    want = norm * w.reshape(shape) + b.reshape(shape)
    np.testing.assert_allclose(F.nn.general_norm(x, axes, True, w, b).numpy(), want, atol=1e-5)
    got = F.general_norm(x, axes, affine=False, eps=1e-5)
    np.testing.assert_allclose(got.numpy(), norm, atol=1e-5)


def test_general_norm_errors_and_grad():
    x = randn(2, 3, 4)
    with pytest.raises(ValueError, match="distinct ascending"):
        F.nn.general_norm(x, (2, 0), False)
    with pytest.raises(ValueError, match="distinct ascending"):
        F.nn.general_norm(x, (1, -2), False)  # the same axis twice
    with pytest.raises(ValueError, match="distinct ascending"):
        F.nn.general_norm(x, 3, False)
    with pytest.raises(ValueError, match="empty"):
        F.nn.general_norm(x, (), False)
    with pytest.raises(ValueError, match="needs weight and bias"):
        F.nn.general_norm(x, 1)
    with pytest.raises(ValueError, match=r"weight \(4,\) must have the normalised shape \(3,\)"):
        F.nn.general_norm(x, 1, True, randn(4), randn(3))
    check_grad(
        lambda x, w, b: F.nn.general_norm(x, (0, 2), True, w, b),
        randn(2, 3, 4),
        randn(2, 4),
        randn(2, 4),
        wrt=(0, 1, 2),
        rtol=5e-2,
        atol=5e-3,
    )


def lrn_ref(x, n, k, alpha, beta):
    # Straight from the definition, one channel at a time (MegEngine's: alpha not divided by n).
    out = np.empty(x.shape, np.float64)
    c = x.shape[1]
    for i in range(c):
        window = x[:, max(0, i - n // 2) : min(c, i + n // 2 + 1)].astype(np.float64)
        out[:, i] = x[:, i] / (k + alpha * (window**2).sum(axis=1)) ** beta
    return out


@pytest.mark.parametrize(
    "shape,n,k,alpha,beta",
    [
        ((2, 7, 3, 4), 5, 2.0, 1e-4, 0.75),
        ((1, 3, 2, 2), 3, 1.0, 0.5, 1.5),
        ((2, 2, 1, 3), 7, 0.5, 2.0, 0.5),
    ],
)
def test_local_response_norm(shape, n, k, alpha, beta):
    x = randn(*shape)
    got = F.nn.local_response_norm(x, n, k, alpha, beta)
    np.testing.assert_allclose(got.numpy(), lrn_ref(x, n, k, alpha, beta), rtol=1e-5, atol=1e-6)
    # a view with a step in the channels, and the defaults
    v = mge.Tensor(randn(1, 10, 2, 2))[:, ::2]
    np.testing.assert_allclose(
        F.local_response_norm(v).numpy(), lrn_ref(v.numpy(), 5, 2.0, 1e-4, 0.75), rtol=1e-5
    )


def test_local_response_norm_errors_and_grad():
    with pytest.raises(ValueError, match="local_response_norm: inp must have 4 dims"):
        F.nn.local_response_norm(randn(2, 3, 4))
    with pytest.raises(ValueError, match="kernel_size must be a positive odd int"):
        F.nn.local_response_norm(randn(1, 4, 2, 2), kernel_size=4)
    with pytest.raises(TypeError, match="float"):
        F.nn.local_response_norm(np.ones((1, 2, 2, 2), np.int32))
    check_grad(
        lambda x: F.nn.local_response_norm(x, 3, 1.0, 0.3, 0.75),
        randn(2, 5, 2, 3),
        rtol=5e-2,
        atol=5e-3,
    )


# ----------------------------------------------------------------------------- dropout, lookups


def test_dropout():
    x = rng.uniform(1, 2, (200, 100)).astype(np.float32)
    y = F.dropout(x, 0.3).numpy()
    kept = y != 0
    assert abs(kept.mean() - 0.7) < 0.02
    np.testing.assert_allclose(y[kept], x[kept] / 0.7, rtol=1e-6)
    y2 = F.dropout(x, 0.3).numpy()
    assert ((y2 != 0) != kept).any()  # a fresh mask each call
    mge.random.seed(7)
    a = F.dropout(x, 0.5).numpy()
    mge.random.seed(7)
    np.testing.assert_array_equal(F.dropout(x, 0.5).numpy(), a)  # megengine.random.seed
    assert F.dropout(x, 0.3, training=False).numpy() is not None
    np.testing.assert_array_equal(F.dropout(x, 0.3, training=False).numpy(), x)
    np.testing.assert_array_equal(F.dropout(x, 0.0).numpy(), x)
    assert F.dropout(np.zeros((0, 3), np.float32), 0.5).shape == (0, 3)
    with pytest.raises(ValueError, match=r"dropout: drop_prob must be in \[0, 1\)"):
        F.dropout(x, 1.0)
    with pytest.raises(TypeError, match="dropout: inp must be a float"):
        F.dropout(mge.Tensor([1, 2]), 0.5)


def test_dropout_grad():
    x = mge.Parameter(rng.uniform(1, 2, (50,)).astype(np.float32))
    gm = GradManager().attach(x)
    with gm:
        y = F.dropout(x, 0.5)
        gm.backward(y.sum())
    np.testing.assert_allclose(x.grad.numpy(), (y.numpy() != 0) * 2.0)


def test_embedding():
    w = randn(5, 3)
    idx = rng.integers(0, 5, (2, 4)).astype(np.int32)
    np.testing.assert_array_equal(F.embedding(idx, w).numpy(), w[idx])
    np.testing.assert_array_equal(F.embedding(np.int32(2), w).numpy(), w[2])
    assert F.embedding(np.zeros((0,), np.int32), w).shape == (0, 3)
    np.testing.assert_array_equal(F.embedding(idx, w, padding_idx=1).numpy(), w[idx])
    with pytest.raises(IndexError):
        F.embedding([5], w)
    with pytest.raises(TypeError, match="embedding: inp must be an integer"):
        F.embedding([1.0], w)
    with pytest.raises(ValueError, match=r"embedding: weight must be 2-D"):
        F.embedding([1], randn(5))


def test_embedding_grad_and_padding_idx():
    idx = np.array([[0, 2], [2, 3]], np.int32)
    check_grad(lambda w: F.embedding(idx, w), randn(4, 3))
    w = mge.Parameter(randn(4, 3))
    gm = GradManager().attach(w)
    with gm:
        gm.backward(F.embedding(idx, w, padding_idx=2).sum())
    np.testing.assert_array_equal(w.grad.numpy()[:, 0], [1, 0, 0, 1])


@pytest.mark.parametrize("rows,dim,shape", [(1, 4, (3,)), (7, 3, (5, 9)), (3000, 64, (16, 128))])
def test_embedding_grad_sums_repeats_as_numpy(rows, dim, shape):
    # Repeated and negative indices; the largest table spreads over threads. The gradient is
    # exactly each row's repeats summed in index order onto zeros, in float32.
    idx = rng.integers(-rows, rows, shape).astype(np.int32)
    dy = randn(*shape, dim)
    w = mge.Parameter(randn(rows, dim))
    gm = GradManager().attach(w)
    with gm:
        y = F.embedding(idx, w)
        gm.backward(y, mge.tensor(dy))
    np.testing.assert_array_equal(y.numpy(), w.numpy()[idx])
    want = np.zeros((rows, dim), np.float32)
    for i, g in zip(idx.reshape(-1), dy.reshape(-1, dim)):
        want[i] += g
    np.testing.assert_array_equal(w.grad.numpy(), want)


@pytest.mark.parametrize("axis,keepdims", [(1, False), (0, True), (-1, False)])
def test_indexing_one_hot(axis, keepdims):
    x = randn(3, 4, 5)
    ishape = list(x.shape)
    n = ishape.pop(axis)
    idx = rng.integers(0, n, ishape).astype(np.int32)
    ref = np.take_along_axis(x, np.expand_dims(idx, axis), axis)
    if not keepdims:
        ref = ref.squeeze(axis)
    np.testing.assert_array_equal(F.indexing_one_hot(x, idx, axis, keepdims).numpy(), ref)


def test_indexing_one_hot_errors_and_grad():
    with pytest.raises(ValueError, match=r"indexing_one_hot: index \(4,\) must have src \(3, 4\)"):
        F.indexing_one_hot(randn(3, 4), np.zeros(4, np.int32))
    with pytest.raises(TypeError, match="indexing_one_hot: index must be an integer"):
        F.indexing_one_hot(randn(3, 4), np.zeros(3, np.bool_))
    idx = np.array([1, 3, 0], np.int32)
    check_grad(lambda x: F.indexing_one_hot(x, idx), randn(3, 4))


@pytest.mark.parametrize("shape,axis", [((1, 1), 0), ((512, 1000), 1), ((3, 300, 70), 1)])
def test_indexing_one_hot_grad_matches_numpy(shape, axis):
    # Above the kernels' threading grain too: dy at the picked positions, zeros elsewhere.
    x = mge.Parameter(randn(*shape))
    ishape = shape[:axis] + shape[axis + 1 :]
    idx = rng.integers(0, shape[axis], ishape).astype(np.int32)
    dy = randn(*ishape)
    gm = GradManager().attach(x)
    with gm:
        gm.backward(F.indexing_one_hot(x, idx, axis), mge.tensor(dy))
    want = np.zeros(shape, np.float32)
    np.put_along_axis(want, np.expand_dims(idx, axis), np.expand_dims(dy, axis), axis)
    np.testing.assert_array_equal(x.grad.numpy(), want)


def test_one_hot():
    idx = rng.integers(0, 4, (2, 3)).astype(np.int32)
    out = F.one_hot(idx, 4)
    assert out.dtype == np.int32
    np.testing.assert_array_equal(out.numpy(), np.eye(4, dtype=np.int32)[idx])
    np.testing.assert_array_equal(F.one_hot(np.int32(1), 3).numpy(), [0, 1, 0])
    assert F.one_hot(np.zeros((0,), np.int32), 3).shape == (0, 3)
    # Past the threading grain (the zeros are one broadcast element the kernel fills dst from),
    # eagerly and in a symbolic trace, where the broadcast is a copy of its own.
    from megengine.jit import trace

    big = rng.integers(0, 1000, (4096,)).astype(np.int32)
    want = np.eye(1000, dtype=np.int32)[big]
    np.testing.assert_array_equal(F.one_hot(big, 1000).numpy(), want)
    traced = trace(lambda t: F.one_hot(t, 1000), symbolic=True)
    for _ in range(2):
        np.testing.assert_array_equal(traced(mge.Tensor(big)).numpy(), want)
    with pytest.raises(ValueError, match=r"one_hot: a value of inp is outside \[0, 3\)"):
        F.one_hot([3], 3)
    with pytest.raises(ValueError, match=r"one_hot: a value of inp is outside \[0, 1000\)"):
        F.one_hot(np.append(big, 1000).astype(np.int32), 1000)
    with pytest.raises(TypeError, match="one_hot: inp must be an integer"):
        F.one_hot([1.0], 3)


# ----------------------------------------------------------------------------- shape functions


def test_normalize_is_math_normalize_and_differentiable():
    assert F.nn.normalize is F.math.normalize
    check_grad(lambda x: F.nn.normalize(x, axis=1), randn(3, 4))


@pytest.mark.parametrize(
    "width,mode",
    [
        (((1, 2), (0, 3)), "constant"),
        (((2, 1),), "edge"),
        (((1, 1), (2, 0)), "replicate"),
        (((2, 1), (1, 3)), "reflect"),
        ((1, 2), "constant"),
    ],
)
def test_pad(width, mode):
    x = randn(4, 5)
    full = np.asarray(width)
    if full.shape == (2,):
        full = np.tile(full, (2, 1))
    full = np.concatenate([full, np.zeros((2 - len(full), 2), int)])
    np_mode = {"replicate": "edge"}.get(mode, mode)
    kw = {"constant_values": 1.5} if mode == "constant" else {}
    out = F.pad(x, width, mode, constant_value=1.5).numpy()
    np.testing.assert_array_equal(out, np.pad(x, full, np_mode, **kw))


def test_pad_edges_errors_grad():
    assert F.pad(np.zeros((0, 2), np.float32), ((1, 1), (0, 0))).shape == (2, 2)
    xt = mge.Tensor(randn(3, 2)).T
    np.testing.assert_array_equal(
        F.pad(xt, ((1, 0), (0, 2))).numpy(), np.pad(xt.numpy(), ((1, 0), (0, 2)))
    )
    with pytest.raises(ValueError, match="pad: reflect widths"):
        F.pad(randn(2, 3), ((2, 0),), "reflect")
    with pytest.raises(ValueError, match="pad: pad_width"):
        F.pad(randn(2, 3), ((1, 1), (1, 1), (1, 1)))
    with pytest.raises(ValueError, match="must not be negative"):
        F.pad(randn(2, 3), ((-1, 1),))
    with pytest.raises(ValueError, match="pad: mode"):
        F.pad(randn(2, 3), ((1, 1),), "wrap")
    check_grad(lambda x: F.pad(x, ((1, 2), (2, 1)), "reflect"), randn(3, 4))


def test_pad_width_forms_and_repeated_calls():
    # Ints in tuples and lists are read in Python, other forms through NumPy; a repeated call
    # reuses its op (F.pad keeps it by the arguments as given). Each against np.pad.
    x = randn(2, 3)
    forms = [
        ((1, 2), ((1, 2), (1, 2))),
        ((1.0, 2.0), ((1, 2), (1, 2))),
        (np.array([1, 2]), ((1, 2), (1, 2))),
        ([[1, 0], [0, 2]], ((1, 0), (0, 2))),
        (((np.int64(1), 0),), ((1, 0), (0, 0))),
        (((0, 0), (0, 0)), ((0, 0), (0, 0))),
    ]
    for width, full in forms:
        for _ in range(2):
            out = F.pad(x, width, constant_value=-1).numpy()
            np.testing.assert_array_equal(out, np.pad(x, full, constant_values=-1))
    # The same widths on another shape, in another mode, with another value.
    y = randn(4, 5)
    np.testing.assert_array_equal(F.pad(y, (1, 2)).numpy(), np.pad(y, ((1, 2), (1, 2))))
    np.testing.assert_array_equal(
        F.pad(y, (1, 2), "reflect").numpy(), np.pad(y, ((1, 2), (1, 2)), "reflect")
    )
    np.testing.assert_array_equal(
        F.pad(y, (1, 2), constant_value=3).numpy(), np.pad(y, ((1, 2), (1, 2)), constant_values=3)
    )
    # A Tensor value is read on every call, never kept with the op.
    v = mge.Tensor(2.0)
    assert F.pad(x, ((1, 0),), constant_value=v).numpy()[0, 0] == 2.0
    v._reset(mge.Tensor(5.0))
    assert F.pad(x, ((1, 0),), constant_value=v).numpy()[0, 0] == 5.0
    # A failed check is not remembered: the same bad call fails again.
    for _ in range(2):
        with pytest.raises(ValueError, match="reflect widths"):
            F.pad(x, ((2, 0),), "reflect")


def test_pixel_shuffle():
    x = randn(2, 3, 8, 2, 3)
    r = 2
    ref = x.reshape(2, 3, 2, r, r, 2, 3).transpose(0, 1, 2, 5, 3, 6, 4).reshape(2, 3, 2, 4, 6)
    np.testing.assert_array_equal(F.pixel_shuffle(x, r).numpy(), ref)
    with pytest.raises(ValueError, match=r"pixel_shuffle: inp \(2, 3, 3\)"):
        F.pixel_shuffle(randn(2, 3, 3), 2)
    check_grad(lambda a: F.pixel_shuffle(a, 2), randn(1, 4, 2, 3))


@pytest.mark.parametrize("align", [False, True])
@pytest.mark.parametrize("size", [(5, 7), (2, 3), (4, 4), (1, 6)])
def test_interpolate_bilinear(size, align):
    x = randn(2, 3, 4, 4)
    out = F.interpolate(x, size=size, align_corners=align).numpy()
    np.testing.assert_allclose(out, bilinear_ref(x, *size, align), rtol=1e-5, atol=1e-5)


def test_interpolate_nearest_linear_scale_and_errors():
    x = randn(1, 2, 3, 5)
    out = F.interpolate(x, scale_factor=(2, 1.5), mode="nearest").numpy()
    rows = np.floor(np.arange(6) * 3 / 6).astype(int)
    cols = np.floor(np.arange(7) * 5 / 7).astype(int)
    np.testing.assert_array_equal(out, x[:, :, rows][:, :, :, cols])
    x1 = randn(2, 3, 4)
    out = F.interpolate(x1, size=7, mode="linear").numpy()
    ref = bilinear_ref(x1[:, :, None], 1, 7, False)[:, :, 0]
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="interpolate: give exactly one"):
        F.interpolate(x, size=3, scale_factor=2)
    with pytest.raises(ValueError, match="interpolate: mode"):
        F.interpolate(x, size=3, mode="area")
    with pytest.raises(ValueError, match="align_corners only applies to the linear modes"):
        F.interpolate(x, size=3, mode="bicubic", align_corners=True)
    with pytest.raises(ValueError, match="interpolate: mode 'bilinear' needs a 4-dim"):
        F.interpolate(x1, size=3)
    check_grad(lambda a: F.interpolate(a, size=(3, 4)), randn(1, 1, 2, 3))


def trilinear_ref(x, out, align_corners):
    # The 8-point weights directly, in float64 (the op is separable passes, rounded apart).
    (d0, d1, fd), (h0, h1, fh), (w0, w1, fw) = (
        linear_coords(o, i, align_corners) for o, i in zip(out, x.shape[2:])
    )
    y = np.zeros(x.shape[:2] + tuple(out))
    for di, wd in ((d0, 1 - fd), (d1, fd)):
        for hi, wh in ((h0, 1 - fh), (h1, fh)):
            for wi, ww in ((w0, 1 - fw), (w1, fw)):
                w = wd[:, None, None] * wh[None, :, None] * ww[None, None, :]
                y += x[:, :, di][:, :, :, hi][:, :, :, :, wi] * w
    return y


@pytest.mark.parametrize("align", [False, True])
@pytest.mark.parametrize("size", [(3, 4, 5), (7, 9, 11), (4, 5, 6), (1, 1, 1), (8, 2, 13)])
def test_interpolate_trilinear(size, align):
    x = randn(2, 3, 4, 5, 6)
    out = F.interpolate(x, size=size, mode="trilinear", align_corners=align).numpy()
    np.testing.assert_allclose(out, trilinear_ref(x, size, align), rtol=1e-5, atol=1e-5)


def test_interpolate_trilinear_sizes_gradient_and_errors():
    x = randn(1, 2, 3, 4, 5)
    out = F.interpolate(x, scale_factor=(1.5, 0.5, 2.0), mode="trilinear")
    np.testing.assert_allclose(out.numpy(), trilinear_ref(x, (4, 2, 10), False), atol=1e-5)
    # An int size is (n, 1, 1) for trilinear and (n, 1) for the 2-D modes: MegEngine 1.13's
    # reading (its own shapes).
    assert F.interpolate(x, size=4, mode="trilinear").shape == (1, 2, 4, 1, 1)
    assert F.interpolate(randn(1, 2, 4, 5), size=3, mode="nearest").shape == (1, 2, 3, 1)
    with pytest.raises(ValueError, match="interpolate: mode 'trilinear' needs a 5-dim input"):
        F.interpolate(randn(1, 2, 3, 4), size=(2, 2, 2), mode="trilinear")
    with pytest.raises(ValueError, match="interpolate: size needs 3 values"):
        F.interpolate(x, size=(2, 2), mode="trilinear")
    check_grad(lambda a: F.interpolate(a, size=(2, 5, 3), mode="trilinear"), randn(1, 1, 3, 2, 4))
    check_grad(
        lambda a: F.interpolate(a, size=(4, 3, 2), mode="trilinear", align_corners=True),
        randn(1, 2, 2, 3, 3),
    )


def test_interpolate_bicubic_keeps_constants_and_has_finite_difference_gradients():
    # weights of Keys' kernel sum to 1, and edges replicate: a constant image stays constant
    out = F.interpolate(np.full((1, 2, 3, 4), 0.75, "float32"), size=(7, 2), mode="bicubic")
    np.testing.assert_array_equal(out.numpy(), np.full((1, 2, 7, 2), 0.75, "float32"))
    # at the input's own size every sample falls on a pixel centre: the identity
    x = randn(1, 2, 3, 4)
    np.testing.assert_array_equal(F.interpolate(x, size=(3, 4), mode="bicubic").numpy(), x)
    check_grad(lambda a: F.interpolate(a, size=(5, 3), mode="bicubic"), randn(1, 2, 3, 4))


def test_conv_grads_grouped_dilated_1d_3d():
    check_grad(
        lambda x, w: F.conv2d(x, w, padding=(1, 0), dilation=(1, 2), groups=2),
        randn(1, 4, 4, 5),
        randn(2, 1, 2, 2, 2),
        wrt=(0, 1),
    )
    check_grad(
        lambda x, w, b: F.conv1d(x, w, b, stride=2),
        randn(2, 2, 7),
        randn(3, 2, 3),
        randn(1, 3, 1),
        wrt=(0, 1, 2),
    )
    check_grad(
        lambda x, w: F.conv3d(x, w, padding=1),
        randn(1, 1, 3, 3, 2),
        randn(2, 1, 2, 2, 2),
        wrt=(0, 1),
    )
    check_grad(
        lambda x, w: F.conv_transpose2d(x, w, stride=2, padding=1, output_padding=1),
        randn(1, 2, 3, 2),
        randn(2, 3, 3, 3),
        wrt=(0, 1),
    )


def test_batch_norm_training_under_grad_manager_updates_stats():
    x = mge.Parameter(randn(4, 2, 3))
    rm, rv = mge.Tensor(np.zeros(2, np.float32)), mge.Tensor(np.ones(2, np.float32))
    gm = GradManager().attach(x)
    with gm:
        out = F.batch_norm(x, rm, rv, training=True)
        gm.backward((out * mge.Tensor(randn(4, 2, 3))).sum())
    assert x.grad is not None and x.grad.shape == (4, 2, 3)
    # the gradient of a normalised output sums to zero over each channel
    np.testing.assert_allclose(x.grad.numpy().sum(axis=(0, 2)), 0, atol=1e-4)
    np.testing.assert_allclose(rm.numpy(), 0.1 * x.numpy().mean(axis=(0, 2)), rtol=1e-5, atol=1e-6)
