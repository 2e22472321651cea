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
    with pytest.raises(NotImplementedError):
        F.quantized.conv_transpose2d(xq, w)
