"""``megengine.module.quantized`` and ``quantize``: every quantized module gives its QAT module's
fake-quantized float output within one output quantisation step (the QAT module rounds a float
sum, the quantized one the exact integer sum: they differ only where the float sum sits within
float error of a rounding tie); ``quantize`` converts nested modules and keeps float ones."""

import numpy as np
import pytest

import megengine as mge
import megengine.functional as F
import megengine.module as M
from megengine.core.tensor import dtype as D
from megengine.core.tensor.array_method import device_name, kept_scalar
from megengine.module import quantized as Q
from megengine.quantization import quantize, quantize_qat


class Wrap(M.Module):
    def __init__(self, body, n_inputs=1, concat=False):
        super().__init__()
        self.quants = [M.QuantStub() for _ in range(n_inputs)]
        self.body = body
        self.dequant = M.DequantStub()
        self.concat = concat

    def forward(self, *xs):
        qs = [q(x) for q, x in zip(self.quants, xs)]
        y = self.body(qs, axis=1) if self.concat else self.body(*qs)
        return self.dequant(y)


def _calibrate_and_compare(net, inputs, out_step_of):
    rng = np.random.RandomState(3)
    net = quantize_qat(net)
    net.train()
    for _ in range(2):
        net(*[mge.Tensor(rng.randn(*x.shape).astype(np.float32)) for x in inputs])
    net.eval()
    want = net(*[mge.Tensor(x) for x in inputs]).numpy()
    qnet = quantize(net, inplace=False)
    qnet.eval()
    got = qnet(*[mge.Tensor(x) for x in inputs]).numpy()
    step = out_step_of(qnet)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, atol=step * 1.001, rtol=0)
    # most elements agree exactly
    assert np.mean(np.abs(got - want) < step * 0.5) > 0.9
    return qnet


def _body_step(qnet):
    return D.get_scale(qnet.body.output_dtype)


CASES = {
    "Conv2d": (lambda: M.Conv2d(3, 4, 3, padding=1, stride=2), [(2, 3, 7, 7)]),
    "Conv2d_groups": (lambda: M.Conv2d(4, 4, 3, padding=1, groups=2), [(2, 4, 5, 5)]),
    "ConvRelu2d": (lambda: M.ConvRelu2d(3, 4, 3, dilation=2), [(2, 3, 7, 7)]),
    "ConvBn2d": (lambda: M.ConvBn2d(3, 4, 3, padding=1), [(2, 3, 5, 5)]),
    "ConvBnRelu2d": (lambda: M.ConvBnRelu2d(3, 4, 1), [(2, 3, 5, 5)]),
    "Linear": (lambda: M.Linear(6, 5), [(4, 6)]),
    "LinearRelu": (lambda: M.LinearRelu(6, 5), [(4, 6)]),
    "LinearBn1d": (lambda: M.LinearBn1d(6, 5), [(4, 6)]),
    "LinearBnRelu1d": (lambda: M.LinearBnRelu1d(6, 5), [(4, 6)]),
    "Elemwise_add": (lambda: M.Elemwise("add"), [(3, 4), (3, 4)]),
    "Elemwise_fuse_add_relu": (lambda: M.Elemwise("fuse_add_relu"), [(3, 4), (3, 4)]),
    "Elemwise_mul": (lambda: M.Elemwise("mul"), [(3, 4), (3, 4)]),
    # MegEngine adds its bias along the last axis: without one, N and out_features may differ
    "BatchMatMulActivation": (lambda: M.BatchMatMulActivation(2, 3, 4, bias=False), [(2, 3, 5)]),
    # MegEngine's quantized transposed convolution takes no bias
    "ConvTranspose2d": (
        lambda: M.ConvTranspose2d(3, 2, 3, stride=2, padding=1, output_padding=1, bias=False),
        [(2, 3, 4, 5)],
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_quantized_module_matches_qat(name):
    make, shapes = CASES[name]
    rng = np.random.RandomState(11)
    inputs = [rng.randn(*s).astype(np.float32) for s in shapes]
    qnet = _calibrate_and_compare(Wrap(make(), len(shapes)), inputs, _body_step)
    body = qnet.body
    assert type(body).__name__ == name.split("_")[0] and isinstance(body, Q.QuantizedModule)
    if getattr(body, "weight", None) is not None:
        assert D.get_dtype_bit(body.weight.dtype.name) == 8 and D.is_quantize(body.weight.dtype)


def test_quantized_concat_matches_qat():
    rng = np.random.RandomState(5)
    inputs = [rng.randn(2, 3).astype(np.float32), 3 * rng.randn(2, 2).astype(np.float32)]
    _calibrate_and_compare(Wrap(M.Concat(), 2, concat=True), inputs, _body_step)


def test_quantize_converts_nested_modules_and_keeps_float_ones():
    class Inner(M.Module):
        def __init__(self):
            super().__init__()
            self.conv = M.ConvBnRelu2d(2, 3, 3, padding=1)
            self.pool = M.MaxPool2d(2)

        def forward(self, x):
            return self.pool(self.conv(x))

    class Outer(M.Module):
        def __init__(self):
            super().__init__()
            self.quant = M.QuantStub()
            self.blocks = [Inner(), Inner()]
            self.blocks[1].conv = M.ConvBnRelu2d(3, 3, 3, padding=1)
            self.heads = {"fc": M.Linear(3, 2)}
            self.dequant = M.DequantStub()

        def forward(self, x):
            y = self.blocks[1](self.blocks[0](self.quant(x)))
            return self.dequant(self.heads["fc"](F.flatten(y, 1)))

    rng = np.random.RandomState(2)
    x = rng.randn(2, 2, 4, 4).astype(np.float32)
    net = quantize_qat(Outer())
    net(mge.Tensor(x))
    net.eval()
    want = net(mge.Tensor(x)).numpy()
    q = quantize(net, inplace=False)
    q.eval()
    assert isinstance(q.blocks[0].conv, Q.ConvBnRelu2d) and isinstance(q.heads["fc"], Q.Linear)
    assert type(q.blocks[0].pool) is M.MaxPool2d  # float modules stay
    assert not isinstance(net.blocks[0].conv, Q.QuantizedModule)  # inplace=False
    got = q(mge.Tensor(x)).numpy()
    step = D.get_scale(q.heads["fc"].output_dtype)
    np.testing.assert_allclose(got, want, atol=step * 1.001, rtol=0)
    q.train()
    with pytest.raises(ValueError, match="inference"):
        q(mge.Tensor(x))


def test_quantized_conv_h_swish_and_errors():
    x = mge.Tensor(np.linspace(-4, 4, 8, dtype=np.float32).reshape(1, 2, 2, 2))
    xq = x.astype(D.qint8(0.05))
    w = mge.Tensor(np.ones((1, 2, 1, 1), np.float32)).astype(D.qint8(0.5))
    out = F.quantized.conv_bias_activation(
        xq, w, None, D.qint8(0.1), nonlinear_mode="h_swish"
    ).numpy()
    s = xq.astype("float32").numpy().sum(axis=1)  # the weight's values are 1
    h = s * np.clip(s + 3, 0, 6) / 6
    want = np.clip(np.sign(h / 0.1) * np.floor(np.abs(h / 0.1) + 0.5), -128, 127)
    np.testing.assert_array_equal(out.reshape(-1), want.reshape(-1))
    with pytest.raises(TypeError, match="quantized"):
        F.quantized.conv_bias_activation(x, w, None, D.qint8(0.1))
    with pytest.raises(ValueError, match="nonlinear_mode"):
        F.quantized.conv_bias_activation(xq, w, None, D.qint8(0.1), nonlinear_mode="tanh")
    wt = mge.Tensor(np.ones((2, 1, 1, 1), np.float32)).astype(D.qint8(0.5))
    with pytest.raises(NotImplementedError, match="bias"):
        F.quantized.conv_transpose2d(xq, wt, bias=mge.Tensor(np.zeros((1, 1, 1, 1), np.float32)))
    with pytest.raises(NotImplementedError, match="group"):
        F.quantized.conv_transpose2d(xq, wt, groups=2)
    with pytest.raises(TypeError, match="quantized"):
        F.quantized.conv_transpose2d(x, wt)
    with pytest.raises(ValueError, match="conv_mode"):
        F.quantized.conv_transpose2d(xq, wt, conv_mode="convolution")


def _naive_conv_transpose2d(x, w, stride, padding, dilation, output_padding):
    # scatter form: each input element adds its weighted kernel to the output window
    n, _, h, wd = x.shape
    _, oc, kh, kw = w.shape
    (sh, sw), (ph, pw), (dh, dw), (oph, opw) = stride, padding, dilation, output_padding
    full_h = (h - 1) * sh + dh * (kh - 1) + 1 + oph
    full_w = (wd - 1) * sw + dw * (kw - 1) + 1 + opw
    out = np.zeros((n, oc, full_h, full_w), np.int64)
    for i in range(h):
        for j in range(wd):
            for a in range(kh):
                for b in range(kw):
                    out[:, :, i * sh + a * dh, j * sw + b * dw] += np.einsum(
                        "nc,co->no", x[:, :, i, j], w[:, :, a, b]
                    )
    return out[:, :, ph : full_h - ph, pw : full_w - pw]


@pytest.mark.parametrize(
    "xs, ws, stride, padding, dilation, output_padding",
    [
        ((1, 4, 5, 5), (4, 3, 3, 3), (1, 1), (0, 0), (1, 1), (0, 0)),
        ((2, 16, 7, 6), (16, 8, 4, 4), (2, 2), (1, 1), (1, 1), (1, 0)),
        ((1, 3, 4, 4), (3, 2, 2, 3), (2, 1), (0, 1), (1, 2), (0, 0)),
    ],
)
def test_quantized_conv_transpose2d_sums_exactly(xs, ws, stride, padding, dilation, output_padding):
    rng = np.random.RandomState(3)
    xq = mge.Tensor(rng.uniform(-1, 1, xs).astype(np.float32)).astype(D.qint8(0.03))
    wq = mge.Tensor(rng.uniform(-1, 1, ws).astype(np.float32)).astype(D.qint8(0.02))
    acc = F.quantized.conv_transpose2d(
        xq, wq, stride=stride, padding=padding, output_padding=output_padding, dilation=dilation
    )
    want = _naive_conv_transpose2d(
        xq.numpy().astype(np.int64),
        wq.numpy().astype(np.int64),
        stride,
        padding,
        dilation,
        output_padding,
    )
    assert acc.dtype.metadata["mgb_dtype"]["name"] == "QuantizedS32"
    np.testing.assert_allclose(D.get_scale(acc.dtype), 0.03 * 0.02, rtol=1e-6)
    np.testing.assert_array_equal(acc.numpy(), want)
    out = F.quantized.conv_transpose2d(
        xq,
        wq,
        dtype=D.qint8(0.09),
        stride=stride,
        padding=padding,
        output_padding=output_padding,
        dilation=dilation,
    )
    real = want * (np.float32(0.03) * np.float32(0.02)) / np.float32(0.09)
    rounded = np.clip(np.sign(real) * np.floor(np.abs(real) + 0.5), -128, 127)
    # the requantisation is one rounding of the exact sum (a tie may fall either way)
    assert np.abs(out.numpy() - rounded).max() <= 1
    assert np.mean(out.numpy() == rounded) > 0.99


def test_quantized_conv_transpose2d_matches_megengine():
    x = mge.Tensor(np.arange(8, dtype=np.float32).reshape(1, 2, 2, 2) - 4).astype(D.qint8(0.5))
    w = mge.Tensor(np.array([1, -2, 3, 1, 0, -1, 2, 2], np.float32).reshape(2, 1, 2, 2))
    w = w.astype(D.qint8(0.25))
    out = F.quantized.conv_transpose2d(x, w, dtype=D.qint8(0.5), stride=2)
    # MegEngine 1.13's output for these inputs
    want = [[-8, 16, -6, 10], [-24, -8, -14, -2], [-4, 4, -2, -2], [-4, 4, 6, 10]]
    np.testing.assert_array_equal(out.numpy()[0, 0], want)


def test_quantized_conv_transpose2d_is_exact_under_autocast():
    rng = np.random.RandomState(4)
    xq = mge.Tensor(rng.uniform(-1, 1, (1, 64, 3, 3)).astype(np.float32)).astype(D.qint8(0.01))
    wq = mge.Tensor(rng.uniform(-1, 1, (64, 2, 3, 3)).astype(np.float32)).astype(D.qint8(0.01))
    want = F.quantized.conv_transpose2d(xq, wq).numpy()
    with mge.amp.autocast():
        got = F.quantized.conv_transpose2d(xq, wq).numpy()
        assert mge.amp.enabled  # the float kernel's autocast pause ends with the call
    np.testing.assert_array_equal(got, want)
    naive = _naive_conv_transpose2d(
        xq.numpy().astype(np.int64), wq.numpy().astype(np.int64), (1, 1), (0, 0), (1, 1), (0, 0)
    )
    np.testing.assert_array_equal(want, naive)


def test_conv_bias_activation_kept_absent_bias_and_operand_checks():
    # ConvBias's absent bias and z are one kept 0-d int32 per device (an operand only): every call,
    # traced or not, sums exactly what the integer reference gives, and none returns the zero.
    import megengine.functional.quantized as FQ
    from megengine.jit import trace

    rng = np.random.RandomState(5)
    xv = rng.randint(-20, 20, (2, 3, 4, 4)).astype(np.float32)
    wv = rng.randint(-3, 4, (4, 3, 3, 3)).astype(np.float32)
    xq, wq = mge.Tensor(xv * 0.5).astype(D.qint8(0.5)), mge.Tensor(wv).astype(D.qint8(1.0))
    want = sum(
        xv[:, c, dy : dy + 2, dx : dx + 2][:, None] * wv[None, :, c, dy, dx, None, None]
        for c in range(3)
        for dy in range(3)
        for dx in range(3)
    )
    outs = [FQ.conv_bias_activation(xq, wq, None) for _ in range(3)]
    for symbolic in (False, True):

        @trace(symbolic=symbolic)
        def f(a, b):
            return FQ.conv_bias_activation(a, b, None)

        outs += [f(xq, wq) for _ in range(2)]
    kept = [kept_scalar(0, "int32", device_name(xq))]
    assert kept and all(k.numpy().tolist() == 0 and k.ndim == 0 for k in kept)
    for out in outs:
        assert out.dtype.metadata["mgb_dtype"]["name"] == "QuantizedS32"
        assert all(out is not k for k in kept)
        np.testing.assert_array_equal(out.astype("float32").numpy(), want * 0.5)
    # the operands' checks read the dtype name first: quantized inputs and biases (qint32 kept,
    # float quantized to inp scale x weight scale) as before, anything else refused
    b = rng.randn(1, 4, 1, 1).astype(np.float32)
    got = FQ.conv_bias_activation(xq, wq, mge.Tensor(b)).astype("float32").numpy()
    bq = mge.Tensor(b).astype(D.qint32(0.5)).astype("float32").numpy()
    np.testing.assert_array_equal(got, want * 0.5 + bq)
    for bad in (xq.astype("float32"), xq.astype("int8")):
        with pytest.raises(TypeError, match="inp must be a quantized tensor"):
            FQ.conv_bias_activation(bad, wq, None)
        with pytest.raises(TypeError, match="weight must be a quantized tensor"):
            FQ.conv_bias_activation(xq, bad, None)
