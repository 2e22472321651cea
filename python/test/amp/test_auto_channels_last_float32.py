"""The automatic channels-last layout in float32 (outside autocast) on the CPU: the input of a
depthwise convolution with at least ``AUTO_CHANNELS_LAST_MIN_CHANNELS`` channels is made
channels-last and the ops after it keep that layout; every other float32 convolution stays
row-major. A program sees what the row-major path gives: the same values (float32 rounding of
other kernels), ``Tensor.format == "default"``, row-major parameters, gradients and checkpoints."""

import io
import os
import re
import subprocess
import sys

import numpy as np
import pytest

import megengine as mge
import megengine.functional as F
import megengine.module as M
from megengine.autodiff import GradManager
from megengine.core.tensor import amp as core_amp
from megengine.jit import trace
from megengine.optimizer import SGD

WIDE = core_amp.AUTO_CHANNELS_LAST_MIN_CHANNELS


def _rand(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype("float32")


class _MobileBlock(M.Module):
    """A stem convolution, then MobileNet's unit (depthwise 3x3, pointwise 1x1, each with
    BatchNorm and relu), a max pool and a classifier: the ops a MobileNet step runs."""

    def __init__(self, width=WIDE):
        super().__init__()
        self.stem = M.Conv2d(3, width, 3, padding=1, bias=False)
        self.bn0 = M.BatchNorm2d(width)
        self.dw = M.Conv2d(width, width, 3, stride=2, padding=1, groups=width, bias=False)
        self.bn1 = M.BatchNorm2d(width)
        self.pw = M.Conv2d(width, 2 * width, 1)
        self.bn2 = M.BatchNorm2d(2 * width)
        self.fc = M.Linear(2 * width, 10)

    def forward(self, x):
        h = F.relu(self.bn0(self.stem(x)))
        h = F.relu(self.bn1(self.dw(h)))
        h = F.max_pool2d(F.relu(self.bn2(self.pw(h))), 2)
        return self.fc(F.mean(h, axis=(2, 3)))


class _ResBlock(M.Module):
    """A ResNet basic block with a strided 1x1 shortcut: no depthwise convolution."""

    def __init__(self, cin=WIDE, cout=2 * WIDE):
        super().__init__()
        self.c1 = M.Conv2d(cin, cout, 3, stride=2, padding=1, bias=False)
        self.b1 = M.BatchNorm2d(cout)
        self.c2 = M.Conv2d(cout, cout, 3, padding=1, bias=False)
        self.b2 = M.BatchNorm2d(cout)
        self.short = M.Conv2d(cin, cout, 1, stride=2, bias=False)
        self.bs = M.BatchNorm2d(cout)

    def forward(self, x):
        h = F.relu(self.b1(self.c1(x)))
        return F.relu(self.b2(self.c2(h)) + self.bs(self.short(x)))


@pytest.fixture
def auto_off(monkeypatch):
    """Switches the float32 automatic layout off: the row-major path to compare with."""

    def off():
        monkeypatch.setattr(core_amp, "AUTO_CHANNELS_LAST_FLOAT32", False)

    return off


def _copy(net, init):
    for p, v in zip(net.parameters(), init):
        p._reset(mge.Tensor(v))
    return net


def test_wide_depthwise_inputs_go_channels_last_with_the_default_format():
    x = mge.Tensor(_rand(2, WIDE, 9, 9))
    w = mge.Tensor(_rand(WIDE, 1, 1, 3, 3, seed=1))  # MegEngine's grouped weight
    y = F.conv2d(x, w, padding=1, groups=WIDE)
    z = F.relu(y) * 2
    for t in (y, z):
        assert t._channels_last and t._auto_layout
        assert (t.format, t.shape, t._dtype_name) == ("default", (2, WIDE, 9, 9), "float32")
    assert not x._channels_last and x.format == "default"  # the input itself is untouched
    # the values: each channel's 3x3 cross-correlation, in numpy
    xp = np.pad(x.numpy(), ((0, 0), (0, 0), (1, 1), (1, 1)))
    taps = w.numpy().reshape(WIDE, 3, 3)
    want = sum(
        xp[:, :, i : i + 9, j : j + 9] * taps[None, :, i, j, None, None]
        for i in range(3)
        for j in range(3)
    )
    np.testing.assert_allclose(y.numpy(), want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(z.numpy(), 2 * np.maximum(want, 0), rtol=1e-5, atol=1e-5)
    # indexing and a reshape read the values in NCHW order
    np.testing.assert_allclose(y[1, 3:5, :, 2].numpy(), want[1, 3:5, :, 2], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(F.flatten(y, 1).numpy(), want.reshape(2, -1), rtol=1e-5, atol=1e-5)


def test_other_float32_convolutions_stay_row_major():
    x = mge.Tensor(_rand(2, WIDE, 8, 8))
    dense = F.conv2d(x, mge.Tensor(_rand(WIDE, WIDE, 3, 3)), padding=1)
    pointwise = F.conv2d(x, mge.Tensor(_rand(2 * WIDE, WIDE, 1, 1)))
    grouped = F.conv2d(x, mge.Tensor(_rand(WIDE, 2, 3, 3)), padding=1, groups=WIDE // 2)
    narrow = mge.Tensor(_rand(2, WIDE - 1, 8, 8))
    narrow_dw = F.conv2d(narrow, mge.Tensor(_rand(WIDE - 1, 1, 3, 3)), padding=1, groups=WIDE - 1)
    one_d = F.conv1d(mge.Tensor(_rand(2, WIDE, 8)), mge.Tensor(_rand(WIDE, 1, 3)), groups=WIDE)
    for t in (dense, pointwise, grouped, narrow_dw, one_d):
        assert not t._channels_last and t.format == "default"
    assert not _ResBlock()(x)._channels_last  # a ResNet block: unchanged


def test_switched_off_the_depthwise_input_stays_row_major(auto_off):
    auto_off()
    x = mge.Tensor(_rand(2, WIDE, 8, 8))
    y = F.conv2d(x, mge.Tensor(_rand(WIDE, 1, 3, 3)), padding=1, groups=WIDE)
    assert not y._channels_last


def _train(net, x, label, steps):
    gm = GradManager().attach(net.parameters())
    opt = SGD(net.parameters(), lr=0.05, momentum=0.9)
    losses, grads = [], []
    for _ in range(steps):
        with gm:
            loss = F.nn.cross_entropy(net(x), label)
            gm.backward(loss)
        grads.append([p.grad.numpy() for p in net.parameters()])
        for p in net.parameters():
            assert not p.grad._channels_last and p.grad.format == "default"
        opt.step().clear_grad()
        losses.append(float(loss.numpy()))
    return losses, grads


def test_mobile_block_training_matches_the_row_major_path(auto_off):
    x = mge.Tensor(_rand(4, 3, 12, 12, seed=2))
    label = mge.Tensor(np.array([1, 0, 3, 2], "int32"))
    init = [p.numpy() for p in _MobileBlock().parameters()]
    auto_net = _copy(_MobileBlock(), init)
    assert auto_net.dw(auto_net.bn0(auto_net.stem(x)))._channels_last  # the layout is in use
    auto_losses, auto_grads = _train(auto_net, x, label, 3)
    auto_off()
    ref_net = _copy(_MobileBlock(), init)
    assert not ref_net.dw(ref_net.bn0(ref_net.stem(x)))._channels_last
    ref_losses, ref_grads = _train(ref_net, x, label, 3)
    np.testing.assert_allclose(auto_losses, ref_losses, rtol=1e-4)
    for step_a, step_r in zip(auto_grads, ref_grads):
        for a, r in zip(step_a, step_r):
            np.testing.assert_allclose(a, r, rtol=1e-3, atol=1e-4)
    for p, q in zip(auto_net.parameters(), ref_net.parameters()):
        assert not p._channels_last and p.format == "default"
        np.testing.assert_allclose(p.numpy(), q.numpy(), rtol=1e-3, atol=1e-4)
    # BatchNorm's running statistics and the checkpoint: the row-major path's, in its layout
    for (ka, va), (kr, vr) in zip(
        auto_net.state_dict().items(), ref_net.state_dict().items(), strict=True
    ):
        assert ka == kr and va.shape == vr.shape and va.flags["C_CONTIGUOUS"]
        np.testing.assert_allclose(va, vr, rtol=1e-3, atol=1e-4)
    buf = io.BytesIO()
    mge.save(auto_net.state_dict(), buf)
    buf.seek(0)
    loaded = mge.load(buf)
    assert all(np.array_equal(loaded[k], v) for k, v in auto_net.state_dict().items())


def test_the_gradient_of_an_activation_made_channels_last_is_row_major(auto_off):
    # A row-major activation that feeds the depthwise convolution gets its gradient row-major,
    # so the ops before it (this multiply, a BatchNorm's backward) see one layout.
    x = mge.Tensor(_rand(2, WIDE, 6, 6))
    s = mge.Tensor(_rand(2, WIDE, 6, 6, seed=3))
    w = mge.Parameter(_rand(WIDE, 1, 3, 3, seed=1))
    gm = GradManager().attach([x, w])
    with gm:
        h = x * s
        y = F.conv2d(h, w, padding=1, groups=WIDE)
        assert y._channels_last and not h._channels_last
        gm.backward((y * y).sum())
    assert not x.grad._channels_last and not w.grad._channels_last
    # the same gradients through the row-major path
    auto_off()
    x2 = mge.Tensor(x.numpy())
    w2 = mge.Parameter(w.numpy())
    gm2 = GradManager().attach([x2, w2])
    with gm2:
        y2 = F.conv2d(x2 * s, w2, padding=1, groups=WIDE)
        assert not y2._channels_last
        gm2.backward((y2 * y2).sum())
    np.testing.assert_allclose(x.grad.numpy(), x2.grad.numpy(), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(w.grad.numpy(), w2.grad.numpy(), rtol=1e-4, atol=1e-3)


def test_traced_functions_are_unaffected():
    w = mge.Tensor(_rand(WIDE, 1, 3, 3))

    def conv(x):
        return F.relu(F.conv2d(x, w, padding=1, groups=WIDE))

    traced = trace(conv)
    for seed in range(3):  # records, then replays
        x = mge.Tensor(_rand(2, WIDE, 8, 8, seed=seed))
        got, want = traced(x), conv(x)
        assert want._channels_last and not got._channels_last
        assert got.format == want.format == "default"
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-5)


def test_ops_before_the_automatic_layout_see_one_layout_in_the_backward():
    # NEOMEG_DEBUG=1 prints each op's operands with their strides. The BatchNorm before the
    # depthwise convolution ran row-major, so its backward gets src and diff (and gives grad)
    # row-major: the gradient that the channels-last convolution sent back was made row-major.
    code = f"""
import numpy as np
import megengine as mge
import megengine.functional as F
import megengine.module as M
from megengine.autodiff import GradManager

rng = np.random.default_rng(1)
x = mge.Tensor(rng.standard_normal((2, {WIDE}, 8, 8)).astype("float32"))
bn = M.BatchNorm2d({WIDE})
dw = M.Conv2d({WIDE}, {WIDE}, 3, padding=1, groups={WIDE}, bias=False)
gm = GradManager().attach(list(bn.parameters()) + list(dw.parameters()))
with gm:
    y = dw(bn(x))
    assert y._channels_last
    gm.backward((y * y).sum())
print("done")
"""
    proc = subprocess.run(
        [sys.executable, "-c", code],
        check=False,
        env=dict(os.environ, NEOMEG_DEBUG="1"),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    assert "done" in proc.stdout
    lines = [line for line in proc.stderr.splitlines() if "BatchNormBackward" in line]
    assert lines, proc.stderr
    for line in lines:
        # every (2, WIDE, 8, 8) operand, input or output: row-major strides
        full = re.findall(rf"\{{2\((\d+)\),{WIDE}\((\d+)\),8\((\d+)\),8\((\d+)\)\}}", line)
        assert len(full) == 3, line  # src, diff, grad
        assert all(s == (str(WIDE * 64), "64", "8", "1") for s in full), line
