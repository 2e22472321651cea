"""Eager mode's channel-blocked activations (imperative/src/blocked_dispatch.cpp): a model run
with them gives the values, gradients and parameter updates it gives without them (the plain
kernels), eager and traced, and a blocked result reads as its plain value everywhere (numpy,
indexing, reshape, in-place operators, setitem, concat/split, a checkpoint). On a handle that
prefers no block (naive, CUDA) both runs are plain and the comparisons still hold."""

import contextlib
import io

import numpy as np
import pytest

import megengine as mge
import megengine.functional as F
import megengine.module as M
import megengine.optimizer as optim
from megengine.autodiff import GradManager
from megengine.core import _imperative_rt as rt
from megengine.jit import trace


@contextlib.contextmanager
def blocked(on):
    was = rt.eager_blocked()
    rt.set_eager_blocked(on)
    try:
        yield
    finally:
        rt.set_eager_blocked(was)


class Block(M.Module):
    def __init__(self, c):
        super().__init__()
        self.conv1 = M.Conv2d(c, c, 3, 1, 1, bias=False)
        self.bn1 = M.BatchNorm2d(c)
        self.conv2 = M.Conv2d(c, c, 3, 1, 1, groups=c, bias=False)  # depthwise
        self.bn2 = M.BatchNorm2d(c)

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        return F.relu(self.bn2(self.conv2(y)) + x)


class SmallCNN(M.Module):
    """conv-bn-relu-pool, a residual block, a 1x1 conv with bias, global pool, linear."""

    def __init__(self, c=13):
        super().__init__()
        self.stem = M.Conv2d(3, c, 3, 1, 1, bias=False)
        self.bn = M.BatchNorm2d(c)
        self.block = Block(c)
        self.proj = M.Conv2d(c, 17, 1)
        self.fc = M.Linear(17, 5)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.bn(self.stem(x))), 2)
        x = self.proj(self.block(x))
        x = F.avg_pool2d(x, x.shape[2:])
        return self.fc(F.flatten(x, 1))


def make_model(seed=0):
    np.random.seed(seed)
    mge.random.seed(seed)
    model = SmallCNN()
    rng = np.random.default_rng(seed)
    for p in model.parameters():  # fixed values, the same for both runs
        p._reset(mge.tensor(rng.standard_normal(p.shape).astype("float32") * 0.3))
    return model


def data(seed=1):
    rng = np.random.default_rng(seed)
    return (
        rng.standard_normal((4, 3, 12, 12)).astype("float32"),
        rng.integers(0, 5, (4,)).astype("int32"),
    )


def train(on, steps=3, traced=False):
    with blocked(on):
        model = make_model()
        gm = GradManager().attach(model.parameters())
        opt = optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
        x, y = data()

        def step(x, y):
            with gm:
                logits = model(x)
                loss = F.nn.cross_entropy(logits, y)
                gm.backward(loss)
            opt.step().clear_grad()
            return logits, loss

        if traced:
            step = trace(step, symbolic=True)
        losses, first_logits = [], None
        for _ in range(steps):
            logits, loss = step(mge.tensor(x), mge.tensor(y))
            if first_logits is None:
                first_logits = logits.numpy()
            losses.append(float(loss.numpy()))
        params = [p.numpy() for p in model.parameters()]
        stats = [b.numpy() for b in model.buffers()]
        return first_logits, losses, params, stats


@pytest.mark.parametrize("traced", [False, True])
def test_training_steps_match_the_plain_run(traced):
    on = train(True, traced=traced)
    off = train(False, traced=traced)
    np.testing.assert_allclose(on[0], off[0], rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(on[1], off[1], rtol=1e-4, atol=1e-5)
    for a, b in zip(on[2] + on[3], off[2] + off[3]):
        np.testing.assert_allclose(a, b, rtol=1e-3, atol=1e-4)


def test_traced_steps_match_eager_steps():
    eager = train(True)
    traced = train(True, traced=True)
    np.testing.assert_allclose(eager[1], traced[1], rtol=1e-4, atol=1e-5)
    for a, b in zip(eager[2], traced[2]):
        np.testing.assert_allclose(a, b, rtol=1e-3, atol=1e-4)


def close(a, b, rtol=1e-4):
    """Equal up to float32 sums taken in another order: their error scales with the largest
    magnitude summed (a blocked kernel sums channels and pixels in its own order)."""
    np.testing.assert_allclose(a, b, rtol=rtol, atol=rtol * max(np.abs(b).max(), 1e-3) / 3)


def gradients(on):
    with blocked(on):
        model = make_model()
        gm = GradManager().attach(model.parameters())
        x = mge.tensor(data()[0])
        gm.attach([x])
        with gm:
            h = model.stem(x)  # blocked intermediates the backward reads
            z = model.block(F.relu(model.bn(h)))
            loss = (z * z).sum() + (h * 0.5).mean()
            gm.backward(loss)
        return [x.grad.numpy()] + [p.grad.numpy() for p in model.parameters() if p.grad is not None]


def test_grad_manager_gradients_match_the_plain_run():
    on, off = gradients(True), gradients(False)
    assert len(on) == len(off)
    for a, b in zip(on, off):
        close(a, b)


def conv_out(c=13):
    """A convolution's result (blocked with the feature on where the handle prefers a block)
    and its plain reference."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 5, 6, 7)).astype("float32")
    w = rng.standard_normal((c, 5, 3, 3)).astype("float32")
    with blocked(False):
        ref = F.conv2d(mge.tensor(x), mge.tensor(w), padding=1).numpy()
    with blocked(True):
        return F.conv2d(mge.tensor(x), mge.tensor(w), padding=1), ref


def test_blocked_result_reads_as_its_plain_value():
    y, ref = conv_out()
    np.testing.assert_allclose(y.numpy(), ref, rtol=1e-5, atol=1e-5)
    y, ref = conv_out()
    np.testing.assert_allclose(y[1, 3:9, 2].numpy(), ref[1, 3:9, 2], rtol=1e-5, atol=1e-5)
    y, ref = conv_out()
    np.testing.assert_allclose(y.reshape(2, -1).numpy(), ref.reshape(2, -1), rtol=1e-5, atol=1e-5)
    y, ref = conv_out()
    np.testing.assert_allclose(y.transpose(0, 2, 3, 1).numpy(), ref.transpose(0, 2, 3, 1), 1e-5)
    y, ref = conv_out()
    assert y.shape == ref.shape and y.dtype == np.float32
    np.testing.assert_allclose(float(y.sum().numpy()), ref.sum(), rtol=1e-4)


def test_copies_of_a_blocked_result_see_in_place_writes():
    with blocked(True):
        y, ref = conv_out()
        alias = y
        kept = F.relu(y)  # a blocked op reading it before the writes
        y += 1
        np.testing.assert_allclose(y.numpy(), ref + 1, rtol=1e-5, atol=1e-5)
        assert alias is y
        y, ref = conv_out()
        y[0, 2] = 7.0
        expected = ref.copy()
        expected[0, 2] = 7.0
        np.testing.assert_allclose(y.numpy(), expected, rtol=1e-5, atol=1e-5)
        y, ref = conv_out()
        y *= F.relu(y)
        np.testing.assert_allclose(y.numpy(), ref * np.maximum(ref, 0), rtol=1e-5, atol=1e-5)
        y, ref = conv_out()
        z, _ = conv_out()
        y._inplace_update(z * 2)
        np.testing.assert_allclose(y.numpy(), ref * 2, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(kept.numpy(), np.maximum(conv_out()[1], 0), 1e-5, 1e-5)


def test_concat_and_split_of_blocked_results():
    with blocked(True):
        a, ra = conv_out(13)
        b, rb = conv_out(17)
        np.testing.assert_allclose(
            F.concat([a, b], axis=1).numpy(), np.concatenate([ra, rb], 1), 1e-5, 1e-5
        )
        a, ra = conv_out(16)
        parts = F.split(a, [5, 11], axis=1)
        for p, r in zip(parts, np.split(ra, [5, 11], axis=1)):
            np.testing.assert_allclose(p.numpy(), r, rtol=1e-5, atol=1e-5)


def test_checkpoint_of_blocked_tensors():
    with blocked(True):
        y, ref = conv_out()
        buf = io.BytesIO()
        mge.save({"y": y, "relu": F.relu(y)}, buf)
        buf.seek(0)
        back = mge.load(buf)
    np.testing.assert_allclose(back["y"].numpy(), ref, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(back["relu"].numpy(), np.maximum(ref, 0), rtol=1e-5, atol=1e-5)


def test_lenet_channels_and_scalars():
    """Fewer channels than a block (6), a scalar operand, a 1-D and a 3-D convolution."""
    rng = np.random.default_rng(5)
    x2 = rng.standard_normal((2, 1, 10, 10)).astype("float32")
    x1 = rng.standard_normal((2, 3, 9)).astype("float32")
    x3 = rng.standard_normal((1, 2, 4, 5, 6)).astype("float32")
    w6 = rng.standard_normal((6, 1, 5, 5)).astype("float32")
    w1 = rng.standard_normal((17, 3, 3)).astype("float32")
    w3 = rng.standard_normal((9, 2, 3, 3, 3)).astype("float32")

    def run():
        a = F.relu(F.conv2d(mge.tensor(x2), mge.tensor(w6))) * 0.5
        b = F.relu(F.conv1d(mge.tensor(x1), mge.tensor(w1), padding=1)) - 0.25
        c = F.conv3d(mge.tensor(x3), mge.tensor(w3), padding=1)
        c = F.maximum(c, -c * 2)
        return [t.numpy() for t in (a, b, c)]

    with blocked(True):
        on = run()
    with blocked(False):
        off = run()
    for p, q in zip(on, off):
        np.testing.assert_allclose(p, q, rtol=1e-5, atol=1e-5)


class ScalarCNN(M.Module):
    """Channels that fill their blocks (16) or not (13): scalar operands (``* 0.5``, ``+ 1``,
    ``clip``, ``leaky_relu``), max pooling 2x2 (tiling windows) and 3x3/2 with padding, average
    pooling with and without the padding counted, a bias gradient's reductions."""

    def __init__(self, c):
        super().__init__()
        self.conv1 = M.Conv2d(3, c, 3, 1, 1)
        self.conv2 = M.Conv2d(c, c, 3, 1, 1)
        self.fc = M.Linear(c, 5)

    def forward(self, x):
        x = F.clip(self.conv1(x) * 0.5 + 1, -2.0, 3.0)
        x = F.max_pool2d(x, 2)
        x = F.leaky_relu(self.conv2(x) - 0.25, 0.1)
        x = F.max_pool2d(x, 3, 2, 1)
        x = F.avg_pool2d(x, 3, 1, 1, mode="average")
        x = F.avg_pool2d(x**2, 2, 1, 1)
        return self.fc(F.flatten(F.avg_pool2d(x, x.shape[2:]), 1))


def train_scalar_cnn(on, c, steps=3):
    with blocked(on):
        np.random.seed(0)
        model = ScalarCNN(c)
        rng = np.random.default_rng(2)
        for p in model.parameters():
            p._reset(mge.tensor(rng.standard_normal(p.shape).astype("float32") * 0.2))
        gm = GradManager().attach(model.parameters())
        opt = optim.SGD(model.parameters(), lr=0.02, momentum=0.9)
        x, y = data(4)
        x = np.concatenate([x, x[:, :, ::-1]], axis=2)  # 24 rows: odd sizes after the poolings
        grads = []
        for _ in range(steps):
            with gm:
                loss = F.nn.cross_entropy(model(mge.tensor(x)), mge.tensor(y))
                gm.backward(loss)
            grads.append([p.grad.numpy() for p in model.parameters()])
            opt.step().clear_grad()
        return grads, [p.numpy() for p in model.parameters()]


@pytest.mark.parametrize("c", [13, 16])
def test_scalar_operands_and_pooling_gradients_match_the_plain_run(c):
    on_grads, on_params = train_scalar_cnn(True, c)
    off_grads, off_params = train_scalar_cnn(False, c)
    for step_on, step_off in zip(on_grads, off_grads):
        for a, b in zip(step_on, step_off):
            close(a, b)
    for a, b in zip(on_params, off_params):
        close(a, b)
