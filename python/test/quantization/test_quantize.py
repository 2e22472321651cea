"""quantize_qat and the QAT modules: every convertible float module becomes its QAT version and
computes what the float one does once fake quantization is off (BatchNorm folding included, in
train and eval), nested and disabled modules, custom mappings, the enable/disable switches,
reset_qconfig, apply_easy_quant."""

import numpy as np
import pytest

import megengine as mge
import megengine.module as M
import megengine.module.qat as QAT
from megengine.quantization import (
    apply_easy_quant,
    disable_fake_quant,
    disable_observer,
    ema_fakequant_qconfig,
    enable_fake_quant,
    passive_qconfig,
    propagate_qconfig,
    quantize,
    quantize_qat,
    reset_qconfig,
    tqt_qconfig,
)

RNG = np.random.RandomState(0)


def img(*shape):
    return mge.Tensor(RNG.randn(*shape).astype(np.float32))


CASES = [
    (lambda: M.Conv2d(3, 4, 3, padding=1, groups=1), (2, 3, 5, 5)),
    (lambda: M.ConvRelu2d(4, 4, 3, groups=2), (2, 4, 5, 5)),
    (lambda: M.ConvTranspose2d(3, 2, 3, stride=2), (2, 3, 4, 4)),
    (lambda: M.ConvTransposeRelu2d(3, 2, 2), (2, 3, 4, 4)),
    (lambda: M.ConvBn2d(3, 4, 3, padding=1), (4, 3, 5, 5)),
    (lambda: M.ConvBnRelu2d(4, 4, 3, groups=2, bias=False), (4, 4, 5, 5)),
    (lambda: M.ConvTransposeBn2d(3, 4, 3), (4, 3, 4, 4)),
    (lambda: M.ConvTransposeBnRelu2d(3, 4, 2), (4, 3, 4, 4)),
    (lambda: M.Linear(6, 5), (7, 6)),
    (lambda: M.LinearRelu(6, 5), (7, 6)),
    (lambda: M.LinearBn1d(6, 5), (8, 6)),
    (lambda: M.LinearBnRelu1d(6, 5, bias=False), (8, 6)),
    (lambda: M.BatchMatMulActivation(2, 6, 5, nonlinear_mode="relu"), (2, 6, 5)),
]


def _randomize_bn(m):
    for sub in m.modules():
        if isinstance(sub, M.BatchNorm1d | M.BatchNorm2d):
            n = sub.running_mean.shape
            sub.running_mean[...] = mge.Tensor(RNG.randn(*n).astype(np.float32))
            sub.running_var[...] = mge.Tensor(RNG.uniform(0.5, 2, n).astype(np.float32))
            sub.weight[...] = mge.Tensor(RNG.uniform(0.5, 2, sub.weight.shape).astype("f4"))
            sub.bias[...] = mge.Tensor(RNG.randn(*sub.bias.shape).astype(np.float32))


@pytest.mark.parametrize("training", [True, False])
@pytest.mark.parametrize("make, shape", CASES)
def test_qat_module_without_fake_quant_is_the_float_module(make, shape, training):
    float_mod = make()
    _randomize_bn(float_mod)
    x = img(*shape)
    qat = type(quantize_qat(M.Sequential(float_mod), inplace=False)[0])
    assert qat.__module__.startswith("megengine.module.qat")
    q = qat.from_float_module(float_mod)
    q.set_qconfig(ema_fakequant_qconfig)
    q.set_fake_quant(False)
    float_mod.train(training)
    q.train(training)
    want = float_mod(x).numpy()
    got = q(x).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_fake_quant_is_applied():
    lin = M.Linear(4, 3)
    q = QAT.Linear.from_float_module(lin)
    q.set_qconfig(ema_fakequant_qconfig)
    x = img(5, 4)
    y = q(x)
    scale = float(y.qparams.scale)
    steps = y.numpy() / scale
    np.testing.assert_allclose(steps, np.round(steps), atol=1e-3)
    assert y.qparams.dtype_meta.name == "qint8"


def test_quantize_qat_structure():
    class Block(M.Module):
        def __init__(self):
            super().__init__()
            self.convs = [M.Conv2d(1, 1, 1), M.ConvBn2d(1, 1, 1)]
            self.named = {"fc": M.Linear(2, 2)}
            self.keep = M.Linear(2, 2)
            self.keep.disable_quantize()
            self.relu = M.ReLU()

    net = M.Sequential(M.QuantStub(), Block(), M.DequantStub())
    copy = quantize_qat(net, inplace=False)
    assert type(net[0]) is M.QuantStub
    assert type(copy[0]) is QAT.QuantStub and type(copy[2]) is QAT.DequantStub
    blk = copy[1]
    assert [type(c) for c in blk.convs] == [QAT.Conv2d, QAT.ConvBn2d]
    assert type(blk.named["fc"]) is QAT.Linear
    assert type(blk.keep) is M.Linear and type(blk.relu) is M.ReLU
    # the fused module is converted as a whole: its conv stays a float Conv2d inside
    assert type(blk.convs[1].conv) is M.Conv2d
    assert blk.convs[1].weight_observer is not None

    class MyLinear(M.Linear):
        pass

    class MyQAT(QAT.Linear):
        pass

    out = quantize_qat(M.Sequential(MyLinear(2, 2)), mapping={MyLinear: MyQAT})
    assert type(out[0]) is MyQAT


def test_switches_and_reset():
    net = quantize_qat(M.Sequential(M.QuantStub(), M.Linear(4, 3)))
    disable_observer(net)
    disable_fake_quant(net)
    x = img(5, 4)
    assert net[0].act_observer.enabled is False
    np.testing.assert_array_equal(
        net(x).numpy(), net[1].calc_linear(x, net[1].weight, net[1].bias).numpy()
    )
    enable_fake_quant(net)
    assert net[1].weight_fake_quant.enabled
    propagate_qconfig(net, tqt_qconfig)
    assert type(net[1].act_fake_quant).__name__ == "TQT" and net[1].act_observer is None

    net = quantize_qat(M.Sequential(M.QuantStub(), M.Linear(4, 3)))
    net(x)
    scale = float(net[1].get_activation_qparams().scale)
    reset_qconfig(net, tqt_qconfig)
    np.testing.assert_allclose(2 ** float(net[1].act_fake_quant.scale), scale, rtol=1e-5)
    # the TQT scale is a power of two: quantize gives the dtype of that scale
    q = quantize(net)
    assert q[1].output_dtype.metadata["mgb_dtype"]["name"] == "QuantizedS8"


def test_apply_easy_quant():
    net = quantize_qat(M.Sequential(M.QuantStub(), M.Linear(8, 4), M.DequantStub()))
    x = img(16, 8)
    net(x)
    reset_qconfig(net, passive_qconfig)
    before = float(net[1].weight_observer.scale)
    apply_easy_quant(net, x, 0.8, 1.2, 9)
    after = float(net[1].weight_observer.scale)
    assert 0.8 * before - 1e-7 <= after <= 1.2 * before + 1e-7
    # the scale kept is the best of the candidates by cosine similarity
    assert np.any(np.isclose(after, np.linspace(0.8 * before, 1.2 * before, 9), rtol=1e-5))


def test_quantable_module_names_are_megengine_113s():
    # MegEngine 1.13's private _get_quantable_module_names (its own tests and some conversion
    # scripts import it) returns exactly this list (printed by MegEngine 1.13), the modules that
    # quantize_qat and quantize convert; each name is a float, a QAT and a quantized module.
    from megengine.module import quantized as Q
    from megengine.quantization.quantize import _get_quantable_module_names

    names = _get_quantable_module_names()
    assert sorted(names) == [
        "BatchMatMulActivation", "Concat", "Conv2d", "ConvBn2d", "ConvBnRelu2d", "ConvRelu2d",
        "ConvTranspose2d", "ConvTransposeBn2d", "ConvTransposeBnRelu2d", "ConvTransposeRelu2d",
        "DequantStub", "Elemwise", "Linear", "LinearBn1d", "LinearBnRelu1d", "LinearRelu",
        "QuantStub",
    ]  # fmt: skip
    for name in names:
        assert issubclass(getattr(QAT, name), QAT.QATModule)
        assert issubclass(getattr(Q, name), Q.QuantizedModule)
        assert issubclass(getattr(M, name), M.Module)


def test_qat_repr_lists_submodules_as_megengine_does():
    class Net(M.Module):
        def __init__(self):
            super().__init__()
            self.conv_bn = M.ConvBnRelu2d(3, 3, 3)
            self.linear = M.Linear(3, 3)
            self.head = None  # set to a Module later: listed after the others

        def forward(self, x):
            return x

    net = Net()
    net.head = M.Identity()
    quantize_qat(net, qconfig=ema_fakequant_qconfig)
    # MegEngine 1.13 prints this (its test_repr; the observers come after conv and bn)
    assert repr(net) == (
        "Net(\n"
        "  (conv_bn): QAT.ConvBnRelu2d(\n"
        "    (conv): Conv2d(3, 3, kernel_size=(3, 3))\n"
        "    (bn): BatchNorm2d(3, eps=1e-05, momentum=0.9, affine=True, track_running_stats=True)\n"
        "    (act_observer): ExponentialMovingAverageObserver()\n"
        "    (act_fake_quant): FakeQuantize()\n"
        "    (weight_observer): MinMaxObserver()\n"
        "    (weight_fake_quant): FakeQuantize()\n"
        "  )\n"
        "  (linear): QAT.Linear(\n"
        "    in_features=3, out_features=3, bias=True\n"
        "    (act_observer): ExponentialMovingAverageObserver()\n"
        "    (act_fake_quant): FakeQuantize()\n"
        "    (weight_observer): MinMaxObserver()\n"
        "    (weight_fake_quant): FakeQuantize()\n"
        "  )\n"
        "  (head): Identity()\n"
        ")"
    )
    # the names, parameters and state are ordered by name whatever the assignment order
    assert [k for k, _ in net.conv_bn.named_children()] == [
        "act_fake_quant",
        "act_observer",
        "bn",
        "conv",
        "weight_fake_quant",
        "weight_observer",
    ]
