"""amp.convert_tensor_format / convert_module_format and Tensor.format: channels-last storage
(MegEngine 1.13's NHWC format as a real layout). The converted tensors keep their NCHW shape and
values; ops that follow their input's layout keep the format, and results equal the unconverted
ones."""

import numpy as np
import pytest

import megengine as mge
import megengine.functional as F
import megengine.module as M
from megengine import amp
from megengine.autodiff import GradManager
from megengine.optimizer import SGD


def _rand(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype("float32")


def test_tensor_in_place_and_copy():
    x = mge.Tensor(np.arange(24, dtype="float32").reshape(1, 2, 3, 4))
    y = amp.convert_tensor_format(x, inplace=False)
    assert (y.format, x.format, y.shape) == ("nhwc", "default", (1, 2, 3, 4))
    np.testing.assert_array_equal(y.numpy(), x.numpy())
    assert amp.convert_tensor_format(x) is x and x.format == "nhwc"
    np.testing.assert_array_equal(x.numpy(), np.arange(24, dtype="float32").reshape(1, 2, 3, 4))
    assert amp.convert_tensor_format(x, inplace=False) is x  # already NHWC
    five = mge.Tensor(_rand(1, 2, 3, 4, 5))
    assert amp.convert_tensor_format(five).format == "nhwc"


def test_the_layout_is_channels_last():
    x = amp.convert_tensor_format(mge.Tensor(np.arange(24, dtype="float32").reshape(1, 2, 3, 4)))
    # channel stride 1: the two channels of pixel (0, 0) are neighbours in memory
    assert x._layout() == "{1(24),2(1),3(8),4(2)} float32"
    # a view in NHWC order is the storage as it is
    np.testing.assert_array_equal(
        x.transpose(0, 2, 3, 1).numpy(), np.arange(24).reshape(1, 2, 3, 4).transpose(0, 2, 3, 1)
    )


def test_other_ranks_are_left_alone():
    for shape in ((3,), (2, 3), (1, 2, 3)):
        t = mge.Tensor(np.zeros(shape, "float32"))
        assert amp.convert_tensor_format(t, inplace=False) is t and t.format == "default"
    with pytest.raises(TypeError, match="Tensor"):
        amp.convert_tensor_format(np.zeros((1, 2, 3, 4)))


def test_copy_keeps_the_gradient_path():
    x = mge.Parameter(np.arange(8, dtype="float32").reshape(1, 2, 2, 2))
    gm = GradManager().attach([x])
    with gm:
        y = amp.convert_tensor_format(x, inplace=False)
        gm.backward((y * y).sum())
    np.testing.assert_array_equal(x.grad.numpy(), 2 * np.arange(8).reshape(1, 2, 2, 2))


def test_ops_keep_the_format_as_megengine():
    x = amp.convert_tensor_format(mge.Tensor(_rand(2, 3, 6, 6)))
    conv = amp.convert_module_format(M.Conv2d(3, 4, 3, padding=1))
    y = conv(x)
    r = F.relu(y)
    # MegEngine 1.13 gives nhwc for all of these...
    for t in (y, r, r + r, r * 2, F.max_pool2d(r, 2), r.astype("float16")):
        assert t.format == "nhwc"
    # ...and default for these
    for t in (r.reshape(2, -1), r.flatten(1), r.mean(axis=1), F.transpose(r, (0, 2, 3, 1))):
        assert t.format == "default"
    plain = M.Conv2d(3, 4, 3, padding=1)
    plain.load_state_dict(conv.state_dict())
    want = F.relu(plain(mge.Tensor(x.numpy()))).numpy()
    np.testing.assert_allclose(r.numpy(), want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(r.reshape(2, -1).numpy(), want.reshape(2, -1), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(r[:, 1:3, ::2].numpy(), want[:, 1:3, ::2], rtol=1e-5, atol=1e-5)
    # a channels-last operand with a row-major one of the same shape: nhwc (as MegEngine)
    mixed = mge.Tensor(want) + r
    assert mixed.format == "nhwc"
    np.testing.assert_allclose(mixed.numpy(), 2 * want, rtol=1e-5, atol=1e-5)


def test_module_converts_4d_and_5d_tensors_only_and_computes_the_same():
    def net():
        np.random.seed(0)
        return M.Sequential(M.Conv2d(2, 3, 3, padding=1), M.BatchNorm2d(3))

    seq = net()
    copy = amp.convert_module_format(seq, inplace=False)
    assert copy is not seq
    # MegEngine 1.13 marks these, all 4-D: conv weight and bias, BatchNorm's four
    assert {n: t.format for n, t in copy.named_tensors()} == {
        "0.bias": "nhwc",
        "0.weight": "nhwc",
        "1.bias": "nhwc",
        "1.running_mean": "nhwc",
        "1.running_var": "nhwc",
        "1.weight": "nhwc",
    }
    assert all(t.format == "default" for _, t in seq.named_tensors())
    x = mge.Tensor(_rand(2, 2, 5, 5, seed=1))
    xn = amp.convert_tensor_format(x, inplace=False)
    out = copy(xn)
    assert out.format == "nhwc"
    np.testing.assert_allclose(out.numpy(), seq(x).numpy(), rtol=1e-5, atol=1e-6)
    assert amp.convert_module_format(seq) is seq and seq[0].weight.format == "nhwc"
    lin = amp.convert_module_format(M.Linear(3, 2))
    assert lin.weight.format == "default"  # 2-D
    with pytest.raises(TypeError, match="Module"):
        amp.convert_module_format(F.relu)


def _net():
    return M.Sequential(
        M.Conv2d(3, 8, 3, padding=1), M.BatchNorm2d(8), M.ReLU(), M.Conv2d(8, 8, 3, padding=1)
    )


def _train(net, convert, steps=3):
    x = mge.Tensor(_rand(4, 3, 8, 8, seed=2))
    if convert:
        amp.convert_module_format(net)
        x = amp.convert_tensor_format(x)
    gm = GradManager().attach(net.parameters())
    opt = SGD(net.parameters(), lr=0.1, momentum=0.9)
    losses = []
    for _ in range(steps):
        with gm:
            y = net(x)
            loss = (F.relu(y) + y).mean()  # a residual-style add
            gm.backward(loss)
        opt.step().clear_grad()
        losses.append(loss.item())
    return net, losses


def test_training_matches_the_default_format():
    ref_net = _net()
    net = _net()
    net.load_state_dict(ref_net.state_dict())
    ref_net, ref = _train(ref_net, False)
    net, got = _train(net, True)
    np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-5)
    for (name, a), (_, b) in zip(net.named_tensors(), ref_net.named_tensors()):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-4, atol=1e-5, err_msg=name)
    # the optimizer keeps the weights channels-last
    assert net[0].weight.format == "nhwc" and net[3].weight.format == "nhwc"


def test_save_and_load_round_trip(tmp_path):
    net = amp.convert_module_format(M.Conv2d(2, 3, 3))
    path = tmp_path / "conv.mge"
    mge.save(net.state_dict(), path)
    state = mge.load(path)
    np.testing.assert_array_equal(state["weight"], net.weight.numpy())
    fresh = M.Conv2d(2, 3, 3)
    fresh.load_state_dict(state)
    np.testing.assert_array_equal(fresh.weight.numpy(), net.weight.numpy())
    x = mge.Tensor(_rand(1, 2, 5, 5))
    np.testing.assert_allclose(fresh(x).numpy(), net(x).numpy(), rtol=1e-6)
    # loading into a converted module keeps its layout
    other = amp.convert_module_format(M.Conv2d(2, 3, 3))
    other.load_state_dict(state)
    assert other.weight.format == "nhwc"
    np.testing.assert_array_equal(other.weight.numpy(), net.weight.numpy())


def test_autograd_with_mixed_layouts():
    rng = np.random.default_rng(3)
    w_np = rng.standard_normal((4, 3, 3, 3)).astype("float32")
    x_np, z_np = _rand(2, 3, 6, 6, seed=4), _rand(2, 4, 6, 6, seed=5)

    def grads(x_fmt, z_fmt):
        x = mge.Parameter(x_np, format=x_fmt)
        z = mge.Parameter(z_np, format=z_fmt)
        w = mge.Parameter(w_np)
        gm = GradManager().attach([x, z, w])
        with gm:
            y = F.relu(F.conv2d(x, w, padding=1) + z)
            gm.backward((y * y).mean())
        return y, [t.grad.numpy() for t in (x, z, w)]

    y_ref, ref = grads("default", "default")
    for fmts in (("nhwc", "default"), ("default", "nhwc"), ("nhwc", "nhwc")):
        y, got = grads(*fmts)
        assert y.format == "nhwc"
        np.testing.assert_allclose(y.numpy(), y_ref.numpy(), rtol=1e-5, atol=1e-5)
        for g, r in zip(got, ref):
            np.testing.assert_allclose(g, r, rtol=1e-4, atol=1e-6)


def test_a_channels_last_tensor_saves_its_values(tmp_path):
    x = mge.Tensor(_rand(2, 3, 4, 5), format="nhwc")
    mge.save({"x": x}, tmp_path / "x.mge")
    back = mge.load(tmp_path / "x.mge")["x"]
    np.testing.assert_array_equal(back.numpy(), x.numpy())
    assert back.shape == (2, 3, 4, 5)
