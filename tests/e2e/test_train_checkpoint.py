"""A small convolutional network with BatchNorm, written with megengine.functional, trained
with GradManager, SGD with momentum and MultiStepLR on a learnable synthetic problem; then
checkpointed with megengine.save and reloaded into fresh tensors with identical outputs."""

import numpy as np
import pytest

import megengine as mge
import megengine.functional as F
import megengine.optimizer as optim
import megengine.random as rand
from megengine.autodiff import GradManager


def make_data(n, rng):
    """8x8 images: class 0 has a bright 3x3 blob in the left half, class 1 in the right."""
    x = rng.normal(scale=0.5, size=(n, 1, 8, 8)).astype(np.float32)
    y = rng.integers(0, 2, size=n).astype(np.int32)
    for i in range(n):
        r = rng.integers(0, 6)
        c = rng.integers(0, 2) + (4 if y[i] else 0)
        x[i, 0, r : r + 3, c : c + 2] += 2.0
    return x, y


def init_params(rng):
    def p(*shape, scale):
        return mge.Parameter(rng.normal(scale=scale, size=shape).astype(np.float32))

    params = {
        "conv_w": p(4, 1, 3, 3, scale=0.5),
        "conv_b": mge.Parameter(np.zeros((1, 4, 1, 1), np.float32)),
        "bn_w": mge.Parameter(np.ones((1, 4, 1, 1), np.float32)),
        "bn_b": mge.Parameter(np.zeros((1, 4, 1, 1), np.float32)),
        "fc_w": p(2, 16, scale=0.3),
        "fc_b": mge.Parameter(np.zeros(2, np.float32)),
    }
    buffers = {
        "bn_mean": mge.Tensor(np.zeros((1, 4, 1, 1), np.float32)),
        "bn_var": mge.Tensor(np.ones((1, 4, 1, 1), np.float32)),
    }
    return params, buffers


def forward(params, buffers, x, training):
    h = F.conv2d(x, params["conv_w"], params["conv_b"], padding=1)
    h = F.batch_norm(h, buffers["bn_mean"], buffers["bn_var"], params["bn_w"], params["bn_b"],
                     training=training)  # fmt: skip
    h = F.relu(h)
    h = F.avg_pool2d(h, 4)  # (N, 4, 2, 2)
    return F.linear(h.reshape(h.shape[0], -1), params["fc_w"], params["fc_b"])


def test_train_checkpoint_and_reload(tmp_path):
    rng = np.random.default_rng(0)
    rand.seed(0)
    xtr, ytr = make_data(512, rng)
    xte, yte = make_data(256, rng)
    params, buffers = init_params(rng)
    gm = GradManager().attach(list(params.values()))
    opt = optim.SGD(list(params.values()), lr=0.1, momentum=0.9, weight_decay=1e-4)
    sched = optim.MultiStepLR(opt, milestones=[3, 5], gamma=0.1)
    for _epoch in range(6):
        order = rand.permutation(len(xtr)).numpy()
        for i in range(0, len(xtr), 32):
            idx = order[i : i + 32]
            with gm:
                logits = forward(params, buffers, mge.Tensor(xtr[idx]), training=True)
                loss = F.nn.cross_entropy(logits, mge.Tensor(ytr[idx]))
                gm.backward(loss)
            # every layer learns: the convolution and BatchNorm get gradients, not only fc
            no_grad = [name for name, t in params.items() if t.grad is None]
            assert no_grad == [], f"no gradient for {no_grad}"
            opt.step().clear_grad()
        sched.step()
    assert opt.param_groups[0]["lr"] == pytest.approx(0.001)
    out = forward(params, buffers, mge.Tensor(xte), training=False)
    acc = (out.numpy().argmax(axis=1) == yte).mean()
    assert acc >= 0.9, acc

    path = tmp_path / "ckpt.mge"
    mge.save({"params": params, "buffers": buffers, "opt": opt.state_dict(),
              "sched": sched.state_dict()}, path)  # fmt: skip
    ckpt = mge.load(path, map_location="cpu0")
    fresh_params, fresh_buffers = init_params(np.random.default_rng(1))
    for name, t in fresh_params.items():
        t._reset(ckpt["params"][name])
    for name, t in fresh_buffers.items():
        t._reset(ckpt["buffers"][name])
    out2 = forward(fresh_params, fresh_buffers, mge.Tensor(xte), training=False)
    np.testing.assert_array_equal(out2.numpy(), out.numpy())

    # the optimizer and the schedule resume where they stopped: one more step agrees
    opt2 = optim.SGD(list(fresh_params.values()), lr=0.5, momentum=0.9, weight_decay=1e-4)
    sched2 = optim.MultiStepLR(opt2, milestones=[1], gamma=0.5)
    opt2.load_state_dict(ckpt["opt"])
    sched2.load_state_dict(ckpt["sched"])
    assert opt2.param_groups[0]["lr"] == pytest.approx(0.001)
    for ps, bs, o in ((params, buffers, opt), (fresh_params, fresh_buffers, opt2)):
        g = GradManager().attach(list(ps.values()))
        with g:
            logits = forward(ps, bs, mge.Tensor(xtr[:32]), training=True)
            g.backward(F.nn.cross_entropy(logits, mge.Tensor(ytr[:32])))
        o.step().clear_grad()
    for name in params:
        np.testing.assert_array_equal(fresh_params[name].numpy(), params[name].numpy())
