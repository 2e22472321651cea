"""The fused and marker modules MegEngine's quantization flow builds on (ConvTransposeRelu2d,
ConvTransposeBn2d/BnRelu2d, LinearRelu, LinearBn1d/BnRelu1d, QuantStub, DequantStub),
ConvTranspose3d, and Module.disable_quantize / replace_param, against NumPy and against the
plain modules they are made of; parameter names as MegEngine's checkpoints hold them."""

import numpy as np
import pytest
from test_layers import np_conv_transpose2d, np_norm

import megengine as mge
import megengine.functional as F
import megengine.module as M
from megengine import Parameter

rng = np.random.default_rng(5)


def _rand(*shape):
    return rng.normal(size=shape).astype(np.float32)


def test_conv_transpose_relu_and_bn_modules():
    x = _rand(4, 3, 5, 5)
    m = M.ConvTransposeRelu2d(3, 2, 3, stride=2, padding=1, output_padding=1)
    conv = np_conv_transpose2d(x, m.weight.numpy(), m.bias.numpy(), (2, 2), (1, 1), (1, 1), (1, 1))
    np.testing.assert_allclose(m(mge.Tensor(x)).numpy(), np.maximum(conv, 0), rtol=1e-4, atol=1e-5)
    w = _rand(3, 2, 3, 3)
    got = m.calc_conv_transpose2d(mge.Tensor(x), mge.Tensor(w), None).numpy()
    want = np_conv_transpose2d(x, w, None, (2, 2), (1, 1), (1, 1), (1, 1))
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    for cls, relu in ((M.ConvTransposeBn2d, False), (M.ConvTransposeBnRelu2d, True)):
        m = cls(3, 2, 2, stride=2)
        assert sorted(n for n, _ in m.named_children()) == ["bn", "conv_transpose2d"]
        c = m.conv_transpose2d
        conv = np_conv_transpose2d(
            x, c.weight.numpy(), c.bias.numpy(), (2, 2), (0, 0), (0, 0), (1, 1)
        )
        want = np_norm(conv, (0, 2, 3), 1e-5)
        want = np.maximum(want, 0) if relu else want
        np.testing.assert_allclose(m(mge.Tensor(x)).numpy(), want, rtol=1e-3, atol=1e-4)
    # MegEngine 1.13's parameter order
    m = M.ConvTransposeBn2d(1, 2, 3, 2, 1, 1, 1, 1, False, "cross_correlation", "default", 1e-3)
    c = m.conv_transpose2d
    assert (c.stride, c.padding, c.output_padding, c.bias, m.bn.eps) == (
        (2, 2),
        (1, 1),
        (1, 1),
        None,
        1e-3,
    )


def test_conv_transpose3d_module():
    m = M.ConvTranspose3d(4, 6, (2, 3, 1), stride=2, padding=(0, 1, 0), groups=2)
    assert m.weight.shape == (2, 2, 3, 2, 3, 1) and m.bias.shape == (1, 6, 1, 1, 1)
    x = _rand(1, 4, 2, 3, 2)
    want = F.conv_transpose3d(x, m.weight, m.bias, 2, (0, 1, 0), 0, 1, 2).numpy()
    np.testing.assert_allclose(m(mge.Tensor(x)).numpy(), want, rtol=1e-6)
    m = M.ConvTranspose3d(2, 3, 2, 1, 0, 0, 1, 1, False)  # MegEngine's positional order
    assert m.bias is None and m.weight.shape == (2, 3, 2, 2, 2)
    with pytest.raises(ValueError, match="not divisible by groups"):
        M.ConvTranspose3d(3, 4, 2, groups=2)


def test_linear_relu_and_bn_modules():
    x = _rand(8, 3)
    m = M.LinearRelu(3, 4)
    lin = x @ m.weight.numpy().T + m.bias.numpy()
    np.testing.assert_allclose(m(mge.Tensor(x)).numpy(), np.maximum(lin, 0), rtol=1e-5, atol=1e-6)
    w = _rand(2, 3)
    np.testing.assert_allclose(
        m.calc_linear(mge.Tensor(x), mge.Tensor(w), None).numpy(), x @ w.T, rtol=1e-5, atol=1e-6
    )
    for cls, relu in ((M.LinearBn1d, False), (M.LinearBnRelu1d, True)):
        m = cls(3, 4)
        # MegEngine's checkpoints hold the module's own zero bias beside the Linear's
        assert sorted(m.state_dict()) == [
            "bias",
            "bn.bias",
            "bn.running_mean",
            "bn.running_var",
            "bn.weight",
            "linear.bias",
            "linear.weight",
        ]
        np.testing.assert_array_equal(m.bias.numpy(), np.zeros(4, np.float32))
        lin = x @ m.linear.weight.numpy().T + m.linear.bias.numpy()
        want = np_norm(lin, (0,), 1e-5)
        want = np.maximum(want, 0) if relu else want
        np.testing.assert_allclose(m(mge.Tensor(x)).numpy(), want, rtol=1e-3, atol=1e-4)
    m = M.LinearBn1d(3, 4, False, "default", 1e-3, 0.5, False)
    assert (m.bias, m.linear.bias, m.bn.eps, m.bn.momentum, m.bn.affine) == (
        None,
        None,
        1e-3,
        0.5,
        False,
    )


def test_quant_stubs_pass_their_input_through():
    x = mge.Tensor(_rand(2, 3))
    for cls in (M.QuantStub, M.DequantStub):
        assert cls()(x) is x
        assert cls("stub").name == "stub"


def test_disable_quantize_marks_every_sub_module():
    net = M.Sequential(M.Conv2d(1, 2, 3), M.Sequential(M.ReLU(), M.Linear(2, 2)))
    assert not any(m.quantize_disabled for m in net.modules())
    assert net.disable_quantize() is net
    assert all(m.quantize_disabled for m in net.modules())
    net.disable_quantize(False)
    assert not any(m.quantize_disabled for m in net.modules())


def test_replace_param_numbers_parameters_in_attribute_order():
    class Net(M.Module):
        def __init__(self):
            super().__init__()
            self.b_fc = M.Linear(2, 3)  # bias, weight: positions 1, 2
            self.a_scale = Parameter(np.ones(3, np.float32))  # sorted first: position 0
            self.c_conv = M.Conv2d(1, 1, 1)  # bias, weight: 3, 4

    net = Net()
    new_w = Parameter(np.full((3, 2), 7.0, np.float32))
    new_cb = Parameter(np.full((1, 1, 1, 1), 5.0, np.float32))
    assert net.replace_param({2: new_w, 3: new_cb}, 0) == 5
    assert net.b_fc.weight is new_w and net.c_conv.bias is new_cb
    assert [p is new_w or p is new_cb for p in net.parameters()].count(True) == 2
    with pytest.raises(ValueError, match="shape"):
        net.replace_param({0: Parameter(np.ones(4, np.float32))}, 0)
    # a Parameter shared by two attributes is numbered once
    net.d_alias = net.a_scale
    assert net.replace_param({}, 10) == 5


def test_get_pad_witdth():
    assert M.Conv1d(1, 1, 3, padding=2).get_pad_witdth() == ((0, 0), (0, 0), (2, 2))
    assert M.Conv2d(1, 1, 3, padding=(1, 0)).get_pad_witdth() == ((0, 0), (0, 0), (1, 1), (0, 0))
    m = M.Conv2d(1, 1, 3, padding=1, padding_mode="reflect")
    x = _rand(1, 1, 4, 4)
    want = F.conv2d(np.pad(x, m.get_pad_witdth(), mode="reflect"), m.weight, m.bias)
    np.testing.assert_allclose(m(mge.Tensor(x)).numpy(), want.numpy(), rtol=1e-6)


def test_batch_matmul_activation():
    m = M.BatchMatMulActivation(3, 4, 5, nonlinear_mode="RELU")
    assert m.weight.shape == (3, 5, 4) and m.bias.shape == (5,)
    m.bias._reset(mge.Tensor(_rand(5)))
    x = _rand(3, 4, 5)
    want = np.maximum(np.einsum("boi,bik->bok", m.weight.numpy(), x) + m.bias.numpy(), 0)
    np.testing.assert_allclose(m(mge.Tensor(x)).numpy(), want, rtol=1e-5, atol=1e-6)
    m = M.BatchMatMulActivation(2, 3, 4, False)
    x = _rand(2, 3, 1)
    want = np.einsum("boi,bik->bok", m.weight.numpy(), x)
    np.testing.assert_allclose(m(mge.Tensor(x)).numpy(), want, rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="nonlinear_mode"):
        M.BatchMatMulActivation(2, 3, 4, nonlinear_mode="tanh")
