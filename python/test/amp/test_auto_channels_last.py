"""Autocast's automatic channels-last layout on the CPU: the 16-bit cast of a 4-D activation for a
convolution with at least ``AUTO_CHANNELS_LAST_MIN_CHANNELS`` outputs is written channels-last,
and the ops after it keep that layout. A program that did not ask for NHWC still sees what
MegEngine gives it: the same values and shapes, ``Tensor.format == "default"``, row-major
parameters and gradients; a traced function is unaffected."""

import numpy as np
import pytest

import megengine as mge
import megengine.functional as F
import megengine.module as M
from megengine import amp
from megengine.amp import autocast
from megengine.autodiff import GradManager
from megengine.core.tensor import amp as core_amp
from megengine.jit import trace
from megengine.optimizer import SGD

WIDE = core_amp.AUTO_CHANNELS_LAST_MIN_CHANNELS


def _rand(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype("float32")


class _Net(M.Module):
    def __init__(self, width=WIDE):
        super().__init__()
        self.conv1 = M.Conv2d(3, width, 3, padding=1)
        self.bn = M.BatchNorm2d(width)
        self.conv2 = M.Conv2d(width, width, 3, stride=2, padding=1, bias=False)
        self.fc = M.Linear(width, 10)

    def forward(self, x):
        h = F.max_pool2d(F.relu(self.bn(self.conv1(x))), 2)
        h = F.relu(self.conv2(h))
        return self.fc(F.mean(h, axis=(2, 3)))


@pytest.fixture
def no_auto(monkeypatch):
    """Runs the body with the automatic layout off: the NCHW path to compare with."""

    def off():
        monkeypatch.setattr(core_amp, "AUTO_CHANNELS_LAST_MIN_CHANNELS", 1 << 30)

    return off


@pytest.mark.parametrize("low", ["bfloat16", "float16"])
def test_wide_convolutions_run_channels_last_with_the_default_format(low):
    x = mge.Tensor(_rand(2, 3, 8, 8))
    w = mge.Tensor(_rand(WIDE, 3, 3, 3, seed=1))
    with autocast(low_prec_dtype=low):
        y = F.conv2d(x, w, padding=1)
        z = F.relu(y)
    for t in (y, z):
        assert t._channels_last and t._auto_layout
        assert (t.format, t.shape, t._dtype_name) == ("default", (2, WIDE, 8, 8), low)
    # the values are the convolution's (float32 reference, 16-bit inputs and output)
    ref = F.conv2d(x.astype(low).astype("float32"), w.astype(low).astype("float32"), padding=1)
    np.testing.assert_allclose(y.numpy().astype("float32"), ref.numpy(), rtol=2e-2, atol=5e-2)
    assert x.format == "default" and not x._channels_last  # the input itself is untouched


def test_narrow_convolutions_float32_and_3d_inputs_stay_row_major():
    x = mge.Tensor(_rand(2, 3, 8, 8))
    with autocast(low_prec_dtype="bfloat16"):
        narrow = F.conv2d(x, mge.Tensor(_rand(WIDE - 1, 3, 3, 3)), padding=1)
        one_d = F.conv1d(mge.Tensor(_rand(2, 3, 8)), mge.Tensor(_rand(WIDE, 3, 3)))
    wide_f32 = F.conv2d(x, mge.Tensor(_rand(WIDE, 3, 3, 3)), padding=1)  # autocast off
    with autocast(low_prec_dtype="float32"):  # no 16-bit cast: nothing to gain
        same_dtype = F.conv2d(x, mge.Tensor(_rand(WIDE, 3, 3, 3)), padding=1)
    for t in (narrow, one_d, wide_f32, same_dtype):
        assert not t._channels_last and t.format == "default"


def test_grouped_weights_count_all_output_channels():
    x = mge.Tensor(_rand(1, 4, 6, 6))
    w = mge.Tensor(_rand(2, WIDE // 2, 2, 3, 3))  # 2 groups of WIDE/2: WIDE outputs
    with autocast(low_prec_dtype="bfloat16"):
        y = F.conv2d(x, w, padding=1, groups=2)
    assert y._channels_last and y.format == "default"
    ref = F.conv2d(x, w, padding=1, groups=2)
    np.testing.assert_allclose(y.numpy().astype("float32"), ref.numpy(), rtol=3e-2, atol=1e-1)


def test_training_matches_the_row_major_path_and_keeps_parameters_row_major(no_auto):
    x = mge.Tensor(_rand(4, 3, 8, 8, seed=2))
    label = mge.Tensor(np.array([1, 0, 3, 2], "int32"))
    init = [p.numpy() for p in _Net().parameters()]

    def train(steps):
        net = _Net()
        for p, v in zip(net.parameters(), init):
            p._reset(mge.Tensor(v))
        gm = GradManager().attach(net.parameters())
        opt = SGD(net.parameters(), lr=0.05, momentum=0.9)
        losses = []
        for _ in range(steps):
            with autocast(low_prec_dtype="bfloat16"), gm:
                loss = F.nn.cross_entropy(net(x), label)
                gm.backward(loss)
            grads = [p.grad for p in net.parameters()]
            assert all(not g._channels_last and g.format == "default" for g in grads)
            opt.step().clear_grad()
            losses.append(loss.numpy())
        return net, losses

    auto_net, auto_losses = train(3)
    assert all(not p._channels_last and p.format == "default" for p in auto_net.parameters())
    with autocast(low_prec_dtype="bfloat16"):
        assert auto_net.conv1(x)._channels_last  # the automatic layout was in use
    no_auto()
    with autocast(low_prec_dtype="bfloat16"):
        assert not auto_net.conv1(x)._channels_last
    ref_net, ref_losses = train(3)
    np.testing.assert_allclose(auto_losses, ref_losses, rtol=2e-2)
    for p, q in zip(auto_net.parameters(), ref_net.parameters()):
        np.testing.assert_allclose(p.numpy(), q.numpy(), rtol=5e-2, atol=2e-2)


def test_the_gradient_of_a_row_major_input_is_row_major():
    x = mge.Tensor(_rand(2, 3, 8, 8))
    w = mge.Parameter(_rand(WIDE, 3, 3, 3, seed=1))
    gm = GradManager().attach([x, w])
    with autocast(low_prec_dtype="bfloat16"), gm:
        y = F.conv2d(x, w, padding=1)
        gm.backward(y.astype("float32").sum())
    assert not x.grad._channels_last and not w.grad._channels_last
    # d sum(conv(x, w)) / dw: each tap sums the input window over batch and pixels
    xp = np.pad(x.astype("bfloat16").numpy().astype("float32"), ((0, 0), (0, 0), (1, 1), (1, 1)))
    want = np.stack(
        [xp[:, :, i : i + 8, j : j + 8].sum(axis=(0, 2, 3)) for i in range(3) for j in range(3)],
        axis=-1,
    ).reshape(3, 3, 3)
    np.testing.assert_allclose(w.grad.numpy()[0], want, rtol=2e-2, atol=1e-1)


def test_asking_for_nhwc_makes_the_layout_the_programs():
    x = mge.Tensor(_rand(2, 3, 8, 8))
    w = mge.Tensor(_rand(WIDE, 3, 3, 3))
    with autocast(low_prec_dtype="bfloat16"):
        a, b, c = (F.conv2d(x, w, padding=1) for _ in range(3))
    assert amp.convert_tensor_format(a) is a and a.format == "nhwc"
    b.format = "nhwc"
    assert b.format == "nhwc"
    # an op on a program-chosen and a runtime-chosen channels-last operand gives the program's
    assert (a + c).format == "nhwc" and (c + c).format == "default"
    assert c.format == "default"


def test_traced_functions_are_unaffected():
    w = mge.Tensor(_rand(WIDE, 3, 3, 3))

    def conv(x):
        with autocast(low_prec_dtype="bfloat16"):
            return F.relu(F.conv2d(x, w, padding=1))

    traced = trace(conv)
    for seed in range(3):  # records, then replays
        x = mge.Tensor(_rand(2, 3, 8, 8, seed=seed))
        got, want = traced(x), conv(x)
        assert want._channels_last and not got._channels_last
        assert got.format == want.format == "default"
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-2, atol=1e-2)
